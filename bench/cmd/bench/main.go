// Command bench measures docrender against a bare go-rod loop over the same
// Chromium, side by side in one run (make bench). The service runs embedded
// in this process and is driven over real HTTP on loopback; the bare loop
// keeps warm tabs and prints the same HTML with no HTTP, queue or isolation.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/bench/internal/benchapi"
	"github.com/docrender/docrender/e2e/harness"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/pdfium"
)

func main() {
	// A PDFium child process of this one (worker/pdfium) does its work and ends here.
	if pdfium.RunChildIfAsked() {
		return
	}
	levels := flag.String("c", "1,4,8", "concurrency levels")
	dur := flag.Duration("d", 15*time.Second, "measuring time per level and side")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (service and loops) to this file")
	rounds := flag.Int("rounds", 5, "rounds per level: the sides take turns, each measured for d/rounds")
	page := flag.String("page", "invoice", "invoice, or scripted: the invoice with a script, which the service navigates to")
	tagged := flag.Bool("tagged", true, "also measure tagged PDFs (the default) against tagged:false")
	cpuN := flag.Int("cpu", 100, "also measure the CPU per PDF of each side over this many PDFs per level (0: not)")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	html, ok := map[string]string{"invoice": Invoice, "scripted": Scripted}[*page]
	if !ok {
		fmt.Fprintln(os.Stderr, "bench: -page is invoice or scripted")
		os.Exit(2)
	}
	if err := run(*levels, *dur, max(*rounds, 1), *page, html, *tagged, *cpuN); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(levels string, dur time.Duration, rounds int, name, html string, tagged bool, cpuN int) error {
	var cs []int
	maxC := 1
	for _, f := range strings.Split(levels, ",") {
		var c int
		fmt.Sscan(f, &c)
		cs = append(cs, c)
		maxC = max(maxC, c)
	}
	// Every goroutine started below inherits its side's profiler label, so
	// a -cpuprofile tells the service's Go side from the bare loops' rod
	// (go tool pprof -tagfocus side=service).
	var (
		hs   *harness.Service
		cfg  config.Config
		stop func()
		err  error
	)
	pprof.Do(context.Background(), pprof.Labels("side", "service"), func(context.Context) {
		hs, cfg, stop, err = benchapi.Embedded(nil)
	})
	if err != nil {
		return err
	}
	defer stop()
	a := hs.App
	base := "http://" + a.Addr()
	api, err := benchapi.New(base)
	if err != nil {
		return err
	}
	bin, err := browser.FindChromium(cfg.ChromiumPath)
	if err != nil {
		return err
	}
	var (
		pages     []*rod.Page
		barePID   int
		closeBare func()
	)
	pprof.Do(context.Background(), pprof.Labels("side", "bare"), func(context.Context) {
		pages, barePID, closeBare, err = bareBrowser(bin, maxC)
	})
	if err != nil {
		return err
	}
	defer closeBare()

	service := func(int, int) error { return api.Generate(html) }
	bare := func(i, _ int) error { return renderBare(pages[i], html) }
	// A third loop separates the cost of loading the page by navigation
	// (which the service needs: a real origin for relative assets, scripts
	// and fetch) from the rest of the service path.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, html)
	}))
	defer srv.Close()
	bareNav := func(i, _ int) error { return renderBareNavigate(pages[i], srv.URL) }

	fmt.Printf("docrender bench: one-page %s, %s per level and side in %d alternating rounds, DOCRENDER_WORKERS=%d, %s\n", name, dur, rounds, cfg.Workers, bin)
	fmt.Printf("%-4s | %-28s | %-28s | %-7s | %-28s\n", "c", "service PDFs/s  p50  p95", "bare rod PDFs/s  p50  p95", "ratio", "bare rod, navigating: PDFs/s p50")
	for _, c := range cs {
		// The sides take turns in short rounds, so that a change in what
		// else the machine does lands on all of them alike.
		var s, b, n benchapi.Result
		for range rounds {
			for _, side := range []struct {
				name string
				fn   func(client, n int) error
				into *benchapi.Result
			}{{"service", service, &s}, {"bare", bare, &b}, {"bare navigating", bareNav, &n}} {
				r, err := benchapi.Measure(c, dur/time.Duration(rounds), side.fn)
				if err != nil {
					return fmt.Errorf("%s at %d: %w", side.name, c, err)
				}
				side.into.Add(r)
			}
		}
		fmt.Printf("%-4d | %6.1f %6.0fms %6.0fms     | %6.1f %6.0fms %6.0fms       | %5.1f%%  | %6.1f %6.0fms\n", c,
			s.Rate(), benchapi.Ms(s.P50()), benchapi.Ms(s.P95()), b.Rate(), benchapi.Ms(b.P50()), benchapi.Ms(b.P95()), 100*s.Rate()/b.Rate(), n.Rate(), benchapi.Ms(n.P50()))
	}
	if cpuN > 0 {
		err := cpuTable(cs, cpuN, []cpuSide{{"service", hs.Worker.Pool().PID(), service},
			{"bare rod", barePID, bare}, {"bare rod, navigating", barePID, bareNav}})
		if err != nil {
			return err
		}
	}
	if tagged {
		return taggedCost(api, cs, dur, rounds, html)
	}
	return nil
}

// bareBrowser launches the same Chromium with n warm tabs; pid is its
// process.
func bareBrowser(bin string, n int) (pages []*rod.Page, pid int, stop func(), err error) {
	l := launcher.New().Bin(bin).Headless(true).Set("no-sandbox").Set("disable-gpu")
	u, err := l.Launch()
	if err != nil {
		return nil, 0, nil, err
	}
	b := rod.New().ControlURL(u)
	if err := b.Connect(); err != nil {
		l.Kill()
		return nil, 0, nil, err
	}
	pages = make([]*rod.Page, n)
	for i := range pages {
		if pages[i], err = b.Page(proto.TargetCreateTarget{URL: "about:blank"}); err != nil {
			l.Kill()
			return nil, 0, nil, err
		}
	}
	return pages, l.PID(), func() { b.Close(); l.Kill(); l.Cleanup() }, nil
}

// renderBareNavigate loads the same HTML by navigating to a loopback server.
func renderBareNavigate(p *rod.Page, url string) error {
	if err := p.Navigate(url); err != nil {
		return err
	}
	return printInvoice(p)
}

func renderBare(p *rod.Page, html string) error {
	if err := p.SetDocumentContent(html); err != nil {
		return err
	}
	return printInvoice(p)
}

func printInvoice(p *rod.Page) error {
	if err := p.WaitLoad(); err != nil {
		return err
	}
	w, h, m := 210/25.4, 297/25.4, 1/2.54
	// Tagged, as the service prints by default (DESIGN §6): like for like.
	s, err := p.PDF(&proto.PagePrintToPDF{PrintBackground: true, GenerateTaggedPDF: true, PaperWidth: &w, PaperHeight: &h,
		MarginTop: &m, MarginBottom: &m, MarginLeft: &m, MarginRight: &m})
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, s)
	return err
}
