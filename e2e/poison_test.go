package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBatchDocumentThatKillsEveryWorker: in the scaled-out setup, one
// document of a batch kills the worker that renders it, on every delivery
// (the page asks a test server for an image; the test SIGKILLs the worker
// then and starts a fresh one). After the last delivery the document is
// settled from JetStream's max-deliveries advisory: the batch ends `error`,
// the document's conversion is given back, the webhook announces the
// failure and the progress stream closes with an error event. Before issue
// 12 the document stayed in the stream and the batch "processing" for good.
func TestBatchDocumentThatKillsEveryWorker(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	svc, stop, err := launch(dir, func(cfg *configT) {
		cfg.NATSURL, cfg.RedisURL, cfg.QueueNamespace = externalNATS, externalRedis, ns
		cfg.WebhookAllowHosts = []string{"127.0.0.1"}
	})
	if err != nil {
		t.Fatalf("gateway: %v (scripts/setup --test starts NATS and Redis)", err)
	}
	defer stop()

	// The trap: a request for it means a worker holds the poison document.
	trap, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := splitEnv(ns, dir, map[string]string{
		"DOCRENDER_WORKERS":             "1",
		"DOCRENDER_RENDER_ALLOW_HOSTS":  trap.Addr().String(),
		"DOCRENDER_WEBHOOK_ALLOW_HOSTS": "127.0.0.1",
		"DOCRENDER_RENDER_TIMEOUT":      "60s", // the kill, not a timeout, ends each try
	})
	ready, _ := startSplitWorkers(t, 1, env)
	_, wkBin := binaries(t)
	var (
		mu     sync.Mutex
		worker = ready[0]
		kills  int
	)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if err := worker.cmd.Process.Kill(); err == nil {
			_ = worker.cmd.Wait()
			kills++
			t.Logf("worker killed on delivery %d", kills)
		}
		// Not waited for: the next delivery waits for it in the queue.
		worker = startProc(t, wkBin, env)
	})}
	go srv.Serve(trap)
	defer srv.Close()

	recv := newHookReceiver(t, func(int) int { return http.StatusNoContent })
	c := newClient(t, svc)
	poison := `<!doctype html><p>poison</p><img src="http://` + trap.Addr().String() + `/trap.png">`
	ds := append([]map[string]any{{"fileName": "poison", "htmlContent": poison}}, docs(1, "fine")...)
	id := c.startStream(map[string]any{"documents": ds, "webhook": map[string]any{"url": recv.URL}})

	events := readEvents(t, c.openStream(id))
	last := events[len(events)-1]
	if last.Name != "error" || last.Data.Status != "error" || !strings.Contains(last.Data.Message, "poison") {
		t.Fatalf("last event %s %+v, want an error naming the poison document", last.Name, last.Data)
	}
	mu.Lock()
	if kills != 4 {
		t.Errorf("%d deliveries killed their worker, want 4 (every delivery)", kills)
	}
	mu.Unlock()
	calls := recv.waitCalls(t, 1, time.Minute)
	var payload map[string]any
	if err := json.Unmarshal(calls[0].Body, &payload); err != nil {
		t.Fatal(err)
	}
	if payload["event"] != "batch.failed" || payload["batchId"] != id {
		t.Errorf("webhook %v, want batch.failed of %s", payload, id)
	}
	// The fine document may have been rendered before the batch failed
	// (it keeps its conversion then); the poison one is given back.
	eventually(t, 30*time.Second, "the poison document's conversion given back", func() bool { return c.usage() <= 1 })
	if status, p := c.progress(id); status != http.StatusOK || p.Status != "error" {
		t.Errorf("poll after the end: %d %+v", status, p)
	}
}
