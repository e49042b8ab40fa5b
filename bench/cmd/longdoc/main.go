// Command longdoc measures DESIGN §10's split printing (issue 24 item 5):
// a long ledger printed by the same embedded service in one piece
// (split: false, one render slot) and in slices (split: true: several tabs
// at once, joined), tagged (the default) and untagged, side by side in one
// run; each PDF's page count is printed with its time, since a cut that is
// not at a page break adds a page.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
)

// ledger is an account statement of about pages A4 pages: sections of 500
// lines, each section starting on a new page, in tables whose head repeats.
func ledger(pages int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Ledger</title>
<style>body{font:11px sans-serif} td,th{border-bottom:1px solid #ccc;padding:2px 6px} h2{break-before:page}</style></head><body><h1>Ledger</h1>`)
	rows := pages * 52
	for s := 0; s*500 < rows; s++ {
		fmt.Fprintf(&b, `<h2 id="s%d">Section %d</h2><table><thead><tr><th>#</th><th>Date</th><th>Account</th><th>Description</th><th>Amount</th></tr></thead><tbody>`, s, s+1)
		for i := s * 500; i < min(rows, (s+1)*500); i++ {
			fmt.Fprintf(&b, "<tr><td>%d</td><td>2026-11-%02d</td><td>ACC-%04d</td><td>Line item number %d of the ledger</td><td>%d.%02d</td></tr>", i+1, i%28+1, i*7%10000, i+1, i*13%1000, i%100)
		}
		b.WriteString("</tbody></table>")
	}
	b.WriteString(`</body></html>`)
	return b.String()
}

var pageRe = regexp.MustCompile(`/Type\s*/Page[^s]`)

func main() {
	pages := flag.Int("pages", 1000, "the ledger's length in pages (about)")
	flag.Parse()
	svc, cfg, stop, err := benchapi.Embedded(map[string]string{
		"DOCRENDER_PLAN_HOBBY_MAX_PAGES": "100000", "DOCRENDER_RENDER_TIMEOUT": "900s",
		"DOCRENDER_MAX_OUTPUT_BYTES": "2147483647", "DOCRENDER_MAX_UPLOAD_BYTES": "209715200",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench longdoc:", err)
		os.Exit(1)
	}
	defer stop()
	api, err := benchapi.New("http://" + svc.App.Addr())
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench longdoc:", err)
		os.Exit(1)
	}
	html := ledger(*pages)
	footer := `"headerTemplate":"<span></span>","footerTemplate":"<div style=\"font-size:8px;margin:auto\">Page <span class=\"pageNumber\"></span> of <span class=\"totalPages\"></span></div>"`
	fmt.Printf("docrender bench longdoc: a ledger of ~%d pages with a \"Page i of n\" footer, one embedded service (DOCRENDER_WORKERS=%d, DOCRENDER_SPLIT_PAGES=%d), c=1\n",
		*pages, cfg.Workers, cfg.SplitPages)
	fmt.Printf("%-9s %-28s | %9s %6s %8s | %s\n", "tagged", "printed", "seconds", "pages", "MB", "vs one piece")
	for _, tagged := range []bool{true, false} {
		var whole time.Duration
		for _, split := range []bool{false, true} {
			opts := fmt.Sprintf(`{"split":%v,"tagged":%v,%s}`, split, tagged, footer)
			start := time.Now()
			pdf, err := api.GenerateWith(html, opts)
			took := time.Since(start)
			name := "in one piece (1 slot)"
			if split {
				name = fmt.Sprintf("in slices (%d slots)", cfg.Workers)
			}
			if err != nil {
				fmt.Printf("%-9v %-28s | failed: %v\n", tagged, name, err)
				continue
			}
			ratio := ""
			if !split {
				whole = took
			} else if whole > 0 {
				ratio = fmt.Sprintf("%.2f× faster", whole.Seconds()/took.Seconds())
			}
			fmt.Printf("%-9v %-28s | %9.1f %6d %8.1f | %s\n", tagged, name, took.Seconds(), len(pageRe.FindAll(pdf, -1)), float64(len(pdf))/1e6, ratio)
		}
	}
}
