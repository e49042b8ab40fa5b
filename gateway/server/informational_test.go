package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/pkg/config"
)

// No answer of the gateway is informational (DESIGN §4.20): Python's
// http.client takes any 1xx but 100 as the final answer. A sync batch waits
// without a word, however long its batch takes; the batch goes on, charged,
// when its client gives up.
func TestSyncBatchSendsNoInformationalAnswer(t *testing.T) {
	g := newGateway(t, nil)
	body, _ := json.Marshal(map[string]any{"documents": []map[string]string{
		{"fileName": "a", "htmlContent": "<p>a</p>"}, {"fileName": "b", "htmlContent": "<p>b</p>"}}})
	// Nothing renders in the fake queue: the batch never ends, and the
	// request waits until its client gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var got []int
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
		got = append(got, code)
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
	if len(got) > 0 {
		t.Fatalf("informational answers %v before the batch ended", got)
	}
	if used := g.used(); used != 2 {
		t.Fatalf("conversions used %v, want 2: the batch goes on without its client", used)
	}
}

// The edge drops an informational answer a handler writes, on any route:
// the client reads the real one.
func TestEdgeDropsInformationalAnswers(t *testing.T) {
	addr := edgeServer(t, config.HTTPTimeouts{}, func(c echo.Context) error {
		c.Response().Header().Set("X-Batch-Id", "b1")
		c.Response().Writer.WriteHeader(http.StatusEarlyHints)
		c.Response().Writer.WriteHeader(http.StatusProcessing)
		return c.String(http.StatusOK, "the answer")
	})
	var got []int
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
		got = append(got, code)
		return nil
	}}
	r, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+addr+"/x", nil)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if len(got) > 0 || resp.StatusCode != http.StatusOK || string(b) != "the answer" || resp.Header.Get("X-Batch-Id") != "b1" {
		t.Fatalf("1xx %v, then %d %q %v", got, resp.StatusCode, b, resp.Header)
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
