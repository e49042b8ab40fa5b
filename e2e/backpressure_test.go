package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestQueueFullAnswers429: DOCRENDER_MAX_QUEUE bounds the jobs queued or
// running in a deployment. Past it a request is refused at once with 429
// RATE_LIMITED (shape A) and Retry-After, instead of waiting ever longer;
// refused requests are not counted as conversions.
func TestQueueFullAnswers429(t *testing.T) {
	svc := startService(t, func(cfg *configT) {
		cfg.MaxQueue = 2
		cfg.Workers = 1
		cfg.RenderTimeout = 20 * time.Second
	})
	c := newClient(t, svc)
	const n = 6
	type answer struct {
		status int
		took   time.Duration
		body   []byte
		header http.Header
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp := c.generate([]file{htmlFile("index.html", slowPage)}, nil)
			answers[i] = answer{resp.StatusCode, time.Since(start), readAll(t, resp), resp.Header}
		}()
		time.Sleep(50 * time.Millisecond) // in order, so the first ones take the room
	}
	wg.Wait()
	ok, full := 0, 0
	for i, a := range answers {
		switch a.status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			full++
		default:
			t.Fatalf("request %d: status %d: %s", i, a.status, a.body)
		}
	}
	for i, a := range answers {
		if a.status != http.StatusTooManyRequests {
			continue
		}
		checkRateLimited(t, a.body, a.header)
		if a.took > 2*time.Second {
			t.Errorf("request %d: 429 after %s: a full queue must refuse at once", i, a.took)
		}
	}
	t.Logf("%d rendered, %d refused with 429", ok, full)
	if ok < 2 || full < 1 {
		t.Fatalf("%d rendered and %d refused; want the 2 that fit rendered and some refused", ok, full)
	}
	if got := c.billingUsage().ConversionsUsed; got != int64(ok) {
		t.Errorf("conversions used %d, want %d (refused requests are not counted)", got, ok)
	}
}

// TestClientGoneStopsRender: a client that stops waiting for a synchronous
// render (gone, or timed out) makes the gateway send a cancel notice; the
// worker stops the render at once and its slot takes the next job.
func TestClientGoneStopsRender(t *testing.T) {
	svc := startService(t, func(cfg *configT) {
		cfg.Workers = 1
		cfg.RenderTimeout = 60 * time.Second
	})
	c := newClient(t, svc)
	const forever = `<p>LONG</p><script>const t0 = Date.now(); while (Date.now() - t0 < 45000) {}</script>`
	ctx, leave := context.WithCancel(context.Background())
	b := multipartBody([]file{htmlFile("index.html", forever)}, nil)
	req, err := http.NewRequestWithContext(ctx, "POST", svc.URL+"/pdf/generate", b.r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", b.ctype)
	req.Header.Set("X-API-Key", c.Key)
	gone := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		gone <- err
	}()
	inFlight(t, svc.URL)
	leave()
	<-gone

	start := time.Now()
	resp := c.generate([]file{htmlFile("index.html", `<p>NEXT</p>`)}, nil)
	expectPDF(t, resp, "NEXT")
	took := time.Since(start)
	t.Logf("the next job finished %s after the client left", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the next job waited %s: the abandoned render kept the only slot", took)
	}
	eventually(t, 10*time.Second, "the cancelled render in the metrics", func() bool {
		return metricValue(scrape(t, svc.URL), "docrender_render_duration_seconds_count", "outcome", "cancelled") >= 1
	})
	if got := c.billingUsage().ConversionsUsed; got != 1 {
		t.Errorf("conversions used %d, want 1 (the abandoned render is given back)", got)
	}
}

// checkRateLimited checks a 429 of a full queue: shape A, RATE_LIMITED,
// and a Retry-After in seconds.
func checkRateLimited(t *testing.T, body []byte, h http.Header) {
	t.Helper()
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Body: io.NopCloser(bytes.NewReader(body)), Request: &http.Request{Method: "POST"}}
	expectError(t, resp, http.StatusTooManyRequests, "RATE_LIMITED")
	if ra := h.Get("Retry-After"); ra == "" || strings.Trim(ra, "0123456789") != "" {
		t.Errorf("Retry-After %q, want a number of seconds", ra)
	}
}

// TestQueueShareIsPerAccount: one account's batches take at most half of
// DOCRENDER_MAX_QUEUE (DESIGN §5): past it that account gets 429, while
// another account's batch and single renders are still taken.
func TestQueueShareIsPerAccount(t *testing.T) {
	svc := startService(t, func(cfg *configT) {
		cfg.MaxQueue = 20
		cfg.Workers = 1
		cfg.RenderTimeout = 20 * time.Second
		hobby := cfg.Plans["hobby"]
		hobby.MaxBatch = 50 // more than one account's share of this queue
		cfg.Plans["hobby"] = hobby
	})
	alice, bob, carol, dave := newClient(t, svc), newClient(t, svc), newClient(t, svc), newClient(t, svc)
	// A batch larger than any account's share would be refused forever:
	// that is a 400 naming documents, not a 429 to retry.
	e := expectError(t, dave.batch(map[string]any{"documents": docs(11, "big"), "stream": true}), http.StatusBadRequest, "BAD_REQUEST")
	if e.Field != "documents" || e.Hint == "" {
		t.Errorf("too large for the queue: field %q hint %q, want documents and a hint", e.Field, e.Hint)
	}
	if got := dave.billingUsage().ConversionsUsed; got != 0 {
		t.Errorf("dave's conversions used %d, want 0", got)
	}
	slowDocs := func(n int) []map[string]any {
		out := docs(n, "slow")
		for _, d := range out {
			d["htmlContent"] = slowPage
		}
		return out
	}
	alice.startStream(map[string]any{"documents": slowDocs(10)})
	resp := alice.batch(map[string]any{"documents": slowDocs(2), "stream": true})
	if b := readAll(t, resp); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("alice's second batch: %d %s, want 429 past her share of the queue", resp.StatusCode, b)
	} else {
		checkRateLimited(t, b, resp.Header)
	}
	bob.startStream(map[string]any{"documents": slowDocs(5)})
	resp = carol.generate([]file{htmlFile("index.html", "<p>carol</p>")}, nil)
	mustStatus(t, resp, http.StatusOK)
	if got := alice.billingUsage().ConversionsUsed; got != 10 {
		t.Errorf("alice's conversions used %d, want 10 (the refused batch is not charged)", got)
	}
}
