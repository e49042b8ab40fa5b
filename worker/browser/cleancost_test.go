package browser

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
			cpu0 := browserCPU(inst.proc.PID())
			for b.Loop() {
				job()
			}
			time.Sleep(200 * time.Millisecond) // the browser's own work after the last call
			cpu := browserCPU(inst.proc.PID()) - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "browser-ms/op")
		})
	}
}

// browserCPU is the CPU time used by root and the processes below it.
func browserCPU(root int) time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	parent, ticks := map[int]int{}, map[int]int64{}
	for _, f := range stats {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < 0 {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
		fields := strings.Fields(s[end+1:])
		if len(fields) < 15 {
			continue
		}
		parent[pid], _ = strconv.Atoi(fields[1])
		for _, k := range fields[11:15] { // utime stime cutime cstime
			v, _ := strconv.ParseInt(k, 10, 64)
			ticks[pid] += v
		}
	}
	var total int64
	for pid, t := range ticks {
		for q := pid; q > 1; q = parent[q] {
			if q == root {
				total += t
				break
			}
		}
	}
	return time.Duration(total) * 10 * time.Millisecond // USER_HZ = 100
}
