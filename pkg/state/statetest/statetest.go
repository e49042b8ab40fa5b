// Package statetest is the contract every state.Store implementation passes.
package statetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/state"
)

// Run exercises s. Keys are created under a fresh prefix so runs against a
// shared server do not collide.
func Run(t *testing.T, s state.Store) {
	ctx := context.Background()
	p := "contract:" + rand.Text()[:10] + ":"
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"get set delete", func(t *testing.T) {
			if _, err := s.Get(ctx, p+"missing"); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("Get missing: %v", err)
			}
			must(t, s.Set(ctx, p+"k", []byte("v1"), 0))
			must(t, s.Set(ctx, p+"k", []byte("v2"), 0))
			if v, err := s.Get(ctx, p+"k"); err != nil || string(v) != "v2" {
				t.Fatalf("Get = %q, %v", v, err)
			}
			must(t, s.Delete(ctx, p+"k", p+"never-set"))
			if _, err := s.Get(ctx, p+"k"); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("after Delete: %v", err)
			}
		}},
		{"ttl expires", func(t *testing.T) {
			must(t, s.Set(ctx, p+"ttl", []byte("x"), 1200*time.Millisecond))
			if _, err := s.Get(ctx, p+"ttl"); err != nil {
				t.Fatalf("before expiry: %v", err)
			}
			time.Sleep(1500 * time.Millisecond)
			if _, err := s.Get(ctx, p+"ttl"); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("after expiry: %v", err)
			}
			ok, err := s.SetNX(ctx, p+"ttl", []byte("y"), 0)
			if err != nil || !ok {
				t.Fatalf("SetNX over an expired key = %v, %v", ok, err)
			}
		}},
		{"setnx once under concurrency", func(t *testing.T) {
			var wins atomic.Int32
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := s.SetNX(ctx, p+"nx", fmt.Appendf(nil, "%d", i), 0)
					if err != nil {
						t.Error(err)
					}
					if ok {
						wins.Add(1)
					}
				}()
			}
			wg.Wait()
			if wins.Load() != 1 {
				t.Fatalf("%d SetNX calls won", wins.Load())
			}
		}},
		{"swap only from what was seen", func(t *testing.T) {
			must(t, s.Set(ctx, p+"sw", []byte("a"), 0))
			if ok, err := s.Swap(ctx, p+"sw", []byte("b"), []byte("x"), 0); err != nil || ok {
				t.Fatalf("swap from a value not there = %v, %v", ok, err)
			}
			if ok, err := s.Swap(ctx, p+"sw", []byte("a"), []byte("c"), 1200*time.Millisecond); err != nil || !ok {
				t.Fatalf("swap a → c = %v, %v", ok, err)
			}
			if v, err := s.Get(ctx, p+"sw"); err != nil || string(v) != "c" {
				t.Fatalf("after the swap: %q, %v", v, err)
			}
			var wins atomic.Int32
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if ok, err := s.Swap(ctx, p+"sw", []byte("c"), fmt.Appendf(nil, "w%d", i), time.Hour); err != nil {
						t.Error(err)
					} else if ok {
						wins.Add(1)
					}
				}()
			}
			wg.Wait()
			if wins.Load() != 1 {
				t.Fatalf("%d swaps from c won", wins.Load())
			}
			cur, err := s.Get(ctx, p+"sw")
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := s.Swap(ctx, p+"sw", cur, nil, 0); err != nil || !ok {
				t.Fatalf("swap to nothing = %v, %v", ok, err)
			}
			if _, err := s.Get(ctx, p+"sw"); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("a swap to nil left the key: %v", err)
			}
			if ok, err := s.Swap(ctx, p+"sw", cur, []byte("z"), 0); err != nil || ok {
				t.Fatalf("swap of a missing key = %v, %v", ok, err)
			}
			// The new value's ttl applies.
			must(t, s.Set(ctx, p+"sw2", []byte("a"), 0))
			if ok, _ := s.Swap(ctx, p+"sw2", []byte("a"), []byte("b"), 300*time.Millisecond); !ok {
				t.Fatal("swap a → b")
			}
			time.Sleep(500 * time.Millisecond)
			if _, err := s.Get(ctx, p+"sw2"); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("the swapped value outlived its ttl: %v", err)
			}
		}},
		{"incr", func(t *testing.T) {
			for want := int64(1); want <= 3; want++ {
				if v, err := s.IncrBy(ctx, p+"c", 1, 0); err != nil || v != want {
					t.Fatalf("IncrBy = %d, %v; want %d", v, err, want)
				}
			}
			if v, err := s.IncrBy(ctx, p+"c", -5, 0); err != nil || v != -2 {
				t.Fatalf("IncrBy -5 = %d, %v", v, err)
			}
		}},
		{"reserve never exceeds limit", func(t *testing.T) {
			var granted atomic.Int64
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, ok, err := s.Reserve(ctx, p+"quota", fmt.Sprint("c", i), 3, 100, time.Hour, time.Hour, nil)
					if err != nil {
						t.Error(err)
					}
					if ok {
						granted.Add(3)
					}
				}()
			}
			wg.Wait()
			if granted.Load() != 99 {
				t.Fatalf("granted %d, want 99 (33 reservations of 3 within 100)", granted.Load())
			}
			v, ok, err := s.Reserve(ctx, p+"quota", "last", 1, 100, time.Hour, time.Hour, nil)
			if err != nil || !ok || v != 100 {
				t.Fatalf("last unit: %d %v %v", v, ok, err)
			}
			v, ok, err = s.Reserve(ctx, p+"quota", "over", 1, 100, time.Hour, time.Hour, nil)
			if err != nil || ok || v != 100 {
				t.Fatalf("over the limit: %d %v %v", v, ok, err)
			}
			// Giving back is a negative IncrBy.
			if v, err := s.IncrBy(ctx, p+"quota", -10, 0); err != nil || v != 90 {
				t.Fatalf("give back: %d %v", v, err)
			}
		}},
		{"a charge is taken and given back once", func(t *testing.T) {
			for range 3 { // a retried call charges once
				v, ok, err := s.Reserve(ctx, p+"q", "job1", 5, 10, time.Hour, time.Hour, nil)
				if err != nil || !ok || v != 5 {
					t.Fatalf("reserve job1 = %d %v %v, want 5 true", v, ok, err)
				}
			}
			if v, ok, err := s.Reserve(ctx, p+"q", "job2", 6, 10, time.Hour, time.Hour, nil); err != nil || ok || v != 5 {
				t.Fatalf("over the limit = %d %v %v, want 5 false", v, ok, err)
			}
			// A refused charge is not remembered: it may be taken once there is room.
			if v, ok, err := s.Reserve(ctx, p+"q", "job2", 5, 10, time.Hour, time.Hour, nil); err != nil || !ok || v != 10 {
				t.Fatalf("job2 = %d %v %v, want 10 true", v, ok, err)
			}
			refunds := []struct {
				charge, part string
				n, want      int64
			}{
				{"job1", "doc:1", 1, 1},
				{"job1", "doc:1", 1, 0}, // the same part again
				{"job1", "doc:2", 1, 1},
				{"job1", "all", 5, 3}, // only what is left of 5
				{"job1", "expired", 5, 0},
				{"unknown", "all", 5, 0},
				{"job2", "all", 0, 0},
			}
			for _, r := range refunds {
				got, err := s.Refund(ctx, p+"q", r.charge, r.part, r.n)
				if err != nil || got != r.want {
					t.Fatalf("refund %s/%s %d = %d %v, want %d", r.charge, r.part, r.n, got, err, r.want)
				}
			}
			if v, _ := s.IncrBy(ctx, p+"q", 0, 0); v != 5 {
				t.Fatalf("counter = %d, want 5 (job2 only)", v)
			}
			// A charge is forgotten after its ttl: the id may charge again.
			if _, ok, err := s.Reserve(ctx, p+"q2", "short", 1, 10, time.Hour, 300*time.Millisecond, nil); err != nil || !ok {
				t.Fatal(ok, err)
			}
			time.Sleep(400 * time.Millisecond)
			if v, _, _ := s.Reserve(ctx, p+"q2", "short", 1, 10, time.Hour, time.Hour, nil); v != 2 {
				t.Fatalf("after the charge expired = %d, want 2", v)
			}
			// A refund never brings back a counter that expired.
			if _, _, err := s.Reserve(ctx, p+"q3", "c", 2, 10, 300*time.Millisecond, time.Hour, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Millisecond)
			if got, err := s.Refund(ctx, p+"q3", "c", "all", 2); err != nil || got != 0 {
				t.Fatalf("refund to an expired counter = %d %v", got, err)
			}
			if _, err := s.Get(ctx, p+"q3"); !errors.Is(err, state.ErrNotFound) {
				t.Fatalf("expired counter came back: %v", err)
			}
		}},
		{"a charge's hold is added exactly when the charge holds", func(t *testing.T) {
			held := func(member string) bool {
				t.Helper()
				ms, err := s.IndexRange(ctx, p+"holds", state.MinScore, state.MaxScore, 0, -1, false)
				if err != nil {
					t.Fatal(err)
				}
				return slices.Contains(ms, member)
			}
			hold := func(m string) *state.Hold { return &state.Hold{Index: p + "holds", Member: m, Score: 42} }
			if _, ok, err := s.Reserve(ctx, p+"hq", "a", 3, 4, time.Hour, time.Hour, hold("a")); err != nil || !ok || !held("a") {
				t.Fatalf("a charge that holds: ok %v, err %v, held %v", ok, err, held("a"))
			}
			if _, ok, err := s.Reserve(ctx, p+"hq", "b", 3, 4, time.Hour, time.Hour, hold("b")); err != nil || ok || held("b") {
				t.Fatalf("a refused charge: ok %v, err %v, held %v", ok, err, held("b"))
			}
			// A retried call (its hold gone meanwhile) marks it again.
			if _, err := s.IndexRemove(ctx, p+"holds", "a"); err != nil {
				t.Fatal(err)
			}
			if v, ok, err := s.Reserve(ctx, p+"hq", "a", 3, 4, time.Hour, time.Hour, hold("a")); err != nil || !ok || v != 3 || !held("a") {
				t.Fatalf("a retried charge: %d %v %v, held %v", v, ok, err, held("a"))
			}
		}},
		{"index order and paging", func(t *testing.T) {
			for i, m := range []string{"a", "b", "c", "d", "e"} {
				must(t, s.IndexAdd(ctx, p+"idx", m, float64(i+1)))
			}
			got, err := s.IndexRange(ctx, p+"idx", state.MinScore, state.MaxScore, 0, -1, true)
			if err != nil || !slices.Equal(got, []string{"e", "d", "c", "b", "a"}) {
				t.Fatalf("desc = %v, %v", got, err)
			}
			got, err = s.IndexRange(ctx, p+"idx", state.MinScore, state.MaxScore, 1, 2, false)
			if err != nil || !slices.Equal(got, []string{"b", "c"}) {
				t.Fatalf("asc page = %v, %v", got, err)
			}
			got, err = s.IndexRange(ctx, p+"idx", 2, 4, 0, -1, false)
			if err != nil || !slices.Equal(got, []string{"b", "c", "d"}) {
				t.Fatalf("by score = %v, %v", got, err)
			}
			if n, err := s.IndexCount(ctx, p+"idx", 3, state.MaxScore); err != nil || n != 3 {
				t.Fatalf("count = %d, %v", n, err)
			}
			must(t, s.IndexAdd(ctx, p+"idx", "a", 10)) // re-score
			got, _ = s.IndexRange(ctx, p+"idx", state.MinScore, state.MaxScore, 0, 1, true)
			if !slices.Equal(got, []string{"a"}) {
				t.Fatalf("after re-score = %v", got)
			}
			if ok, err := s.IndexRemove(ctx, p+"idx", "a"); err != nil || !ok {
				t.Fatalf("remove = %v, %v", ok, err)
			}
			if ok, err := s.IndexRemove(ctx, p+"idx", "a"); err != nil || ok {
				t.Fatalf("second remove = %v, %v", ok, err)
			}
			if n, _ := s.IndexCount(ctx, p+"idx", state.MinScore, state.MaxScore); n != 4 {
				t.Fatalf("count after remove = %d", n)
			}
			if got, err := s.IndexRange(ctx, p+"empty", state.MinScore, state.MaxScore, 0, -1, false); err != nil || len(got) != 0 {
				t.Fatalf("empty index = %v, %v", got, err)
			}
		}},
		{"index add if below", func(t *testing.T) {
			// Two expired members (score below the floor) do not count.
			must(t, s.IndexAdd(ctx, p+"lim", "old1", 1))
			must(t, s.IndexAdd(ctx, p+"lim", "old2", 2))
			var added atomic.Int32
			var wg sync.WaitGroup
			for i := range 30 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := s.IndexAddIfBelow(ctx, p+"lim", fmt.Sprint("m", i), 100, 50, 10)
					if err != nil {
						t.Error(err)
					}
					if ok {
						added.Add(1)
					}
				}()
			}
			wg.Wait()
			if added.Load() != 10 {
				t.Fatalf("added %d, want 10", added.Load())
			}
			if n, _ := s.IndexCount(ctx, p+"lim", 50, state.MaxScore); n != 10 {
				t.Fatalf("live count = %d", n)
			}
		}},
		{"set add counts each member once", func(t *testing.T) {
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, _, err := s.SetAdd(ctx, p+"set", fmt.Sprint(i%10), time.Hour); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if n, err := s.SetCard(ctx, p+"set"); err != nil || n != 10 {
				t.Fatalf("card = %d, %v", n, err)
			}
			added, n, err := s.SetAdd(ctx, p+"set", "3", time.Hour)
			if err != nil || added || n != 10 {
				t.Fatalf("re-add = %v %d %v", added, n, err)
			}
			if n, err := s.SetCard(ctx, p+"nothing"); err != nil || n != 0 {
				t.Fatalf("absent card = %d, %v", n, err)
			}
		}},
		{"ready", func(t *testing.T) { must(t, s.Ready(ctx)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
