package browser

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/worker/egress"
)

// BenchmarkCleaning measures what a scripted job's tab costs Chromium (CPU
// of the browser's processes per job, "browser-ms/op"): the job's own
// navigation alone, with the pool's cleaning after it (parked on
// about:blank), and with the way it was cleaned before (home through the
// proxy). docs/benchmarks.md explains the numbers:
//
//	go test -run '^$' -bench Cleaning -benchtime 90x ./worker/browser/
func BenchmarkCleaning(b *testing.B) {
	if _, err := FindChromium(""); err != nil {
		b.Skip(err)
	}
	lg := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	proxy, err := egress.Start(netguard.New(nil), lg)
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	page := []byte(`<p id=x>hi</p><script>document.getElementById('x').textContent = new Date().toISOString()</script>`)
	for _, after := range []string{"nothing", "clean", "home"} {
		b.Run("then "+after, func(b *testing.B) {
			// A fresh browser each: a context's cost grows with its jobs.
			p, err := Start(context.Background(), Config{Proxy: proxy.Addr(), HomeURL: egress.HomeURL, Tabs: 1, Log: lg,
				NewLane: func() (Lane, error) { return proxy.NewLane() }})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			s, inst := <-p.ready, p.current()
			defer func() { p.ready <- s }()
			job := func() {
				site, done := s.lane.(*egress.Lane).Serve(egress.Bundle{"index.html": page}, false)
				defer done()
				tab := &Tab{p: p, s: s, ctx: context.Background()}
				if err := tab.Navigate(site.URL("index.html")); err != nil {
					b.Fatal(err)
				}
				if err := Evaluate(tab.Page(), `async () => { if (document.readyState !== 'complete') await new Promise(r => addEventListener('load', r, {once: true})) }`, nil); err != nil {
					b.Fatal(err)
				}
				switch after {
				case "clean":
					err = p.clean(s, inst)
				case "home":
					err = goHome(s.page, egress.HomeURL)
				}
				if err != nil {
					b.Fatal(err)
				}
				s.lane.Reset()
			}
			job()
			cpu0 := ProcessTreeCPU(inst.proc.PID())
			for b.Loop() {
				job()
			}
			time.Sleep(200 * time.Millisecond) // the browser's own work after the last call
			cpu := ProcessTreeCPU(inst.proc.PID()) - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "browser-ms/op")
		})
	}
}
