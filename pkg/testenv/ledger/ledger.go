// Package ledger writes the long document the long-document benchmarks
// and tests print (bench/cmd/longdoc, worker/render's slice dumps): one
// ledger, so that their pages and figures are of the same document.
package ledger

import (
	"fmt"
	"strings"
)

// HTML is an account statement of about pages A4 pages: sections of 500
// lines, each section starting on a new page, in tables whose head repeats.
func HTML(pages int) string {
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
