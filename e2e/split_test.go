package e2e

import (
	"strings"
	"testing"
)

// The same binaries run split: bin/gateway without workers and bin/worker
// as a separate process, against the machine's NATS (JetStream) and Redis.
func TestSplitGatewayAndWorker(t *testing.T) {
	_, wkBin := binaries(t)
	ns := namespace(t)
	data := t.TempDir()
	url, gw := startSplitGateway(t, ns, data)
	wk := startProc(t, wkBin, splitEnv(ns, data, nil))

	svc := &service{URL: url}
	c := newClient(t, svc)
	pdf := c.generatePDF(`<h1>SPLITMODE</h1>`, map[string]any{"format": "Letter"})
	if pi := info(t, pdf); !near(pi.Width, 612, 1.5) || !strings.Contains(text(t, pdf), "SPLITMODE") {
		t.Fatalf("bad PDF: %+v %q", pi, text(t, pdf))
	}
	// The render happened in the worker process, not in the gateway.
	if !strings.Contains(wk.out.String(), `"msg":"job done"`) {
		t.Fatalf("worker log shows no job:\n%s", tail(wk.out.String(), 2000))
	}
	if strings.Contains(gw.out.String(), "chromium started") {
		t.Fatal("the gateway started a browser in split mode")
	}
}
