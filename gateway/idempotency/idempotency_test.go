package idempotency

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/pkg/state/redisstate"
)

func redisURL() string {
	if u := os.Getenv("DOCRENDER_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// eachBackend runs fn against every state store the records may live in.
func eachBackend(t *testing.T, fn func(t *testing.T, s *Store)) {
	for _, b := range []struct {
		name string
		open func(t *testing.T) (state.Store, error)
	}{
		{"bbolt", func(t *testing.T) (state.Store, error) {
			return boltstate.Open(filepath.Join(t.TempDir(), "state.db"))
		}},
		{"redis", func(t *testing.T) (state.Store, error) {
			return redisstate.Open(context.Background(), redisURL(), "idemtest:"+rand.Text()[:10]+":")
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			st, err := b.open(t)
			if err != nil {
				t.Fatalf("open %s (scripts/setup --test starts Redis): %v", b.name, err)
			}
			t.Cleanup(func() { st.Close() })
			s := New(st)
			s.Lease, s.Poll = 600*time.Millisecond, 10*time.Millisecond
			fn(t, s)
		})
	}
}

func TestCheckKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"order-42 retry #1", true},
		{strings.Repeat("k", 255), true},
		{"", false},
		{strings.Repeat("k", 256), false},
		{"tab\tkey", false},
		{"ключ", false},
		{"nul\x00", false},
	} {
		if err := CheckKey(tc.key); (err == nil) != tc.ok {
			t.Errorf("CheckKey(%q) = %v, want ok %v", tc.key, err, tc.ok)
		}
	}
}

// begin runs Begin in the background.
func begin(s *Store, ctx context.Context, account, key, fp string) chan beginResult {
	ch := make(chan beginResult, 1)
	go func() {
		c, o, err := s.Begin(ctx, account, key, fp)
		ch <- beginResult{c, o, err}
	}()
	return ch
}

type beginResult struct {
	claim   *Claim
	outcome *Outcome
	err     error
}

func wait(t *testing.T, ch chan beginResult) beginResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Begin did not return")
		return beginResult{}
	}
}

// The same request is joined while it runs and answered again once kept;
// another request under the key is a conflict; another account's key is
// another key.
func TestJoinReplayConflict(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		c, o, err := s.Begin(ctx, "acc1", "k1", "fp-a")
		if err != nil || c == nil || o != nil {
			t.Fatalf("first Begin: %v %v %v", c, o, err)
		}
		joined := begin(s, ctx, "acc1", "k1", "fp-a")
		if _, _, err := s.Begin(ctx, "acc1", "k1", "fp-b"); !errors.Is(err, ErrConflict) {
			t.Fatalf("another request under the key: %v, want ErrConflict", err)
		}
		other, _, err := s.Begin(ctx, "acc2", "k1", "fp-b")
		if err != nil || other == nil {
			t.Fatalf("another account's key: %v %v", other, err)
		}
		select {
		case r := <-joined:
			t.Fatalf("the joined request returned while the first ran: %+v", r)
		case <-time.After(3 * s.Lease): // renewed meanwhile: not taken over
		}
		want := Outcome{Status: 200, Header: map[string]string{"Content-Type": "application/pdf"}, FileID: "f1"}
		if err := c.Keep(ctx, want); err != nil {
			t.Fatal(err)
		}
		r := wait(t, joined)
		if r.err != nil || r.claim != nil || r.outcome == nil || r.outcome.FileID != "f1" || r.outcome.Status != 200 {
			t.Fatalf("joined request: %+v", r)
		}
		if _, o, err := s.Begin(ctx, "acc1", "k1", "fp-a"); err != nil || o == nil || o.FileID != "f1" {
			t.Fatalf("a later retry: %v %v", o, err)
		}
		if _, _, err := s.Begin(ctx, "acc1", "k1", "fp-b"); !errors.Is(err, ErrConflict) {
			t.Fatalf("another request after the outcome: %v, want ErrConflict", err)
		}
	})
}

// A failed request is forgotten: the one waiting for it runs afresh.
func TestDropRunsAfresh(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		c, _, err := s.Begin(ctx, "acc", "k", "fp")
		if err != nil {
			t.Fatal(err)
		}
		joined := begin(s, ctx, "acc", "k", "fp")
		time.Sleep(50 * time.Millisecond)
		if err := c.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		r := wait(t, joined)
		if r.err != nil || r.claim == nil {
			t.Fatalf("after a failure the retry must run: %+v", r)
		}
		r.claim.Drop(ctx)
	})
}

// A request whose gateway died (its lease no longer renewed) is taken over
// by one retry once the lease passed; the other retries join that one.
func TestLostLeaseTakenOver(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		dead, _, err := s.Begin(ctx, "acc", "k", "fp")
		if err != nil {
			t.Fatal(err)
		}
		dead.end(false) // the gateway died: no renewal, no outcome
		a, b := begin(s, ctx, "acc", "k", "fp"), begin(s, ctx, "acc", "k", "fp")
		var taker *Claim
		var other chan beginResult
		select {
		case r := <-a:
			taker, other = r.claim, b
		case r := <-b:
			taker, other = r.claim, a
		case <-time.After(10 * time.Second):
			t.Fatal("nobody took over the lost lease")
		}
		if taker == nil {
			t.Fatal("the first to return did not take over")
		}
		select {
		case r := <-other:
			t.Fatalf("both took over: %+v", r)
		case <-time.After(3 * s.Lease):
		}
		if err := taker.Keep(ctx, Outcome{Status: 200, BatchID: "b1"}); err != nil {
			t.Fatal(err)
		}
		if r := wait(t, other); r.outcome == nil || r.outcome.BatchID != "b1" {
			t.Fatalf("the other retry: %+v", r)
		}
	})
}

// A waiting request ends with its context.
func TestBeginEndsWithContext(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		c, _, err := s.Begin(context.Background(), "acc", "k", "fp")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Drop(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, _, err := s.Begin(ctx, "acc", "k", "fp"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the context's end", err)
		}
	})
}

// With the store its own (bbolt), a request left running by an earlier run
// of the process is taken over by its retry at once; shared (Redis), it is
// another gateway's, alive as far as anyone knows, until its lease passes.
func TestEarlierRunTakenOverAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.Lease = time.Hour // a lease that would outlast the test
		before, _, err := s.Begin(ctx, "acc", "k", "fp")
		if err != nil {
			t.Fatal(err)
		}
		before.end(false) // the process stopped mid-request
		shared := *s
		shared.process = "another-gateway"
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if c, _, err := shared.Begin(wctx, "acc", "k", "fp"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a shared store took over a live lease: %v %v", c, err)
		}
		again := *s
		again.process = "the-next-run"
		again.OnlyProcess()
		c, o, err := again.Begin(ctx, "acc", "k", "fp")
		if err != nil || c == nil || o != nil {
			t.Fatalf("the next run's retry: %v %v %v", c, o, err)
		}
		c.Drop(ctx)
	})
}

// A claim whose lease passed while it still ran (a slow store, a starved
// process) and which a retry took over can neither keep its outcome nor
// forget the key: the retry's claim is the one that counts.
func TestLostClaimCannotWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		slow := *s
		slow.Lease = time.Hour // renews only after the test
		slow.now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
		a, _, err := slow.Begin(ctx, "acc", "k", "fp") // its lease long passed
		if err != nil || a == nil {
			t.Fatal(a, err)
		}
		b, _, err := s.Begin(ctx, "acc", "k", "fp")
		if err != nil || b == nil {
			t.Fatalf("the retry did not take over: %v %v", b, err)
		}
		if err := a.Keep(ctx, Outcome{Status: 200, FileID: "from-a"}); !errors.Is(err, ErrLost) {
			t.Fatalf("the lost claim kept its outcome: %v", err)
		}
		if err := b.Keep(ctx, Outcome{Status: 200, FileID: "from-b"}); err != nil {
			t.Fatal(err)
		}
		if _, o, err := s.Begin(ctx, "acc", "k", "fp"); err != nil || o == nil || o.FileID != "from-b" {
			t.Fatalf("the kept outcome: %+v %v", o, err)
		}
		// A lost claim's Drop leaves the key to its new holder.
		c, _, err := slow.Begin(ctx, "acc", "k2", "fp")
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := s.Begin(ctx, "acc", "k2", "fp")
		if err != nil || d == nil {
			t.Fatal(d, err)
		}
		if err := c.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := d.Keep(ctx, Outcome{Status: 200, BatchID: "b"}); err != nil {
			t.Fatalf("the lost claim's Drop removed the new holder's record: %v", err)
		}
	})
}

// Forget removes only the outcome it was given: a record changed since
// (a retry already running afresh) stays.
func TestForgetOnlyWhatWasSeen(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		c, _, _ := s.Begin(ctx, "acc", "k", "fp")
		if err := c.Keep(ctx, Outcome{Status: 200, FileID: "gone"}); err != nil {
			t.Fatal(err)
		}
		_, seen, _ := s.Begin(ctx, "acc", "k", "fp")
		_, seen2, _ := s.Begin(ctx, "acc", "k", "fp")
		if err := s.Forget(ctx, "acc", "k", seen); err != nil {
			t.Fatal(err)
		}
		fresh, _, err := s.Begin(ctx, "acc", "k", "fp") // runs afresh
		if err != nil || fresh == nil {
			t.Fatal(fresh, err)
		}
		if err := s.Forget(ctx, "acc", "k", seen2); err != nil { // a second retry saw the same outcome
			t.Fatal(err)
		}
		if err := fresh.Keep(ctx, Outcome{Status: 200, FileID: "new"}); err != nil {
			t.Fatalf("the second Forget removed the fresh claim: %v", err)
		}
	})
}
