package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestIdempotencyKeyThroughTheService: every route that creates work,
// through the real gateway, queue and Chromium (DESIGN §4.20). The same
// keyed request sent again while it runs joins it, and once done is
// answered again with the same bytes, hosted file or batch, charged once; a
// failed one is judged afresh; another request under the key is a 409.
func TestIdempotencyKeyThroughTheService(t *testing.T) {
	svc := sharedService(t)
	key := func(k string) map[string]string { return map[string]string{"Idempotency-Key": k} }
	// send posts b with header h and the API key, and reads the answer whole.
	send := func(c *client, path string, b func() body, h map[string]string) (*http.Response, []byte) {
		t.Helper()
		h2 := map[string]string{"X-API-Key": c.Key}
		for k, v := range h {
			h2[k] = v
		}
		resp := c.do("POST", path, b(), h2)
		return resp, readAll(t, resp)
	}

	t.Run("sync batch joined and answered again", func(t *testing.T) {
		c := newClient(t, svc)
		docs := []map[string]any{
			{"fileName": "a", "htmlContent": "<h1>IDEM A</h1>"},
			{"fileName": "b", "htmlContent": "<h1>IDEM B</h1>", "waitDelay": "500ms"},
		}
		b := func() body { return jsonBody(map[string]any{"documents": docs}) }
		var wg sync.WaitGroup
		answers := make([][]byte, 2)
		resps := make([]*http.Response, 2)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resps[i], answers[i] = send(c, "/pdf/generate-batch", b, key("batch-1"))
			}()
		}
		wg.Wait()
		for i, r := range resps {
			if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/zip" {
				t.Fatalf("answer %d: %d %s %.200s", i, r.StatusCode, r.Header.Get("Content-Type"), answers[i])
			}
		}
		if !bytes.Equal(answers[0], answers[1]) || resps[0].Header.Get("X-Batch-Id") != resps[1].Header.Get("X-Batch-Id") {
			t.Fatal("the two copies got different batches")
		}
		names, files := unzip(t, answers[0])
		if len(names) != 2 || !bytes.Contains([]byte(text(t, files["b.pdf"])), []byte("IDEM B")) {
			t.Fatalf("ZIP holds %v", names)
		}
		again, zip := send(c, "/pdf/generate-batch", b, key("batch-1"))
		if again.StatusCode != http.StatusOK || !bytes.Equal(zip, answers[0]) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the retry after the end: %d, same ZIP %v, replayed %q", again.StatusCode, bytes.Equal(zip, answers[0]), again.Header.Get("Idempotent-Replayed"))
		}
		if n := c.usage(); n != 2 {
			t.Fatalf("conversions used %d, want 2 (one batch of two)", n)
		}
	})

	t.Run("hosted generate and merge answered again", func(t *testing.T) {
		c := newClient(t, svc)
		gen := func() body {
			return multipartBody([]file{htmlFile("index.html", "<h1>IDEM hosted</h1>")}, map[string]any{"host": true})
		}
		r1, b1 := send(c, "/pdf/generate", gen, key("gen-1"))
		r2, b2 := send(c, "/pdf/generate", gen, key("gen-1"))
		var h1, h2 struct{ PdfID, URL string }
		_ = json.Unmarshal(b1, &h1)
		_ = json.Unmarshal(b2, &h2)
		if r1.StatusCode != 200 || r2.StatusCode != 200 || h1.PdfID == "" || h1.PdfID != h2.PdfID || r2.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("hosted answers %s / %s", b1, b2)
		}
		pdf := c.generatePDF("<h1>IDEM part</h1>", nil)
		merge := func() body {
			return multipartBody([]file{{Field: "files", Name: "a.pdf", Type: "application/pdf", Data: pdf},
				{Field: "files", Name: "b.pdf", Type: "application/pdf", Data: pdf}}, nil)
		}
		m1, mb1 := send(c, "/pdf/merge", merge, key("merge-1"))
		m2, mb2 := send(c, "/pdf/merge", merge, key("merge-1"))
		if m1.StatusCode != 200 || m2.StatusCode != 200 || !bytes.Equal(mb1, mb2) || info(t, mb2).Pages != 2 || m2.Header.Get("X-PDF-Pages") != "2" {
			t.Fatalf("merge answers %d / %d, same %v", m1.StatusCode, m2.StatusCode, bytes.Equal(mb1, mb2))
		}
		if n := c.usage(); n != 3 {
			t.Fatalf("conversions used %d, want 3 (a generate, a merge, the merge's input)", n)
		}
	})

	t.Run("failure judged afresh, conflict, bad key", func(t *testing.T) {
		c := newClient(t, svc)
		noHTML := func() body {
			return multipartBody([]file{{Field: "files", Name: "a.css", Type: "text/css", Data: []byte("p{}")}}, nil)
		}
		resp, _ := send(c, "/pdf/generate", noHTML, key("k"))
		if resp.StatusCode != 400 {
			t.Fatalf("no HTML: %d", resp.StatusCode)
		}
		ok := func() body { return multipartBody([]file{htmlFile("index.html", "<h1>IDEM ok</h1>")}, nil) }
		resp, pdf := send(c, "/pdf/generate", ok, key("k"))
		if resp.StatusCode != 200 || !bytes.Contains([]byte(text(t, pdf)), []byte("IDEM ok")) {
			t.Fatalf("after a 400 the key runs afresh: %d", resp.StatusCode)
		}
		// A failure after the key was claimed (the render's check): not
		// kept, the retry renders again, nothing charged.
		failing := func() body {
			return multipartBody([]file{htmlFile("index.html", `<h1>IDEM fails</h1><script>console.error("boom")</script>`)},
				map[string]any{"failOnConsoleErrors": true})
		}
		for range 2 {
			resp, _ := send(c, "/pdf/generate", failing, key("fails"))
			if resp.StatusCode != 422 || resp.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("failing render: %d, replayed %q", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
			}
		}
		// A batch that fails: the retry starts a batch of its own.
		failingBatch := func() body {
			return jsonBody(map[string]any{"options": map[string]any{"failOnConsoleErrors": true},
				"documents": []map[string]any{{"fileName": "x", "htmlContent": `<script>console.error("boom")</script>`}}})
		}
		b1, _ := send(c, "/pdf/generate-batch", failingBatch, key("failing-batch"))
		b2, _ := send(c, "/pdf/generate-batch", failingBatch, key("failing-batch"))
		if b1.StatusCode != 500 || b2.StatusCode != 500 || b1.Header.Get("X-Batch-Id") == b2.Header.Get("X-Batch-Id") ||
			b2.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("failed batch retried: %d %s / %d %s replayed %q", b1.StatusCode, b1.Header.Get("X-Batch-Id"),
				b2.StatusCode, b2.Header.Get("X-Batch-Id"), b2.Header.Get("Idempotent-Replayed"))
		}
		if n := c.usage(); n != 1 {
			t.Fatalf("conversions used %d, want 1 (the one PDF; failures give back)", n)
		}
		other := func() body { return multipartBody([]file{htmlFile("index.html", "<h1>IDEM other</h1>")}, nil) }
		r := c.do("POST", "/pdf/generate", other(), map[string]string{"X-API-Key": c.Key, "Idempotency-Key": "k"})
		if e := expectError(t, r, http.StatusConflict, "CONFLICT"); e.Raw["field"] != "Idempotency-Key" {
			t.Fatalf("conflict names %v", e.Raw["field"])
		}
		r = c.do("POST", "/pdf/generate", other(), map[string]string{"X-API-Key": c.Key, "Idempotency-Key": string(bytes.Repeat([]byte("x"), 256))})
		if e := expectError(t, r, http.StatusBadRequest, "BAD_REQUEST"); e.Raw["field"] != "Idempotency-Key" {
			t.Fatalf("bad key names %v", e.Raw["field"])
		}
	})
}

// A client cut off while its sync batch runs, by its own timeout and then a
// restart of the service, sends the same request again with its
// Idempotency-Key and gets the batch it paid for, charged once (DESIGN
// §4.20: what the 103 was meant to serve).
func TestIdempotentBatchSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	svc, stop, err := launch(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, svc)
	docs := []map[string]any{
		{"fileName": "a", "htmlContent": "<h1>RESTART A</h1>", "waitDelay": "1500ms"},
		{"fileName": "b", "htmlContent": "<h1>RESTART B</h1>", "waitDelay": "1500ms"},
	}
	post := func(svc *service, ctx context.Context) (*http.Response, error) {
		r, _ := http.NewRequestWithContext(ctx, "POST", svc.URL+"/pdf/generate-batch", jsonBody(map[string]any{"documents": docs}).r)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-API-Key", c.Key)
		r.Header.Set("Idempotency-Key", "restart-1")
		return http.DefaultClient.Do(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		resp, err := post(svc, ctx)
		if err == nil {
			resp.Body.Close()
		}
		gone <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for c.usage() < 2 { // the batch started: both documents reserved
		if time.Now().After(deadline) {
			t.Fatal("the batch never started")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel() // the client gives up
	if err := <-gone; err == nil {
		t.Fatal("the cut-off request was answered")
	}
	stop() // and the service restarts

	svc2, stop2, err := launch(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer rcancel()
	resp, err := post(svc2, rctx)
	if err != nil {
		t.Fatal(err)
	}
	zip := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry after the restart: %d, replayed %q: %.300s", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), zip)
	}
	names, files := unzip(t, zip)
	if len(names) != 2 || !strings.Contains(text(t, files["a.pdf"]), "RESTART A") {
		t.Fatalf("ZIP holds %v", names)
	}
	c2 := *c
	c2.svc = svc2
	if n := c2.usage(); n != 2 {
		t.Fatalf("conversions used %d, want 2: the batch charged once", n)
	}
}
