package memlimits_test

import (
	"context"
	"crypto/rand"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/memlimits"
	"github.com/docrender/docrender/gateway/server"
	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/pkg/state/redisstate"
)

// limits is what the gateway counts with (gateway/server.Limits).
type limits = server.Limits

func redisURL() string {
	if u := os.Getenv("DOCRENDER_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// TestContract runs the same checks against memory and the state stores
// whose operations the gateway uses when it is not the only one.
func TestContract(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(t *testing.T) limits
	}{
		{"memory", func(t *testing.T) limits { return memlimits.New() }},
		{"bbolt", func(t *testing.T) limits {
			st, err := boltstate.Open(filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"redis", func(t *testing.T) limits {
			st, err := redisstate.Open(context.Background(), redisURL(), "limitstest:"+rand.Text()[:10]+":")
			if err != nil {
				t.Fatalf("Redis must be running (scripts/setup --test starts it): %v", err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		t.Run(b.name, func(t *testing.T) { contract(t, b.open(t)) })
	}
}

func contract(t *testing.T, l limits) {
	ctx := context.Background()
	t.Run("counter", func(t *testing.T) {
		for i, want := range []int64{1, 2, 5} {
			d := int64(1)
			if i == 2 {
				d = 3
			}
			if n, err := l.IncrBy(ctx, "rate:a", d, time.Minute); err != nil || n != want {
				t.Fatalf("IncrBy = %d, %v; want %d", n, err, want)
			}
		}
		if n, _ := l.IncrBy(ctx, "rate:b", 1, time.Minute); n != 1 {
			t.Fatalf("another key counts apart: %d", n)
		}
		if n, _ := l.IncrBy(ctx, "rate:short", 1, time.Second); n != 1 {
			t.Fatalf("short: %d", n)
		}
		time.Sleep(1100 * time.Millisecond)
		if n, _ := l.IncrBy(ctx, "rate:short", 1, time.Second); n != 1 {
			t.Fatalf("an expired window starts again at 1, got %d", n)
		}
	})
	t.Run("leases", func(t *testing.T) {
		const idx = "inflight:a"
		for i, m := range []string{"l1", "l2"} {
			ok, err := l.IndexAddIfBelow(ctx, idx, m, float64(100+i), 50, 2)
			if err != nil || !ok {
				t.Fatalf("lease %s: %v %v", m, ok, err)
			}
		}
		if ok, _ := l.IndexAddIfBelow(ctx, idx, "l3", 102, 50, 2); ok {
			t.Fatal("a third lease past the limit of 2")
		}
		// Leases scored below the floor (expired) do not count.
		if ok, _ := l.IndexAddIfBelow(ctx, idx, "l3", 102, 101, 2); !ok {
			t.Fatal("an expired lease still counted")
		}
		got, err := l.IndexRange(ctx, idx, math.Inf(-1), 101, 0, 10, false)
		if err != nil || !slices.Equal(got, []string{"l1", "l2"}) {
			t.Fatalf("range up to 101: %v %v", got, err)
		}
		if got, _ := l.IndexRange(ctx, idx, math.Inf(-1), math.Inf(1), 1, 1, true); !slices.Equal(got, []string{"l2"}) {
			t.Fatalf("descending, offset 1, count 1: %v", got)
		}
		if ok, _ := l.IndexRemove(ctx, idx, "l1"); !ok {
			t.Fatal("remove l1")
		}
		if ok, _ := l.IndexRemove(ctx, idx, "l1"); ok {
			t.Fatal("removed l1 twice")
		}
		if err := l.IndexAdd(ctx, idx, "l2", 500); err != nil {
			t.Fatal(err)
		}
		if got, _ := l.IndexRange(ctx, idx, 400, 600, 0, -1, false); !slices.Equal(got, []string{"l2"}) {
			t.Fatalf("renewed lease: %v", got)
		}
		if got, _ := l.IndexRange(ctx, "inflight:none", math.Inf(-1), math.Inf(1), 0, -1, false); len(got) != 0 || got == nil {
			t.Fatalf("unknown index: %#v", got)
		}
	})
}
