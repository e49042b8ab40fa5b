package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/docrender/docrender/gateway/idempotency"

	"github.com/docrender/docrender/proto/jobspb"
)

// keyed is a request with an Idempotency-Key.
func keyed(r req, key string) req {
	r.header = map[string]string{headerIdempotencyKey: key}
	return r
}

func (q *fakeQueue) runs() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.submitted) + len(q.published)
}

// The same keyed request is answered again, charged once, on every route
// that creates work (DESIGN §4.20); the answer says it was given again.
func TestIdempotentRetryAnsweredAgain(t *testing.T) {
	html := [2]string{"index.html", "<p>hello</p>"}
	pdf := [2]string{"a.pdf", "%PDF-1.7\n..."}
	docs := []map[string]string{{"fileName": "a", "htmlContent": "<p>a"}, {"fileName": "b", "htmlContent": "<p>b"}}
	for _, tc := range []struct {
		name string
		// first and retry are the same request, written differently.
		first, retry func(t *testing.T) req
		charged      float64
		same         func(t *testing.T, a, b reply)
	}{
		{"generate", func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"format":"A5","fileName":"x"}`, html)}
		}, func(t *testing.T) req {
			// Another boundary, another key order and spacing: the same request.
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{ "fileName":"x", "format":"a5" }`, html)}
		}, 1, func(t *testing.T, a, b reply) {
			if !bytes.Equal(a.body, b.body) || a.header.Get("Content-Disposition") != b.header.Get("Content-Disposition") ||
				a.header.Get("Content-Type") != "application/pdf" {
				t.Fatalf("answers differ: %v %q / %v %q", a.header, a.body, b.header, b.body)
			}
		}},
		{"hosted generate", func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"host":true}`, html)}
		}, func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"host":true}`, html)}
		}, 1, func(t *testing.T, a, b reply) {
			if a.json["pdfId"] == nil && a.json["id"] == nil || !bytes.Equal(a.body, b.body) {
				t.Fatalf("hosted answers differ: %s / %s", a.body, b.body)
			}
		}},
		{"merge", func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/merge", body: multipartBody(t, "", pdf, pdf)}
		}, func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/merge", body: multipartBody(t, "", pdf, pdf)}
		}, 1, func(t *testing.T, a, b reply) {
			if !bytes.Equal(a.body, b.body) || b.header.Get("X-PDF-Pages") != "2" {
				t.Fatalf("merge answers differ: %v / %v", a.header, b.header)
			}
		}},
		{"stream batch", func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate-batch", body: map[string]any{"documents": docs, "stream": true, "options": map[string]any{"format": "A5"}}}
		}, func(t *testing.T) req {
			// Other key order, spacing and spelling of the same options.
			return req{method: "POST", path: "/pdf/generate-batch", body: `{"options":{"format":"a5"}, "stream":true,  "documents":[{"htmlContent":"<p>a","fileName":"a"},{"fileName":"b","htmlContent":"<p>b"}]}`}
		}, 2, func(t *testing.T, a, b reply) {
			if a.json["batchId"] == nil || a.json["batchId"] != b.json["batchId"] || b.header.Get("X-Batch-Id") != a.json["batchId"] {
				t.Fatalf("batch answers differ: %s / %s", a.body, b.body)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, nil)
			a := g.do(keyed(tc.first(t), "key-1"))
			a.check(t, expect{status: 200})
			runs := g.queue.runs()
			b := g.do(keyed(tc.retry(t), "key-1"))
			b.check(t, expect{status: 200, header: map[string]string{headerReplayed: "true"}})
			tc.same(t, a, b)
			if got := g.queue.runs(); got != runs {
				t.Fatalf("the retry ran %d more jobs", got-runs)
			}
			if got := g.used(); got != tc.charged {
				t.Fatalf("conversions used %v, want %v", got, tc.charged)
			}
			// Without the key, or with another, the same request runs again.
			g.do(keyed(tc.retry(t), "key-2")).check(t, expect{status: 200})
			if got := g.used(); got != 2*tc.charged {
				t.Fatalf("conversions used %v after a new key, want %v", got, 2*tc.charged)
			}
		})
	}
}

// The same key for another request is a 409 naming the header; a bad key
// is a 400 naming it; another account's key is its own.
func TestIdempotencyKeyConflictsAndBadKeys(t *testing.T) {
	g := newGateway(t, nil)
	gen := func(body string) req {
		return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", [2]string{"index.html", body})}
	}
	g.do(keyed(gen("<p>one</p>"), "k")).check(t, expect{status: 200})
	g.do(keyed(gen("<p>two</p>"), "k")).check(t, expect{status: 409, code: "CONFLICT", msg: "Idempotency-Key", field: "Idempotency-Key"})
	g.do(keyed(req{method: "POST", path: "/pdf/generate-batch", body: map[string]any{"documents": []map[string]string{{"fileName": "a", "htmlContent": "x"}}, "stream": true}}, "k")).
		check(t, expect{status: 409, code: "CONFLICT", msg: "Idempotency-Key"})
	batchOf := func(format string) req {
		return req{method: "POST", path: "/pdf/generate-batch", body: map[string]any{"stream": true, "options": map[string]any{"format": format},
			"documents": []map[string]string{{"fileName": "a", "htmlContent": "x"}}}}
	}
	g.do(keyed(batchOf("A4"), "kb")).check(t, expect{status: 200})
	g.do(keyed(batchOf("A5"), "kb")).check(t, expect{status: 409, code: "CONFLICT"})
	for _, bad := range []string{strings.Repeat("k", 256), "caf\xc3\xa9", "tab\there"} {
		g.do(keyed(gen("<p>one</p>"), bad)).check(t, expect{status: 400, code: "BAD_REQUEST", field: "Idempotency-Key"})
	}
	_, other := g.signUp("other@example.com")
	r := keyed(gen("<p>two</p>"), "k")
	r.key = other
	g.do(r).check(t, expect{status: 200})
	if h := g.do(r); h.header.Get(headerReplayed) != "true" {
		t.Fatalf("the other account's retry was not answered again: %v", h.header)
	}
	if got := len(g.queue.submitted); got != 2 {
		t.Fatalf("%d renders, want 2 (one per account)", got)
	}
}

// A failed request is not kept: the retry is judged afresh.
func TestIdempotentFailureNotKept(t *testing.T) {
	g := newGateway(t, nil)
	gen := func() req {
		return keyed(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", [2]string{"index.html", "<p>x</p>"})}, "k")
	}
	g.queue.fail = jobspb.ErrorKind_ERROR_KIND_INTERNAL
	g.do(gen()).check(t, expect{status: 500})
	g.queue.fail = jobspb.ErrorKind_ERROR_KIND_NONE
	a := g.do(gen())
	a.check(t, expect{status: 200})
	if a.header.Get(headerReplayed) != "" || len(g.queue.submitted) != 2 || g.used() != 1 {
		t.Fatalf("retry after a failure: replayed %q, %d renders, %v used", a.header.Get(headerReplayed), len(g.queue.submitted), g.used())
	}
}

// Two copies of one keyed request at once: one render, both answered with it.
func TestIdempotentConcurrentRequestsJoin(t *testing.T) {
	g := newGateway(t, nil)
	g.queue.hold = make(chan struct{})
	var wg sync.WaitGroup
	answers := make([]reply, 2)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = g.do(keyed(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", [2]string{"index.html", "<p>x</p>"})}, "k"))
		}()
	}
	for g.queue.runs() == 0 {
		waitABit()
	}
	// Time for the second copy to arrive and wait for the first (it polls
	// every 100 ms): it must join, not run.
	time.Sleep(500 * time.Millisecond)
	close(g.queue.hold)
	wg.Wait()
	for _, a := range answers {
		a.check(t, expect{status: 200})
	}
	if !bytes.Equal(answers[0].body, answers[1].body) || g.queue.runs() != 1 || g.used() != 1 {
		t.Fatalf("%d renders, %v used", g.queue.runs(), g.used())
	}
	if answers[0].header.Get(headerReplayed)+answers[1].header.Get(headerReplayed) != "true" {
		t.Fatalf("exactly one answer is given again: %q %q", answers[0].header.Get(headerReplayed), answers[1].header.Get(headerReplayed))
	}
}

// A kept file that is gone (deleted, swept) makes the retry run afresh.
func TestIdempotentOutcomeGoneRunsAfresh(t *testing.T) {
	g := newGateway(t, nil)
	gen := func() req {
		return keyed(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", [2]string{"index.html", "<p>x</p>"})}, "k")
	}
	a := g.do(gen())
	a.check(t, expect{status: 200})
	ctx := context.Background()
	f, err := g.srv.files.Get(ctx, a.header.Get(headerPdfID))
	if err != nil {
		t.Fatalf("the kept file %q: %v", a.header.Get(headerPdfID), err)
	}
	if f.Public() || f.Hosted || f.ExpiresAt.Sub(f.CreatedAt) != idempotency.Window {
		t.Fatalf("kept file %+v: want private, not hosted, kept for the key's window", f)
	}
	if err := g.srv.files.Delete(ctx, f); err != nil {
		t.Fatal(err)
	}
	b := g.do(gen())
	b.check(t, expect{status: 200})
	if b.header.Get(headerReplayed) != "" || len(g.queue.submitted) != 2 {
		t.Fatalf("retry after the kept file went: replayed %q, %d renders", b.header.Get(headerReplayed), len(g.queue.submitted))
	}
}

func waitABit() { time.Sleep(20 * time.Millisecond) }

// A handler that panics with its key claimed leaves the key free: the
// retry runs at once instead of waiting for a claim renewed forever.
func TestIdempotentPanicFreesTheKey(t *testing.T) {
	g := newGateway(t, nil)
	e := echo.New()
	e.Use(middleware.Recover())
	e.POST("/x", g.srv.idempotent(func(c echo.Context) error {
		if _, err := g.srv.beginIdempotent(c, g.user, "fp"); err != nil {
			return err
		}
		panic("a bug")
	}))
	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/x", nil)
		req.Header.Set(headerIdempotencyKey, "k")
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			e.ServeHTTP(rec, req.WithContext(req.Context()))
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the retry waited for the panicked request's claim")
		}
		if rec.Code != http.StatusInternalServerError {
			t.Fatalf("status %d", rec.Code)
		}
	}
}
