package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// hookCall is one request a receiver got.
type hookCall struct {
	Header http.Header
	Body   []byte
	At     time.Time
	Status int
}

// hookReceiver is a webhook endpoint on loopback that answers with the
// status its answer function picks for the n-th call (1-based).
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []hookCall
	answer func(n int) int
}

func newHookReceiver(t testing.TB, answer func(n int) int) *hookReceiver {
	r := &hookReceiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := r.answer(len(r.calls) + 1)
		r.calls = append(r.calls, hookCall{Header: req.Header.Clone(), Body: b, At: time.Now(), Status: status})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) setAnswer(f func(n int) int) {
	r.mu.Lock()
	r.answer = f
	r.mu.Unlock()
}

func (r *hookReceiver) snapshot() []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// waitCalls waits until the receiver got n calls.
func (r *hookReceiver) waitCalls(t testing.TB, n int, limit time.Duration) []hookCall {
	t.Helper()
	eventually(t, limit, "webhook calls", func() bool { return len(r.snapshot()) >= n })
	return r.snapshot()
}

func signature(body []byte, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// TestWebhookRetriedUntilDelivered: the receiver fails twice, then accepts;
// all three tries carry the same body, delivery ID and a valid signature,
// spaced by a growing backoff, and nothing comes after the success.
func TestWebhookRetriedUntilDelivered(t *testing.T) {
	svc := slowService(t)
	c := newClient(t, svc)
	recv := newHookReceiver(t, func(n int) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	const secret = "whsec-test-1"
	id := c.startStream(map[string]any{"documents": docs(2, "hook"), "webhook": map[string]any{"url": recv.URL + "/hooks/docrender", "secret": secret}})
	calls := recv.waitCalls(t, 3, time.Minute)
	delivery := calls[0].Header.Get("X-Docrender-Delivery")
	for i, call := range calls {
		h := call.Header
		if delivery == "" || h.Get("X-Docrender-Delivery") != delivery {
			t.Errorf("try %d: delivery ID %q, first was %q", i+1, h.Get("X-Docrender-Delivery"), delivery)
		}
		if got := h.Get("X-Docrender-Signature"); !hmac.Equal([]byte(got), []byte(signature(call.Body, secret))) {
			t.Errorf("try %d: signature %q does not verify", i+1, got)
		}
		if string(call.Body) != string(calls[0].Body) || h.Get("Content-Type") != "application/json" || h.Get("X-Docrender-Event") != "batch.completed" {
			t.Errorf("try %d differs: %s %v", i+1, call.Body, h)
		}
	}
	var payload map[string]any
	if err := json.Unmarshal(calls[0].Body, &payload); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"event": "batch.completed", "batchId": id, "total": 2.0, "current": 2.0, "status": "completed",
		"message":     "Download URL: " + svc.baseURL() + "/pdf/download/" + id,
		"downloadUrl": svc.baseURL() + "/pdf/download/" + id, "zipId": id,
		"expiresAt": payload["expiresAt"], "timestamp": payload["timestamp"],
	}
	if !mapsEqual(payload, want) {
		t.Errorf("payload %v, want %v", payload, want)
	}
	for _, f := range []string{"expiresAt", "timestamp"} {
		if _, err := time.Parse(time.RFC3339, payload[f].(string)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	t.Logf("tries at +0, +%s, +%s", calls[1].At.Sub(calls[0].At), calls[2].At.Sub(calls[0].At))
	// Backoff: about 1 s, then about 2 s.
	g1, g2 := calls[1].At.Sub(calls[0].At), calls[2].At.Sub(calls[1].At)
	if g1 < 800*time.Millisecond || g2 < 1600*time.Millisecond || g2 < g1 {
		t.Errorf("retry gaps %s then %s, want a growing backoff from 1s", g1, g2)
	}
	time.Sleep(2 * time.Second)
	if n := len(recv.snapshot()); n != 3 {
		t.Errorf("%d calls, want 3 (none after the success)", n)
	}
}

// TestWebhookBatchFailed: a failed batch is announced, unsigned when no
// secret was given.
func TestWebhookBatchFailed(t *testing.T) {
	svc := slowService(t)
	c := newClient(t, svc)
	recv := newHookReceiver(t, func(int) int { return http.StatusNoContent })
	ds := []map[string]any{{"fileName": "stuck-0", "htmlContent": stuckHTML}}
	id := c.startStream(map[string]any{"documents": ds, "options": map[string]any{"webhook": map[string]any{"url": recv.URL}}})
	calls := recv.waitCalls(t, 1, time.Minute)
	var payload map[string]any
	if err := json.Unmarshal(calls[0].Body, &payload); err != nil {
		t.Fatal(err)
	}
	if payload["event"] != "batch.failed" || payload["batchId"] != id || payload["status"] != "error" ||
		!failedDocRe.MatchString(payload["message"].(string)) || payload["downloadUrl"] != nil {
		t.Errorf("payload %v", payload)
	}
	if h := calls[0].Header; h.Get("X-Docrender-Signature") != "" || h.Get("X-Docrender-Event") != "batch.failed" {
		t.Errorf("headers %v", h)
	}
}

// TestWebhookSurvivesRestart: a delivery queued and failing when the
// service stops is delivered by the next service on the same data.
func TestWebhookSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	edit := func(cfg *configT) { cfg.WebhookAllowHosts = []string{"127.0.0.1"} }
	svc, stop, err := launch(dir, edit)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	recv := newHookReceiver(t, func(int) int { return http.StatusServiceUnavailable })
	c := newClient(t, svc)
	id := c.startStream(map[string]any{"documents": docs(1, "restart"), "webhook": map[string]any{"url": recv.URL, "secret": "k"}})
	first := recv.waitCalls(t, 1, time.Minute)[0]
	stop()
	stopped = true
	recv.setAnswer(func(int) int { return http.StatusOK })
	before := len(recv.snapshot())

	start := time.Now()
	_, stop2, err := launch(dir, edit)
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	calls := recv.waitCalls(t, before+1, 90*time.Second)
	last := calls[len(calls)-1]
	if last.Status != http.StatusOK || last.Header.Get("X-Docrender-Delivery") != first.Header.Get("X-Docrender-Delivery") ||
		string(last.Body) != string(first.Body) {
		t.Fatalf("after restart: %d %v %s, want the same delivery as before", last.Status, last.Header, last.Body)
	}
	var payload map[string]any
	_ = json.Unmarshal(last.Body, &payload)
	if payload["batchId"] != id {
		t.Errorf("payload %v", payload)
	}
	t.Logf("delivered %s after the restart, try %d", time.Since(start).Round(time.Millisecond), len(calls))
}
