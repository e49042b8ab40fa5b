package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"testing"
	"time"
)

// A sync batch names itself before it waits (103 Early Hints with
// X-Batch-Id): a client cut off while waiting (its timeout, a gateway
// restart) still knows the batch it paid for and follows it.
func TestSyncBatchNamesItselfAtOnce(t *testing.T) {
	g := newGateway(t, nil)
	body, _ := json.Marshal(map[string]any{"documents": []map[string]string{
		{"fileName": "a", "htmlContent": "<p>a</p>"}, {"fileName": "b", "htmlContent": "<p>b</p>"}}})
	// Nothing renders in the fake queue: the batch never ends, and the
	// request would wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hints := make(chan textproto.MIMEHeader, 1)
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		if code == http.StatusEarlyHints {
			hints <- h
			cancel() // the client gives up, as one cut off would
		}
		return nil
	}}
	r, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), "POST", g.url+"/pdf/generate-batch", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-API-Key", g.key)
	if resp, err := http.DefaultClient.Do(r); err == nil {
		resp.Body.Close()
		t.Fatalf("the sync batch answered %d before it ended", resp.StatusCode)
	}
	var h textproto.MIMEHeader
	select {
	case h = <-hints:
	default:
		t.Fatal("no 103 Early Hints before the wait")
	}
	id := h.Get("X-Batch-Id")
	if id == "" || !bytes.Contains([]byte(h.Get("Link")), []byte("/pdf/progress/"+id)) {
		t.Fatalf("early hints %v: want X-Batch-Id and a Link to its progress", h)
	}
	p := g.do(req{method: "GET", path: "/pdf/progress/" + id})
	if p.status != http.StatusOK || p.json["status"] != "processing" || p.json["total"] != float64(2) {
		t.Fatalf("the announced batch: %d %s", p.status, p.body)
	}
	if got := g.used(); got != 2 {
		t.Fatalf("conversions used %v, want 2: the batch goes on without its client", got)
	}
}

// A gateway shutting down answers a waiting sync batch with 503, the batch
// named, instead of cutting it off at the end of its grace period.
func TestSyncBatchAnsweredOnShutdown(t *testing.T) {
	g := newGateway(t, nil)
	done := make(chan reply, 1)
	go func() {
		done <- g.do(req{method: "POST", path: "/pdf/generate-batch", body: map[string]any{
			"documents": []map[string]string{{"fileName": "a", "htmlContent": "<p>a</p>"}}}})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for g.srv.batches.watch.watching() == 0 { // the request waits for its batch
		if time.Now().After(deadline) {
			t.Fatal("the sync batch never started waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.srv.StopStreams()
	var a reply
	select {
	case a = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting request was not answered on shutdown")
	}
	id := a.header.Get("X-Batch-Id")
	msg, _ := a.json["message"].(string)
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || id == "" ||
		!bytes.Contains([]byte(msg), []byte("/pdf/progress/"+id)) {
		t.Fatalf("answer on shutdown: %d %v %s", a.status, a.header, a.body)
	}
}
