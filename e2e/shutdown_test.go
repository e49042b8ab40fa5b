package e2e

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// inFlight waits until the process whose ops or API listener is at base
// reports a render in flight.
func inFlight(t *testing.T, base string) {
	t.Helper()
	eventually(t, 30*time.Second, "a render in flight at "+base, func() bool {
		return metricValue(scrape(t, base), "docrender_renders_in_flight") > 0
	})
}

// generateAsync posts html and delivers the response (nil on a transport
// error, which is reported) on the channel.
func (c *client) generateAsync(html string) <-chan *http.Response {
	ch := make(chan *http.Response, 1)
	b := multipartBody([]file{htmlFile("index.html", html)}, nil)
	req, err := http.NewRequest("POST", c.svc.URL+"/pdf/generate", b.r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", b.ctype)
	req.Header.Set("X-API-Key", c.Key)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.t.Errorf("generate: %v", err)
		}
		ch <- resp
	}()
	return ch
}

// expectPDF checks that a response is a PDF containing want.
func expectPDF(t *testing.T, resp *http.Response, want string) {
	t.Helper()
	if resp == nil {
		t.Fatal("no response")
	}
	mustStatus(t, resp, http.StatusOK)
	if txt := text(t, readAll(t, resp)); !strings.Contains(txt, want) {
		t.Fatalf("PDF text %q, want %q", txt, want)
	}
}

// waitExit waits for a started process to exit and returns its exit code.
func waitExit(t *testing.T, p *proc, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		t.Fatalf("process still running %s after SIGTERM:\n%s", limit, tail(p.out.String(), 2000))
		return -1
	}
}

// TestWorkerSIGTERMFinishesItsJob: a worker told to stop finishes the
// render in its hands (the client gets its PDF), takes no new job, and
// exits 0; the job still queued is left for the next worker.
func TestWorkerSIGTERMFinishesItsJob(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	svc := startService(t, func(cfg *configT) {
		cfg.NATSURL, cfg.RedisURL, cfg.QueueNamespace, cfg.DataDir = externalNATS, externalRedis, ns, dir
		cfg.RenderTimeout = 20 * time.Second
	})
	env := splitEnv(ns, dir, map[string]string{"DOCRENDER_WORKERS": "1"})
	ops := freePort(t)
	env["DOCRENDER_WORKER_ADDR"] = ops
	_, wkBin := binaries(t)
	first := startProc(t, wkBin, env)
	waitReady(t, "http://"+ops, first)

	c := newClient(t, svc)
	inHand := c.generateAsync(slowPage)
	inFlight(t, "http://"+ops)
	queued := c.generateAsync(`<p>QUEUED</p>`)
	time.Sleep(300 * time.Millisecond) // the second job is in the queue now
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expectPDF(t, <-inHand, "SURVIVED")
	if code := waitExit(t, first, 30*time.Second); code != 0 {
		t.Fatalf("worker exit code %d", code)
	}
	if n := strings.Count(first.out.String(), `"msg":"job done"`); n != 1 {
		t.Fatalf("the stopping worker finished %d jobs, want only the one in hand", n)
	}
	// The queued job waits for the next worker, which does it.
	startSplitWorkers(t, 1, env)
	expectPDF(t, <-queued, "QUEUED")
	if got := c.billingUsage().ConversionsUsed; got != 2 {
		t.Errorf("conversions used %d, want 2", got)
	}
}

// TestGatewaySIGTERMFinishesRequests: a gateway told to stop refuses new
// connections but answers the requests it holds: a client waiting for a
// slow render still gets its PDF, then the gateway exits 0.
func TestGatewaySIGTERMFinishesRequests(t *testing.T) {
	ns := namespace(t)
	dir := t.TempDir()
	url, gw := startSplitGateway(t, ns, dir)
	_, ops := startSplitWorkers(t, 1, splitEnv(ns, dir, nil))

	c := newClient(t, &service{URL: url})
	pending := c.generateAsync(slowPage)
	inFlight(t, ops[0])
	if err := gw.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Draining (DOCRENDER_DRAIN_DELAY): not ready, yet still serving.
	eventually(t, 3*time.Second, "/readyz answers 503 after SIGTERM", func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	if resp, err := http.Get(url + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("while draining, /healthz: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	expectPDF(t, <-pending, "SURVIVED")
	if code := waitExit(t, gw, 30*time.Second); code != 0 {
		t.Fatalf("gateway exit code %d", code)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("the stopped gateway still answers")
	}
}
