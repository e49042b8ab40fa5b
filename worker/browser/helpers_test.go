package browser

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/testenv/syncbuf"
	"github.com/docrender/docrender/worker/egress"
)

// loadedJS waits for the page's load event.
const loadedJS = `async () => { if (document.readyState !== 'complete') await new Promise(r => addEventListener('load', r, {once: true})) }`

// logBuffer keeps what a logger wrote, for a test to read.
type logBuffer = syncbuf.Buffer

// testProxy starts an egress proxy for this package's tests, or skips
// without a Chromium; the logger it returns, for the pool too, writes to
// logs.
func testProxy(tb testing.TB) (proxy *egress.Proxy, lg *slog.Logger, logs *logBuffer) {
	tb.Helper()
	if _, err := FindChromium(""); err != nil {
		tb.Skip(err)
	}
	logs = &logBuffer{}
	lg = slog.New(slog.NewTextHandler(logs, nil))
	proxy, err := egress.Start(netguard.New(nil), lg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { proxy.Close() })
	return proxy, lg, logs
}

// testPool starts a pool of one tab, a browser of its own, on proxy; it
// is closed when tb ends.
func testPool(tb testing.TB, proxy *egress.Proxy, lg *slog.Logger) *Pool {
	tb.Helper()
	p, err := Start(context.Background(), Config{Proxy: proxy.Addr(), HomeURL: egress.HomeURL, Tabs: 1, Log: lg,
		NewLane: func() (Lane, error) { return proxy.NewLane() }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// reportBrowserCPU runs job once, then b.N times, and reports the CPU of
// inst's browser processes per run ("browser-ms/op").
func reportBrowserCPU(b *testing.B, inst *instance, job func()) {
	job()
	cpu0 := ProcessTreeCPU(inst.proc.PID())
	for b.Loop() {
		job()
	}
	time.Sleep(200 * time.Millisecond) // the browser's own work after the last call
	cpu := ProcessTreeCPU(inst.proc.PID()) - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "browser-ms/op")
}
