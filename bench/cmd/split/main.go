// Command split measures what printing a long document in page ranges can
// save (DESIGN §10, issue 24): the same Chromium prints a ledger whole, only
// its first page, and each half, one after the other in one tab, so the
// ratios are of one run on one machine. A slot that loads the whole
// document and prints only its pages (pageRanges) saves what the range
// print saves over the whole print: nothing more.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
)

// ledger is a table of rows rows in sections of 100, the shape of an
// account statement.
func ledger(rows int, paragraphs bool) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Ledger</title>
<style>body{font:11px sans-serif} td,th{border-bottom:1px solid #ccc;padding:2px 6px} p{margin:2px 0}</style></head><body><h1>Ledger</h1>`)
	for s := 0; s*100 < rows; s++ {
		fmt.Fprintf(&b, `<h2 id="s%d">Section %d</h2>`, s, s+1)
		if paragraphs {
			for i := range 100 {
				fmt.Fprintf(&b, "<p>Line %d: booked on 2026-11-%02d to account ACC-%04d, amount %d.%02d.</p>", s*100+i+1, i%28+1, i*7%10000, i*13%1000, i%100)
			}
			continue
		}
		b.WriteString(`<table><thead><tr><th>#</th><th>Date</th><th>Account</th><th>Description</th><th>Amount</th></tr></thead><tbody>`)
		for i := range 100 {
			fmt.Fprintf(&b, "<tr><td>%d</td><td>2026-11-%02d</td><td>ACC-%04d</td><td>Line item number %d of the ledger</td><td>%d.%02d</td></tr>", s*100+i+1, i%28+1, i*7%10000, s*100+i+1, i*13%1000, i%100)
		}
		b.WriteString("</tbody></table>")
	}
	b.WriteString(`</body></html>`)
	return b.String()
}

// pageRe finds Skia's page objects (not the page tree's "/Type /Pages").
var pageRe = regexp.MustCompile(`/Type /Page[^s]`)

func main() {
	bin := flag.String("chromium", "/usr/bin/chromium", "Chromium")
	rows := flag.Int("rows", 20000, "ledger rows (about 54 a page)")
	paragraphs := flag.Bool("paragraphs", false, "lines as paragraphs instead of table rows")
	rounds := flag.Int("rounds", 2, "rounds; the best of each is kept")
	flag.Parse()
	l := launcher.New().Bin(*bin).Headless(true).Set("no-sandbox").Set("disable-gpu")
	u, err := l.Launch()
	if err != nil {
		log.Fatal(err)
	}
	defer l.Kill()
	b := rod.New().ControlURL(u).MustConnect()
	p := b.MustPage("about:blank")
	start := time.Now()
	p.MustSetDocumentContent(ledger(*rows, *paragraphs))
	p.MustWaitLoad()
	load := time.Since(start)
	w, h, m := 210/25.4, 297/25.4, 1/2.54
	print := func(ranges string) (time.Duration, []byte, error) {
		t := time.Now()
		s, err := p.PDF(&proto.PagePrintToPDF{PrintBackground: true, GenerateTaggedPDF: true, PaperWidth: &w, PaperHeight: &h,
			MarginTop: &m, MarginBottom: &m, MarginLeft: &m, MarginRight: &m, PageRanges: ranges, DisplayHeaderFooter: true,
			HeaderTemplate: `<span></span>`, FooterTemplate: `<div style="font-size:8px;margin:auto">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>`})
		if err != nil {
			return time.Since(t), nil, err
		}
		pdf, err := io.ReadAll(s)
		return time.Since(t), pdf, err
	}
	whole, pdf, err := print("")
	if err != nil {
		log.Fatal(err)
	}
	pages := len(pageRe.FindAll(pdf, -1))
	half := fmt.Sprintf("1-%d", pages/2)
	rest := fmt.Sprintf("%d-", pages/2+1)
	best := map[string]time.Duration{"": whole}
	for range *rounds {
		for _, r := range []string{"", "1", half, rest, fmt.Sprint(pages + 1)} {
			d, _, _ := print(r)
			if old, ok := best[r]; !ok || d < old {
				best[r] = d
			}
		}
	}
	fmt.Printf("ledger of %d rows (paragraphs=%v): %d pages, %.1f MB, load %s\n", *rows, *paragraphs, pages, float64(len(pdf))/1e6, load.Round(time.Millisecond))
	fmt.Printf("%-28s %10s %8s\n", "print", "ms", "÷ whole")
	row := func(name, r string) {
		fmt.Printf("%-28s %10.0f %8.2f\n", name, float64(best[r].Milliseconds()), float64(best[r])/float64(best[""]))
	}
	row("whole", "")
	row("page 1 only", "1")
	row("first half ("+half+")", half)
	row("second half ("+rest+")", rest)
	row(fmt.Sprintf("layout only (page %d: none)", pages+1), fmt.Sprint(pages+1))
	two := max(best[half], best[rest])
	fmt.Printf("2 slots printing a half each, at best (no merge): %.2f× the whole print\n", float64(best[""])/float64(two))
	os.Exit(0)
}
