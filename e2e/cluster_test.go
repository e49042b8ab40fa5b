package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCluster runs the API and its faults against docrender scaled out by
// scripts/cluster-up (two gateways, three workers, the machine's NATS and
// Redis, a MinIO), through either gateway. The subtests share one cluster
// and run in order; each fault subtest puts the cluster back together with
// cluster-up, which restarts what died. Every fault subtest checks that
// each document arrives exactly once and is counted exactly once.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five processes and three browsers")
	}
	cl := clusterUp(t)
	t.Run("API through either gateway", func(t *testing.T) { clusterAPI(t, cl) })
	t.Run("worker SIGKILL mid 100-document batch", func(t *testing.T) { clusterWorkerKill(t, cl) })
	t.Run("Chromium SIGKILL mid-render", func(t *testing.T) { clusterChromiumKill(t, cl) })
	t.Run("gateway restart while SSE is watched", func(t *testing.T) { clusterGatewayRestart(t, cl) })
}

// clusterAPI: generate, merge, host and batch, each through one gateway
// and read back through the other.
func clusterAPI(t *testing.T, cl *cluster) {
	a, b := cl.gateways[0], cl.gateways[1]
	ca := newClient(t, a)
	cb := ca.on(b)

	first := ca.generatePDF(`<h1>CLUSTERA</h1>`, nil)
	second := cb.generatePDF(`<h1>CLUSTERB</h1>`, nil)
	resp := cb.merge([]file{pdfFile("a.pdf", first), pdfFile("b.pdf", second)}, nil)
	mustStatus(t, resp, http.StatusOK)
	merged := readAll(t, resp)
	if pi := info(t, merged); pi.Pages != 2 {
		t.Fatalf("merged %d pages, want 2", pi.Pages)
	}
	if txt := text(t, merged); !strings.Contains(txt, "CLUSTERA") || !strings.Contains(txt, "CLUSTERB") {
		t.Fatalf("merged text %q", txt)
	}

	// A template stored through A, filled through B by a worker process
	// reading its files from MinIO (DESIGN §9); a PDF/A from B (§8).
	ca.uploadTemplate("cluster-tpl", map[string]string{"index.html": `<html lang="en"><body><h1>TPL {{who}}</h1></body></html>`}, "")
	resp = cb.generateTemplate(map[string]any{"template": "cluster-tpl", "data": map[string]any{"who": "FROM-B"}})
	mustStatus(t, resp, http.StatusOK)
	if txt := text(t, readAll(t, resp)); !strings.Contains(txt, "TPL FROM-B") {
		t.Fatalf("template text %q", txt)
	}
	checkRecordPDF(t, cb.generatePDF(recordPage, map[string]any{"pdfa": "3u", "pdfua": true}), "3u", true)

	// Hosted through A, read through B: one state store, one bucket.
	h := ca.host(`<h1>HOSTEDX</h1>`, nil)
	for _, path := range []string{"/api/hosted-pdfs/" + h.PdfID, "/pdf/view/" + h.PdfID} {
		status, _, pdf := get(t, b.URL+path, nil)
		if status != http.StatusOK || !strings.Contains(text(t, pdf), "HOSTEDX") {
			t.Fatalf("GET %s through the other gateway: %d", path, status)
		}
	}
	if m := cb.metadata(h.PdfID); m.Downloads != 2 {
		t.Errorf("downloads %d after two reads through the other gateway, want 2", m.Downloads)
	}

	// A batch through A with its progress stream on A, polled through B.
	const n = 6
	id := ca.startStream(map[string]any{"documents": slowDocs(n, 700, "both")})
	streamed := make(chan []sseEvent, 1)
	go func() {
		evs, _ := readStream(a.URL, ca.Key, id, nil)
		streamed <- evs
	}()
	p, seen := cb.waitBatch(id, n, 2*time.Minute)
	if p.Status != "completed" || p.Current != n {
		t.Fatalf("final %+v", p)
	}
	evs := <-streamed
	if len(evs) < 2 || evs[len(evs)-1].Name != "complete" || evs[len(evs)-1].Data != p {
		t.Fatalf("stream on A: %v, want progress events then complete %+v", evs, p)
	}
	t.Logf("polls through B saw %v; the stream on A sent %d events", seen, len(evs))
	resp = cb.withKey("GET", "/pdf/download/"+id, body{})
	mustStatus(t, resp, http.StatusOK)
	checkZip(t, readAll(t, resp), entryNames(n, "both"), markers(n))
	// generate ×2, host, the template render, the PDF/A; the merge; the batch.
	if got := cb.billingUsage().ConversionsUsed; got != 5+1+n {
		t.Errorf("conversions used %d, want %d", got, 5+1+n)
	}
}

// soak reports whether the heavy variants run (make soak, DOCRENDER_SOAK=1).
func soak() bool { return os.Getenv("DOCRENDER_SOAK") != "" }

// clusterWorkerKill: a worker is SIGKILLed while a 100-document batch
// runs (under make soak: 400 documents, and a second worker killed later);
// JetStream redelivers their jobs after the ack wait.
func clusterWorkerKill(t *testing.T, cl *cluster) {
	c := newClient(t, cl.gateways[1])
	n, plan, kills := 100, "pro", []int{20} // hobby batches stop at 10 documents
	if soak() {
		n, plan, kills = 400, "enterprise", []int{20, 200}
	}
	c.changePlan(plan)
	id := c.startStream(map[string]any{"documents": docs(n, "hundred")})
	var victims []int
	for i, at := range kills {
		eventually(t, 3*time.Minute, fmt.Sprintf("%d documents done", at), func() bool {
			_, p := c.progress(id)
			return p.Current >= at
		})
		victims = append(victims, cl.workerPIDs[i])
		signalAndWait(t, cl.workerPIDs[i], syscall.SIGKILL, 10*time.Second)
	}
	start := time.Now()
	p, _ := c.on(cl.gateways[0]).waitBatch(id, n, 5*time.Minute)
	if p.Status != "completed" || p.Current != n {
		t.Fatalf("final %+v", p)
	}
	t.Logf("%d documents completed %s after the last kill", n, time.Since(start).Round(100*time.Millisecond))
	resp := c.withKey("GET", "/pdf/download/"+id, body{})
	mustStatus(t, resp, http.StatusOK)
	checkZip(t, readAll(t, resp), entryNames(n, "hundred"), markers(n))
	if got := c.billingUsage().ConversionsUsed; got != int64(n) {
		t.Errorf("conversions used %d, want %d", got, n)
	}
	cl.up(t)
	for i, v := range victims {
		if cl.workerPIDs[i] == v {
			t.Fatalf("cluster-up did not restart killed worker %d", i+1)
		}
	}
}

// clusterChromiumKill: the browser of a worker that is rendering is
// SIGKILLed; the worker relaunches it and the job is tried again.
func clusterChromiumKill(t *testing.T, cl *cluster) {
	c := newClient(t, cl.gateways[0])
	const n = 6
	id := c.startStream(map[string]any{"documents": slowDocs(n, 2000, "chrome")})
	busy := -1
	eventually(t, time.Minute, "a worker rendering", func() bool {
		for i, u := range cl.workerURLs {
			if metricValue(scrape(t, u), "docrender_renders_in_flight", "kind", "batch_document") > 0 {
				busy = i
				return true
			}
		}
		return false
	})
	chrome := chromiumOf(t, cl.workerPIDs[busy])
	signalAndWait(t, chrome, syscall.SIGKILL, 10*time.Second)
	p, _ := c.waitBatch(id, n, 3*time.Minute)
	if p.Status != "completed" || p.Current != n {
		t.Fatalf("final %+v", p)
	}
	resp := c.on(cl.gateways[1]).withKey("GET", "/pdf/download/"+id, body{})
	mustStatus(t, resp, http.StatusOK)
	checkZip(t, readAll(t, resp), entryNames(n, "chrome"), markers(n))
	if got := c.billingUsage().ConversionsUsed; got != n {
		t.Errorf("conversions used %d, want %d", got, n)
	}
	if r := metricValue(scrape(t, cl.workerURLs[busy]), "docrender_browser_restarts_total"); r < 1 {
		t.Errorf("worker %d reports %v browser restarts, want ≥ 1", busy+1, r)
	}
	if !strings.Contains(cl.workerLog(busy), "chromium unresponsive, relaunching") {
		t.Errorf("worker %d did not log the relaunch", busy+1)
	}
}

// clusterGatewayRestart: the gateway serving a progress stream stops
// (gracefully, or killed); the client reconnects to the other gateway and
// sees the batch complete.
func clusterGatewayRestart(t *testing.T, cl *cluster) {
	tests := []struct {
		name   string
		signal syscall.Signal
		soak   bool // make test leaves it out: TestSSEEndsOnShutdown covers the graceful end
	}{
		{"SIGKILL", syscall.SIGKILL, false},
		{"SIGTERM", syscall.SIGTERM, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.soak && !soak() {
				t.Skip("make soak runs it")
			}
			c := newClient(t, cl.gateways[0])
			c.changePlan("pro")
			const n = 12
			id := c.startStream(map[string]any{"documents": slowDocs(n, 1500, "sse")})
			opened := make(chan struct{})
			type followed struct {
				events []sseEvent
				used   []int
				err    error
			}
			done := make(chan followed, 1)
			go func() {
				evs, used, err := sseFollow(cl.gateways, c.Key, id, 0, opened)
				done <- followed{evs, used, err}
			}()
			select {
			case <-opened:
			case <-time.After(30 * time.Second):
				t.Fatal("no event on the first gateway")
			}
			took := signalAndWait(t, cl.gatewayPID(t, 0), tc.signal, 70*time.Second)
			t.Logf("gateway 1 gone %s after %s", took.Round(10*time.Millisecond), tc.name)
			f := <-done
			if f.err != nil {
				t.Fatal(f.err)
			}
			last := f.events[len(f.events)-1]
			if last.Name != "complete" || last.Data.Current != n {
				t.Fatalf("last event %s %+v", last.Name, last.Data)
			}
			if len(f.used) < 2 || f.used[len(f.used)-1] != 1 {
				t.Fatalf("gateways read from %v, want the stream to end on gateway 2", f.used)
			}
			prev := 0
			for _, e := range f.events {
				if e.Data.Current < prev {
					t.Fatalf("current went back from %d to %d", prev, e.Data.Current)
				}
				prev = e.Data.Current
			}
			other := c.on(cl.gateways[1])
			resp := other.withKey("GET", "/pdf/download/"+id, body{})
			mustStatus(t, resp, http.StatusOK)
			checkZip(t, readAll(t, resp), entryNames(n, "sse"), markers(n))
			if got := other.billingUsage().ConversionsUsed; got != n {
				t.Errorf("conversions used %d, want %d", got, n)
			}
			old := cl.gatewayPID(t, 0)
			cl.up(t)
			if cl.gatewayPID(t, 0) == old {
				t.Fatal("cluster-up did not restart the stopped gateway")
			}
		})
	}
}
