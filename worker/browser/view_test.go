package browser

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/worker/egress"
)

// viewJS is what a page can tell of its window, and whether an animation
// frame runs (hidden pages run none).
const viewJS = `async () => {
	const raf = await Promise.race([new Promise(r => requestAnimationFrame(() => r(true))), new Promise(r => setTimeout(() => r(false), 2000))]);
	return [innerWidth, innerHeight, outerWidth, outerHeight, screen.width, screen.height, devicePixelRatio,
		visualViewport.scale, screen.orientation.type, screen.orientation.angle, navigator.userAgent, navigator.languages,
		document.visibilityState, matchMedia('(min-width: 1000px)').matches, raf].join(' ');
}`

const viewPage = `<!doctype html><style>@media (min-width: 1000px) { .wide { color: red } }</style>
<h1>View</h1><p class="wide">Wide enough</p><p>Positions must not move.</p>`

// A pool's tab draws its view at drawScale, and nothing else changes: the
// page sees the window of a plain tab of the same browser (size, screen,
// devicePixelRatio, zoom, visible, animation frames run), and prints the
// same PDF, text at the same positions (pdftotext -bbox). What the scale
// saves is measured by BenchmarkDrawScale (nothing a page or CDP can read
// tells it: a screenshot is taken at full size).
func TestViewDrawnSmall(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip(err)
	}
	proxy, lg, logs := testProxy(t)
	p := testPool(t, proxy, lg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var pool, poolPDF string
	err := p.Tab(ctx, func(tab *Tab) error {
		site, done := tab.Lane().(*egress.Lane).Serve(egress.Bundle{"index.html": []byte(viewPage)}, false)
		defer done()
		if err := tab.Navigate(site.URL("index.html")); err != nil {
			return err
		}
		if err := Evaluate(tab.Page(), viewJS, &pool); err != nil {
			return err
		}
		poolPDF = printText(t, tab.Page())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A plain tab of the same browser, in a context of its own, no proxy:
	// the page is written into about:blank.
	b := p.current().browser.Context(ctx)
	bc, err := proto.TargetCreateBrowserContext{}.Call(b)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := proto.TargetCreateTarget{URL: "about:blank", BrowserContextID: bc.BrowserContextID}.Call(b)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := p.current().browser.PageFromTarget(tgt.TargetID)
	if err != nil {
		t.Fatal(err)
	}
	plain = plain.Context(ctx)
	if err := plain.SetDocumentContent(viewPage); err != nil {
		t.Fatal(err)
	}
	var want string
	if err := Evaluate(plain, viewJS, &want); err != nil {
		t.Fatal(err)
	}
	if pool != want {
		t.Errorf("a pool tab's page sees its window as %q, a plain tab's as %q", pool, want)
	}
	// The scale itself shows nowhere but in Chromium's CPU: that the pool
	// set it without an error is what a test can see.
	if strings.Contains(logs.String(), "drawn at full size") {
		t.Errorf("the pool could not draw its tab small:\n%s", logs.String())
	}
	if !strings.Contains(pool, " 1 1 landscape-primary 90 ") || !strings.HasSuffix(pool, " visible true true") {
		t.Errorf("page sees %q, want devicePixelRatio 1, zoom 1, the landscape screen, visible, wide, animation frames", pool)
	}
	if got := printText(t, plain); got != poolPDF {
		t.Errorf("the PDFs differ:\npool tab:\n%s\nplain tab:\n%s", poolPDF, got)
	}
}

// printText prints page as the renderer does (A4, tagged) and returns
// pdftotext's words with their boxes.
func printText(t *testing.T, page *rod.Page) string {
	t.Helper()
	w, h := 210/25.4, 297/25.4
	r, err := page.PDF(&proto.PagePrintToPDF{PaperWidth: &w, PaperHeight: &h, GenerateTaggedPDF: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "view.pdf")
	if err := os.WriteFile(f, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pdftotext", "-q", "-bbox", f, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The title line names the file; the words and boxes are what count.
	var words []byte
	for _, l := range bytes.Split(out, []byte("\n")) {
		if bytes.Contains(l, []byte("<word")) {
			words = append(words, l...)
			words = append(words, '\n')
		}
	}
	if len(words) == 0 {
		t.Fatalf("no words in the PDF:\n%s", out)
	}
	return string(words)
}

// BenchmarkDrawScale measures Chromium's CPU per job (navigation, load,
// print) of a pool tab, as it is and with its view drawn at full size:
//
//	go test -run '^$' -bench DrawScale -benchtime 100x ./worker/browser/
func BenchmarkDrawScale(b *testing.B) {
	proxy, lg, _ := testProxy(b)
	for _, drawn := range []string{"small", "full size"} {
		b.Run(drawn, func(b *testing.B) {
			p := testPool(b, proxy, lg)
			s, inst := <-p.ready, p.current()
			defer func() { p.ready <- s }()
			if drawn == "full size" {
				if err := (proto.EmulationClearDeviceMetricsOverride{}).Call(s.page); err != nil {
					b.Fatal(err)
				}
			}
			site, done := s.lane.(*egress.Lane).Serve(egress.Bundle{"index.html": []byte(busyPage)}, false)
			defer done()
			tab := &Tab{p: p, s: s, ctx: context.Background()}
			job := func() {
				if err := tab.Navigate(site.URL("index.html")); err != nil {
					b.Fatal(err)
				}
				if err := Evaluate(tab.Page(), loadedJS, nil); err != nil {
					b.Fatal(err)
				}
				w, h := 210/25.4, 297/25.4
				r, err := tab.Page().PDF(&proto.PagePrintToPDF{PaperWidth: &w, PaperHeight: &h, GenerateTaggedPDF: true})
				if err != nil {
					b.Fatal(err)
				}
				var buf bytes.Buffer
				buf.ReadFrom(r)
			}
			reportBrowserCPU(b, inst, job)
		})
	}
}

// busyPage fills the view: a styled table, as an invoice or a report is.
var busyPage = func() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><style>body{font:14px sans-serif;background:linear-gradient(#fff,#eef)}
td{padding:4px;border-bottom:1px solid #ccd}tr:nth-child(2n){background:#f4f4fa}</style><h1>Report</h1><table>`)
	for i := range 120 {
		fmt.Fprintf(&b, "<tr><td>Item %d</td><td>Description of item %d, with a few more words</td><td>%d.00</td></tr>", i, i, i*7)
	}
	b.WriteString("</table><script>document.querySelector('h1').textContent += ' ' + new Date().getFullYear()</script>")
	return b.String()
}()

// Every job starts from the same tab, whatever the job before changed: a
// job that set its media type, headers and user agent leaves the next one
// the tab's own (tabDevice), as a fresh tab has them.
func TestEveryJobStartsFromTheSameTab(t *testing.T) {
	proxy, lg, _ := testProxy(t)
	p := testPool(t, proxy, lg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const seenJS = `() => [navigator.userAgent, navigator.languages, matchMedia('print').matches, screen.orientation.angle].join(' | ')`
	seen := func(change bool) string {
		var got string
		err := p.Tab(ctx, func(tab *Tab) error {
			if change {
				if err := tab.EmulateMedia("screen"); err != nil {
					return err
				}
				if err := tab.Override(Overrides{UserAgent: "Job-Agent/1", Headers: map[string]string{"X-Job": "1"}}); err != nil {
					return err
				}
			}
			site, done := tab.Lane().(*egress.Lane).Serve(egress.Bundle{"index.html": []byte("<p>job</p>")}, false)
			defer done()
			if err := tab.Navigate(site.URL("index.html")); err != nil {
				return err
			}
			return Evaluate(tab.Page(), seenJS, &got)
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := seen(false)
	if changed := seen(true); !strings.HasPrefix(changed, "Job-Agent/1 | en | false") {
		t.Fatalf("the changing job saw %q, want its agent, the tab's language, screen media", changed)
	}
	if next := seen(false); next != first {
		t.Errorf("the job after saw %q, a fresh tab's first job %q", next, first)
	}
	if !strings.Contains(first, tabDevice().UserAgent) || !strings.Contains(first, " | en | ") {
		t.Errorf("a fresh tab's job saw %q, want the tab device's agent and language", first)
	}
}
