package usage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/state/boltstate"
)

func newMeter(t *testing.T) *Meter {
	t.Helper()
	st, err := boltstate.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(st)
}

// ask is a reservation of n within limit on "acct", under a new ID.
func ask(n, limit int64) Ask {
	return Ask{ID: ids.New(), Account: "acct", N: n, Limit: limit, Hold: time.Minute, Life: time.Hour}
}

func TestReserveAndRelease(t *testing.T) {
	ctx := context.Background()
	type step struct {
		reserve  int64 // > 0: reserve this many
		release  int64 // > 0: give back this many of the last reservation
		wantUsed int64
		wantErr  bool
	}
	tests := []struct {
		name  string
		limit int64
		steps []step
	}{
		{"up to the limit", 3, []step{{reserve: 2, wantUsed: 2}, {reserve: 1, wantUsed: 3}, {reserve: 1, wantUsed: 3, wantErr: true}}},
		{"all or none", 3, []step{{reserve: 2, wantUsed: 2}, {reserve: 2, wantUsed: 2, wantErr: true}, {reserve: 1, wantUsed: 3}}},
		{"give back in part", 10, []step{{reserve: 5, wantUsed: 5}, {release: 2, wantUsed: 3}, {release: 3, wantUsed: 0}}},
		{"give back frees room", 1, []step{{reserve: 1, wantUsed: 1}, {release: 1, wantUsed: 0}, {reserve: 1, wantUsed: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMeter(t)
			var last Reservation
			for i, s := range tc.steps {
				var err error
				if s.reserve > 0 {
					var r Reservation
					r, err = m.Reserve(ctx, ask(s.reserve, tc.limit))
					if err == nil {
						last = r
					}
				} else {
					err = m.Release(ctx, last, fmt.Sprint("part", i), s.release)
				}
				var le *LimitError
				if s.wantErr != errors.As(err, &le) || (!s.wantErr && err != nil) {
					t.Fatalf("step %d: err %v, want limit error %v", i, err, s.wantErr)
				}
				if used, err := m.Used(ctx, "acct"); err != nil || used != s.wantUsed {
					t.Fatalf("step %d: used %d (%v), want %d", i, used, err, s.wantUsed)
				}
			}
		})
	}
}

func TestLimitErrorSaysWhatIsUsed(t *testing.T) {
	m := newMeter(t)
	ctx := context.Background()
	if _, err := m.Reserve(ctx, ask(4, 5)); err != nil {
		t.Fatal(err)
	}
	_, err := m.Reserve(ctx, ask(3, 5))
	var le *LimitError
	if !errors.As(err, &le) || *le != (LimitError{Used: 4, Limit: 5, Need: 3}) {
		t.Fatalf("err %#v, want used 4 of 5, need 3", err)
	}
}

// A give-back after the month turned goes to the month that paid.
func TestReleaseGoesToTheMonthCharged(t *testing.T) {
	m := newMeter(t)
	ctx := context.Background()
	m.now = func() time.Time { return time.Date(2026, 10, 31, 23, 59, 0, 0, time.UTC) }
	r, err := m.Reserve(ctx, ask(2, 10))
	if err != nil {
		t.Fatal(err)
	}
	m.now = func() time.Time { return time.Date(2026, 11, 1, 0, 1, 0, 0, time.UTC) }
	if _, err := m.Reserve(ctx, ask(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := m.Release(ctx, r, "all", 2); err != nil {
		t.Fatal(err)
	}
	if used, _ := m.Used(ctx, "acct"); used != 1 {
		t.Fatalf("November used %d, want 1 (October's give-back must not land here)", used)
	}
	m.now = func() time.Time { return time.Date(2026, 10, 15, 0, 0, 0, 0, time.UTC) }
	if used, _ := m.Used(ctx, "acct"); used != 0 {
		t.Fatalf("October used %d after the give-back, want 0", used)
	}
}

func TestReleaseRefusesMoreThanReserved(t *testing.T) {
	m := newMeter(t)
	r, err := m.Reserve(context.Background(), ask(1, 10))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Release(context.Background(), r, "all", 2); err == nil {
		t.Fatal("giving back 2 of a reservation of 1 succeeded")
	}
}

// Many gateways reserving at once never take more than the limit.
func TestConcurrentReservesStopAtTheLimit(t *testing.T) {
	m := newMeter(t)
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Reserve(context.Background(), ask(1, 20)); err == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 20 {
		t.Fatalf("%d reservations granted, want 20", ok.Load())
	}
}
