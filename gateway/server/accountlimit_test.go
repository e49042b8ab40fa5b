package server

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// A plan's RATE keyed requests a minute, then 429 RATE_LIMITED with
// Retry-After; every keyed answer says where the account stands.
func TestAccountRateLimit(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_PLAN_HOBBY_RATE": "3"})
	_, otherKey := g.signUp("other@example.com")
	for i := range 3 {
		a := g.do(req{method: "GET", path: "/pdf/progress/nope"})
		if a.status != http.StatusNotFound {
			t.Fatalf("request %d: %d %s", i, a.status, a.body)
		}
		if a.header.Get("RateLimit-Limit") != "3" || a.header.Get("RateLimit-Remaining") != strconv.Itoa(2-i) {
			t.Fatalf("request %d: RateLimit-Limit %q, -Remaining %q", i, a.header.Get("RateLimit-Limit"), a.header.Get("RateLimit-Remaining"))
		}
		if r, err := strconv.Atoi(a.header.Get("RateLimit-Reset")); err != nil || r < 1 || r > 60 {
			t.Fatalf("RateLimit-Reset %q, want seconds to the window's end", a.header.Get("RateLimit-Reset"))
		}
	}
	a := g.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", [2]string{"index.html", "<p>x</p>"})})
	checkRateLimited(t, a)
	if len(g.queue.submitted) != 0 {
		t.Fatal("a refused request reached the queue")
	}
	// Another account is not touched by this one's limit.
	if a := g.do(req{method: "GET", path: "/pdf/progress/nope", key: otherKey}); a.status != http.StatusNotFound || a.header.Get("RateLimit-Remaining") != "2" {
		t.Fatalf("other account: %d, remaining %q", a.status, a.header.Get("RateLimit-Remaining"))
	}
}

// A plan's CONCURRENCY requests that render may be in flight at once; the
// next is refused at once, and the slot is free again when one ends.
func TestAccountConcurrencyLimit(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_PLAN_HOBBY_CONCURRENCY": "2"})
	g.queue.hold = make(chan struct{})
	gen := func() reply {
		return g.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", [2]string{"index.html", "<p>x</p>"})})
	}
	var wg sync.WaitGroup
	answers := make([]reply, 2)
	for i := range answers {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = gen() }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.queue.mu.Lock()
		n := len(g.queue.submitted)
		g.queue.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 requests in flight", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkRateLimited(t, gen())
	// Reading progress does not take a slot.
	if a := g.do(req{method: "GET", path: "/pdf/progress/nope"}); a.status != http.StatusNotFound {
		t.Fatalf("progress while the slots are taken: %d %s", a.status, a.body)
	}
	close(g.queue.hold)
	wg.Wait()
	for i, a := range answers {
		if a.status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, a.status, a.body)
		}
	}
	if a := gen(); a.status != http.StatusOK {
		t.Fatalf("after the slots came back: %d %s", a.status, a.body)
	}
}

func checkRateLimited(t *testing.T, a reply) {
	t.Helper()
	if a.status != http.StatusTooManyRequests || a.json["code"] != "RATE_LIMITED" {
		t.Fatalf("%d %s, want 429 RATE_LIMITED", a.status, a.body)
	}
	if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("Retry-After %q", a.header.Get("Retry-After"))
	}
}
