package usage

import (
	"bytes"
	"context"
	"crypto/rand"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/state/redisstate"
)

// A reservation its process never committed nor gave back (the gateway
// died mid-request) is given back once its hold has passed, and only then;
// every other path is given back at most once however often it is swept.
func TestSweepPendingGivesBackWhatNobodyEnded(t *testing.T) {
	ctx := context.Background()
	m := newMeter(t)
	clock := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return clock }
	reserve := func(n int64, hold time.Duration) Reservation {
		t.Helper()
		a := ask(n, 100)
		a.Hold = hold
		r, err := m.Reserve(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	_ = reserve(1, time.Minute)                      // its gateway died
	committed := reserve(2, time.Minute)             // the render succeeded
	released := reserve(4, time.Minute)              // the render failed
	_ = reserve(8, time.Hour)                        // still running
	partial := reserve(16, time.Minute)              // a batch: 3 documents failed, then its gateway died
	if err := m.Commit(ctx, committed); err != nil { // kept
		t.Fatal(err)
	}
	if err := m.ReleaseAll(ctx, released); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := m.Release(ctx, partial, ids.New()+string(rune('a'+i)), 1); err != nil {
			t.Fatal(err)
		}
	}
	used := func() int64 {
		n, err := m.Used(ctx, "acct")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := used(); got != 1+2+8+13 {
		t.Fatalf("used %d before the sweep, want 24", got)
	}
	if n, err := m.SweepPending(ctx); err != nil || n != 0 {
		t.Fatalf("sweep before any hold passed: %d, %v", n, err)
	}
	clock = clock.Add(2 * time.Minute)
	for range 3 {
		if _, err := m.SweepPending(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := used(); got != 2+8 {
		t.Fatalf("used %d after the sweeps, want 10 (committed 2 + still running 8)", got)
	}
}

// redisProxy forwards to Redis and, when armed, holds back the next reply
// for delay: the client times out and go-redis retries the command on a
// new connection while the first one has already run.
type redisProxy struct {
	ln      net.Listener
	target  string
	delay   time.Duration
	armed   atomic.Bool
	mu      sync.Mutex
	scripts int // EVALSHA/EVAL commands forwarded
}

func startRedisProxy(t *testing.T, target string, delay time.Duration) *redisProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &redisProxy{ln: ln, target: target, delay: delay}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *redisProxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	// Replies come in the order of the commands on a connection: the one
	// after a script command armed here is that script's.
	var delayReply atomic.Bool
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				up := bytes.ToUpper(buf[:n])
				if c := bytes.Count(up, []byte("EVALSHA")) + bytes.Count(up, []byte("EVAL\r\n")); c > 0 {
					p.mu.Lock()
					p.scripts += c
					p.mu.Unlock()
					if p.armed.CompareAndSwap(true, false) {
						delayReply.Store(true)
					}
				}
				if _, err := server.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				server.Close()
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if delayReply.CompareAndSwap(true, false) {
				time.Sleep(p.delay)
			}
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *redisProxy) scriptCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.scripts
}

// The failure: a Redis stall made go-redis retry the reservation
// script, and one render was charged 3 conversions. Through a proxy that
// delays one reply past the client's read timeout, the script runs twice
// and the account is still charged once; a retried give-back gives back once.
func TestRetriedScriptChargesOnce(t *testing.T) {
	target := "127.0.0.1:6379"
	if u := os.Getenv("DOCRENDER_TEST_REDIS_ADDR"); u != "" {
		target = u
	}
	p := startRedisProxy(t, target, 700*time.Millisecond)
	ctx := context.Background()
	st, err := redisstate.Open(ctx, "redis://"+p.ln.Addr().String()+"/0?read_timeout=200ms&max_retries=3",
		"usageonce:"+rand.Text()[:10]+":")
	if err != nil {
		t.Fatalf("Redis must be running (scripts/setup --test starts it): %v", err)
	}
	defer st.Close()
	m := New(st)

	tests := []struct {
		name string
		run  func(r *Reservation) error
		want int64 // used after the call
	}{
		{"reserve", func(r *Reservation) error {
			var err error
			*r, err = m.Reserve(ctx, ask(1, 100))
			return err
		}, 1},
		{"give back", func(r *Reservation) error { return m.Release(ctx, *r, "all", 1) }, 0},
	}
	var r Reservation
	// Scripts load (SCRIPT LOAD / the first EVAL) before the proxy is armed,
	// so the delayed reply is the one of the call under test.
	if _, err := st.Refund(ctx, "warm", "warm", "warm", 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Reserve(ctx, "warm", ids.New(), 1, 1, time.Minute, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		before := p.scriptCalls()
		p.armed.Store(true) // the next script's reply comes late
		if err := tc.run(&r); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if calls := p.scriptCalls() - before; calls < 2 {
			t.Fatalf("%s: the script ran %d times through the proxy; the test needs a retry to prove anything", tc.name, calls)
		}
		used, err := m.Used(ctx, "acct")
		if err != nil || used != tc.want {
			t.Fatalf("%s: used %d (%v) after a retried script, want %d", tc.name, used, err, tc.want)
		}
	}
}

// The sweeper needs the charge's record after its hold: a request whose
// hold and life are the same short time is still given back, on the store's
// own clock.
func TestSweepFindsTheChargeAfterItsHold(t *testing.T) {
	ctx := context.Background()
	m := newMeter(t)
	a := ask(2, 10)
	a.Hold, a.Life = 200*time.Millisecond, 200*time.Millisecond
	if _, err := m.Reserve(ctx, a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if n, err := m.SweepPending(ctx); err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	if used, _ := m.Used(ctx, "acct"); used != 0 {
		t.Fatalf("used %d after the sweep, want 0: the charge's record expired with its hold", used)
	}
}
