package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBatchSurvivesWorkerKill: in the scaled-out setup (the machine's NATS
// 2.9 and Redis, two bin/worker processes sharing the blob directory), one
// worker is SIGKILLed mid-batch; JetStream redelivers its job after the ack
// wait and the batch completes with every document exactly once.
func TestBatchSurvivesWorkerKill(t *testing.T) {
	_, wkBin := binaries(t)
	ns := namespace(t)
	dir := t.TempDir()
	svc, stop, err := launch(dir, func(cfg *configT) {
		cfg.NATSURL, cfg.RedisURL, cfg.QueueNamespace = externalNATS, externalRedis, ns
	})
	if err != nil {
		t.Fatalf("gateway: %v (scripts/setup --test starts NATS and Redis)", err)
	}
	defer stop()
	env := splitEnv(ns, dir, map[string]string{"DOCRENDER_WORKERS": "1", "DOCRENDER_RENDER_TIMEOUT": "20s"})
	victim := startProc(t, wkBin, env)
	other := startProc(t, wkBin, env)
	eventually(t, 30*time.Second, "both workers ready", func() bool {
		return strings.Contains(victim.out.String(), "worker ready") && strings.Contains(other.out.String(), "worker ready")
	})

	c := newClient(t, svc)
	const n = 8
	id := c.startStream(map[string]any{"documents": slowDocs(n, 1500, "split")})
	// Once the first document is done, each worker is in the middle of its next one.
	eventually(t, time.Minute, "first document done", func() bool {
		_, p := c.progress(id)
		return p.Current >= 1
	})
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p, seen := c.waitBatch(id, n, 3*time.Minute)
	if p.Status != "completed" || p.Current != n {
		t.Fatalf("final %+v", p)
	}
	t.Logf("completed %s after the kill; current went %v", time.Since(start).Round(time.Second), seen)
	resp := c.withKey("GET", svc.local(t, strings.TrimPrefix(p.Message, "Download URL: ")), body{})
	mustStatus(t, resp, http.StatusOK)
	checkZip(t, readAll(t, resp), entryNames(n, "split"), markers(n))
	if got := c.usage(); got != n {
		t.Errorf("conversions used %d, want %d", got, n)
	}
	if !strings.Contains(other.out.String(), "batch completed") {
		t.Errorf("the surviving worker did not complete the batch:\n%s", tail(other.out.String(), 2000))
	}
}
