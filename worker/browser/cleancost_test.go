package browser

import (
	"context"
	"testing"

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
	proxy, lg, _ := testProxy(b)
	page := []byte(`<p id=x>hi</p><script>document.getElementById('x').textContent = new Date().toISOString()</script>`)
	for _, after := range []string{"nothing", "clean", "home"} {
		b.Run("then "+after, func(b *testing.B) {
			// A fresh browser each: a context's cost grows with its jobs.
			p := testPool(b, proxy, lg)
			s, inst := <-p.ready, p.current()
			defer func() { p.ready <- s }()
			job := func() {
				var err error
				site, done := s.lane.(*egress.Lane).Serve(egress.Bundle{"index.html": page}, false)
				defer done()
				tab := &Tab{p: p, s: s, ctx: context.Background()}
				if err := tab.Navigate(site.URL("index.html")); err != nil {
					b.Fatal(err)
				}
				if err := Evaluate(tab.Page(), loadedJS, nil); err != nil {
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
			reportBrowserCPU(b, inst, job)
		})
	}
}
