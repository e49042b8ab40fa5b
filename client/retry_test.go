package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// scripted answers each request with the next status of its script (the
// last one repeats) and records the requests' bodies.
type scripted struct {
	mu      sync.Mutex
	answers []answer
	n       int
	bodies  []string
	ctypes  []string
}

type answer struct {
	status     int
	retryAfter string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	a := s.answers[min(s.n, len(s.answers)-1)]
	s.n++
	s.bodies = append(s.bodies, string(b))
	s.ctypes = append(s.ctypes, r.Header.Get("Content-Type"))
	s.mu.Unlock()
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	if a.status == 200 {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write([]byte("%PDF-1.7 ok"))
		return
	}
	w.WriteHeader(a.status)
	w.Write([]byte(`{"statusCode":0,"code":"X","message":"m"}`))
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name     string
		answers  []answer
		attempts int   // requests the server sees
		ok       bool  // the call succeeds
		waits    []int // the waits, in seconds, when fixed by Retry-After (-1: a backoff)
	}{
		{"500 then ok", []answer{{500, ""}, {500, ""}, {200, ""}}, 3, true, []int{-1, -1}},
		{"503 then ok", []answer{{503, ""}, {200, ""}}, 2, true, []int{-1}},
		{"503 with Retry-After", []answer{{503, "2"}, {200, ""}}, 2, true, []int{2}},
		{"429 with Retry-After", []answer{{429, "3"}, {200, ""}}, 2, true, []int{3}},
		{"429 without Retry-After is final", []answer{{429, ""}}, 1, false, nil},
		{"429 with Retry-After over the cap is final", []answer{{429, "3600"}}, 1, false, nil},
		{"400 is final", []answer{{400, ""}}, 1, false, nil},
		{"401 is final", []answer{{401, ""}}, 1, false, nil},
		{"404 is final", []answer{{404, ""}}, 1, false, nil},
		{"422 is final", []answer{{422, ""}}, 1, false, nil},
		{"502 is not retried", []answer{{502, ""}}, 1, false, nil},
		{"500 forever stops at MaxAttempts", []answer{{500, ""}}, 4, false, []int{-1, -1, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{answers: tt.answers}
			srv := httptest.NewServer(s)
			defer srv.Close()
			c := newTestClient(t, srv.URL)
			var waits []time.Duration
			c.sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			d, err := c.Generate(context.Background(), GenerateRequest{
				Files:   []Upload{UploadBytes("index.html", []byte("<h1>same bytes every time</h1>")), UploadBytes("css/a.css", []byte("h1{}"))},
				Options: &PDFOptions{Format: "A4"},
			})
			if s.n != tt.attempts {
				t.Errorf("server saw %d requests, want %d", s.n, tt.attempts)
			}
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err == nil {
				if b, _ := d.Bytes(); string(b) != "%PDF-1.7 ok" {
					t.Errorf("body %q", b)
				}
			} else {
				var e *Error
				if !errors.As(err, &e) || e.StatusCode != tt.answers[len(tt.answers)-1].status {
					t.Errorf("err %v, want *Error with the last status", err)
				}
			}
			if len(waits) != len(tt.waits) {
				t.Fatalf("waits %v, want %d", waits, len(tt.waits))
			}
			for i, w := range tt.waits {
				if w >= 0 && waits[i] != time.Duration(w)*time.Second {
					t.Errorf("wait %d = %v, want %ds (Retry-After)", i, waits[i], w)
				}
				if w < 0 && (waits[i] <= 0 || waits[i] > DefaultRetryPolicy.MaxDelay) {
					t.Errorf("backoff %d = %v out of range", i, waits[i])
				}
			}
			// Every attempt sent the whole request again.
			for i, b := range s.bodies {
				if got := parts(t, s.ctypes[i], b); got != "options={\"format\":\"A4\"};index.html=<h1>same bytes every time</h1>;css/a.css=h1{};" {
					t.Errorf("attempt %d sent %q", i+1, got)
				}
			}
		})
	}
}

// parts lists a multipart body's parts as name=content;.
func parts(t *testing.T, ctype, body string) string {
	t.Helper()
	_, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		t.Fatalf("content type %q: %v", ctype, err)
	}
	mr := multipart.NewReader(strings.NewReader(body), params["boundary"])
	var b strings.Builder
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatalf("multipart: %v", err)
		}
		data, _ := io.ReadAll(p)
		name := p.FormName()
		if p.FileName() != "" {
			_, dp, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
			name = dp["filename"]
		}
		b.WriteString(name + "=" + string(data) + ";")
	}
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for n, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.backoff(n + 1)
			if d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n+1, d, full/2, full)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("backoff(%d) has no jitter: %v", n+1, seen)
		}
	}
}

func TestRetryWaitEndsWithContext(t *testing.T) {
	s := &scripted{answers: []answer{{503, "20"}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Usage(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 503 {
		t.Errorf("err %v should still carry the 503", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("waited %v past the context", time.Since(start))
	}
}

func TestRetryAfterIsWaitedForReal(t *testing.T) {
	s := &scripted{answers: []answer{{429, "1"}, {200, ""}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	start := time.Now()
	d, err := c.Generate(context.Background(), GenerateRequest{URL: "https://example.com/"})
	if err != nil {
		t.Fatal(err)
	}
	d.Body.Close()
	if el := time.Since(start); el < time.Second {
		t.Errorf("retried after %v, before Retry-After: 1", el)
	}
	if s.n != 2 {
		t.Errorf("%d requests", s.n)
	}
}

func TestNoRetryPolicy(t *testing.T) {
	s := &scripted{answers: []answer{{500, ""}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := newTestClient(t, srv.URL, WithRetry(RetryPolicy{MaxAttempts: 1}))
	if _, err := c.Usage(context.Background()); err == nil || s.n != 1 {
		t.Fatalf("err %v after %d requests", err, s.n)
	}
}

// A request that is not safe to repeat (it creates or changes something)
// is retried only when the service did nothing: 503, or 429 with
// Retry-After; never on 500. The others keep the full rule.
func TestRetryByRepeatability(t *testing.T) {
	type call func(c *Client) error
	ctx := context.Background()
	batch := BatchRequest{Documents: []BatchDocument{{FileName: "a", HTMLContent: "<p>a</p>"}}}
	calls := []struct {
		name       string
		call       call
		repeatable bool
	}{
		{"create key", func(c *Client) error { _, err := c.CreateKey(ctx, "k", nil); return err }, false},
		{"register", func(c *Client) error { _, err := c.Register(ctx, "a@b.c", "pw"); return err }, false},
		{"change plan", func(c *Client) error { _, err := c.ChangePlan(ctx, "pro"); return err }, false},
		{"start batch", func(c *Client) error { _, err := c.StartBatch(ctx, batch); return err }, false},
		{"synchronous batch", func(c *Client) error { _, err := c.GenerateBatchHosted(ctx, batch); return err }, false},
		{"delete account", func(c *Client) error { return c.DeleteAccount(ctx) }, false},
		{"usage", func(c *Client) error { _, err := c.Usage(ctx); return err }, true},
		{"delete hosted by ID", func(c *Client) error { return c.DeleteHosted(ctx, "f1") }, true},
		{"revoke key by ID", func(c *Client) error { return c.RevokeKey(ctx, "k1") }, true},
		{"generate", func(c *Client) error {
			_, err := c.GenerateHosted(ctx, GenerateRequest{URL: "https://example.com/"})
			return err
		}, true},
		{"merge", func(c *Client) error {
			_, err := c.MergeHosted(ctx, MergeRequest{Files: []Upload{UploadBytes("a.pdf", []byte("%PDF"))}})
			return err
		}, true},
		{"qr code", func(c *Client) error { _, err := c.QRCodeDataURL(ctx, QRRequest{Data: "x"}); return err }, true},
		// An Idempotency-Key makes a batch safe to repeat (DESIGN §4.20).
		{"keyed batch", func(c *Client) error {
			b := batch
			b.IdempotencyKey = "k1"
			_, err := c.GenerateBatchHosted(ctx, b)
			return err
		}, true},
	}
	for _, cl := range calls {
		for _, a := range []answer{{500, ""}, {503, ""}, {503, "1"}, {429, "1"}} {
			t.Run(fmt.Sprintf("%s %d %s", cl.name, a.status, a.retryAfter), func(t *testing.T) {
				s := &scripted{answers: []answer{a}}
				srv := httptest.NewServer(s)
				defer srv.Close()
				c := newTestClient(t, srv.URL)
				c.sleep = func(context.Context, time.Duration) error { return nil }
				if err := cl.call(c); err == nil {
					t.Fatal("no error")
				}
				want := DefaultRetryPolicy.MaxAttempts
				if a.status == 500 && !cl.repeatable {
					want = 1
				}
				if s.n != want {
					t.Errorf("server saw %d requests, want %d", s.n, want)
				}
			})
		}
	}
}

// A keyed request lost on the way (the connection cut before an answer, as
// by a gateway restarting) is sent again with the same key; an unkeyed one
// is not, since it may have been done.
func TestLostConnectionRetriedWithKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		key  string
		want int
	}{{"order-42", 2}, {"", 1}} {
		t.Run(fmt.Sprintf("key %q", tc.key), func(t *testing.T) {
			var mu sync.Mutex
			var keys []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				keys = append(keys, r.Header.Get("Idempotency-Key"))
				first := len(keys) == 1
				mu.Unlock()
				if first {
					conn, _, _ := http.NewResponseController(w).Hijack()
					conn.Close()
					return
				}
				w.Header().Set("Content-Type", "application/zip")
				w.Write([]byte("PK"))
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL)
			c.sleep = func(context.Context, time.Duration) error { return nil }
			_, err := c.GenerateBatch(ctx, BatchRequest{Documents: []BatchDocument{{FileName: "a", HTMLContent: "a"}}, IdempotencyKey: tc.key})
			mu.Lock()
			defer mu.Unlock()
			if len(keys) != tc.want || (tc.want == 1) != (err != nil) {
				t.Fatalf("%d requests (keys %q), err %v; want %d", len(keys), keys, err, tc.want)
			}
			for _, k := range keys {
				if k != tc.key {
					t.Fatalf("sent key %q, want %q", k, tc.key)
				}
			}
		})
	}
}
