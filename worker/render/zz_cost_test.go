package render

// TEMPORARY cost harness (issue 13 item 9): not to be committed.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

var zzInvoice = func() string {
	var rows strings.Builder
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&rows, "<tr><td>%d</td><td>Consulting services, item %d</td><td>%d</td><td>€%d.00</td><td>€%d.00</td></tr>", i, i, i%5+1, 40+i, (40+i)*(i%5+1))
	}
	return `<!doctype html><html><head><meta charset="utf-8"><style>
body { font-family: 'Liberation Sans', sans-serif; color: #222; font-size: 11pt; }
header { display: flex; justify-content: space-between; border-bottom: 3px solid #2a6; padding-bottom: 8px; }
h1 { color: #2a6; margin: 0; }
table { width: 100%; border-collapse: collapse; margin-top: 16px; }
th { background: #2a6; color: white; text-align: left; padding: 4px; }
td { border-bottom: 1px solid #ddd; padding: 4px; }
tr:nth-child(even) td { background: #f4f9f6; }
.total { text-align: right; font-size: 14pt; margin-top: 12px; }
</style></head><body>
<header><div><h1>INVOICE</h1><div>No. 2026-0042</div></div><div>ACME GmbH<br>Hauptstraße 1<br>10115 Berlin</div></header>
<p>Bill to: Example Corp, 1 Market St, San Francisco</p>
<table><thead><tr><th>#</th><th>Description</th><th>Qty</th><th>Unit</th><th>Amount</th></tr></thead><tbody>` + rows.String() + `</tbody></table>
<p class="total"><b>Total due: €4,242.00</b></p><p>Payment within 14 days. Thank you for your business.</p>
<p id="d"></p><script>document.getElementById('d').textContent = 'Issued 2026-11-21';</script></body></html>`
}()

var zzPIDs = map[string]bool{}
var zzMu sync.Mutex

// cpu returns CPU ticks by process kind of the process group pgid.
func zzCPU(pgid int) map[string]int {
	zzMu.Lock()
	defer zzMu.Unlock()
	out := map[string]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 15 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		u, _ := strconv.Atoi(f[11])
		s, _ := strconv.Atoi(f[12])
		cu, _ := strconv.Atoi(f[13])
		cs, _ := strconv.Atoi(f[14])
		out["reaped"] += cu + cs
		kind := "browser"
		cmd, _ := os.ReadFile(d + "/cmdline")
		for _, a := range strings.FieldsFunc(string(cmd), func(r rune) bool { return r == 0 || r == ' ' }) {
			if k, ok := strings.CutPrefix(a, "--type="); ok {
				kind = k
				if strings.Contains(string(cmd), "--utility-sub-type=") {
					kind = "utility"
				}
			}
		}
		out[kind] += u + s
		if kind == "renderer" {
			zzPIDs[d] = true
		}
	}
	return out
}

func zzSelf() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func zzReport(t *testing.T, name string, n int, el time.Duration, before, after map[string]int, self time.Duration) {
	var parts []string
	tot := 0
	for k, v := range after {
		d := v - before[k]
		tot += d
		parts = append(parts, fmt.Sprintf("%s=%.1fms", k, float64(d)*10/float64(n)))
	}
	t.Logf("%-22s %4d jobs %6.1f ms/job wall; chromium CPU %.1f ms/job (%s); go CPU %.1f ms/job", name, n,
		float64(el.Milliseconds())/float64(n), float64(tot)*10/float64(n), strings.Join(parts, " "), float64(self.Milliseconds())/float64(n))
}

func TestZZCost(t *testing.T) {
	if os.Getenv("ZZCOST") == "" {
		t.Skip("ZZCOST not set")
	}
	n, _ := strconv.Atoi(os.Getenv("ZZN"))
	if n == 0 {
		n = 60
	}
	bin, err := browser.FindChromium("")
	if err != nil {
		t.Skip(err)
	}
	var logbuf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logbuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	proxy, err := egress.Start(netguard.New(nil), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	tabs, _ := strconv.Atoi(os.Getenv("ZZTABS"))
	pool, err := browser.Start(context.Background(), browser.Config{Bin: bin, Proxy: proxy.Addr(), HomeURL: egress.HomeURL, Tabs: max(tabs, 1), Log: log,
		NewLane: func() (browser.Lane, error) { return proxy.NewLane() }})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := &Renderer{Pool: pool, Log: log}

	// bare
	l := launcher.New().Bin(bin).Headless(true).Set("no-sandbox").Set("disable-gpu")
	u := l.MustLaunch()
	b := rod.New().ControlURL(u).MustConnect()
	defer func() { b.Close(); l.Kill(); l.Cleanup() }()
	bp := b.MustPage("about:blank")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, zzInvoice)
	}))
	defer srv.Close()
	bare := func() {
		bp.MustNavigate(srv.URL)
		bp.MustWaitLoad()
		w, h, m := 210/25.4, 297/25.4, 1/2.54
		s, err := bp.PDF(&proto.PagePrintToPDF{PrintBackground: true, GenerateTaggedPDF: true, PaperWidth: &w, PaperHeight: &h,
			MarginTop: &m, MarginBottom: &m, MarginLeft: &m, MarginRight: &m})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, s)
	}
	barePG := l.PID()

	page := &jobspb.Page{WidthIn: 8.27, HeightIn: 11.69, MarginTopIn: 0.4, MarginRightIn: 0.4, MarginBottomIn: 0.4, MarginLeftIn: 0.4}
	svc := func(html string) {
		rj := &jobspb.RenderJob{Entry: "index.html", Page: page, Print: &jobspb.Print{}}
		if _, err := r.Render(context.Background(), egress.Bundle{"index.html": []byte(html)}, rj, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	static := strings.Replace(zzInvoice, `<script>document.getElementById('d').textContent = 'Issued 2026-11-21';</script>`, "", 1)
	sides := []struct {
		name string
		fn   func()
		pg   func() int
	}{
		{"service scripted", func() { svc(zzInvoice) }, pool.PID},
		{"bare navigating", bare, func() int { return barePG }},
		{"service static", func() { svc(static) }, pool.PID},
	}
	for round := range 2 {
		for _, s := range sides {
			for range 5 {
				s.fn()
			}
			time.Sleep(300 * time.Millisecond)
			logbuf.Reset()
			clear(zzPIDs)
			before, self := zzCPU(s.pg()), zzSelf()
			stopPoll := make(chan struct{})
			go func() {
				for {
					select {
					case <-stopPoll:
						return
					case <-time.After(20 * time.Millisecond):
						zzCPU(s.pg())
					}
				}
			}()
			start := time.Now()
			for range n {
				s.fn()
			}
			el := time.Since(start)
			close(stopPoll)
			time.Sleep(300 * time.Millisecond) // let the last clean finish
			zzReport(t, fmt.Sprintf("r%d %s", round, s.name), n, el, before, zzCPU(s.pg()), zzSelf()-self)
			t.Logf("   renderer pids seen: %d", len(zzPIDs))
			if s.name == "service scripted" && round == 1 {
				lines := strings.Split(logbuf.String(), "\n")
				for _, ln := range lines[max(0, len(lines)-6):] {
					t.Log(ln)
				}
			}
		}
	}
}
