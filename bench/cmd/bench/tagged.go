package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
)

// longTable is a document of about 20 pages: tagging costs in proportion
// to the structure it describes, so a one-page invoice alone would hide it.
func longTable() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>Ledger</title>
<style>body{font:11px sans-serif} td,th{border-bottom:1px solid #ccc;padding:2px 6px}</style></head><body>
<h1>Ledger</h1><table><thead><tr><th>#</th><th>Date</th><th>Account</th><th>Description</th><th>Amount</th></tr></thead><tbody>`)
	for i := range 800 {
		fmt.Fprintf(&b, "<tr><td>%d</td><td>2026-11-%02d</td><td>ACC-%04d</td><td>Line item number %d of the ledger</td><td>%d.%02d</td></tr>",
			i+1, i%28+1, i*7%10000, i+1, i*13%1000, i%100)
	}
	b.WriteString("</tbody></table></body></html>")
	return b.String()
}

// taggedCost measures DESIGN §6's default (tagged PDFs) against
// tagged:false on the same service, alternating, at c=1 and c=max.
func taggedCost(api *benchapi.Client, levels []int, dur time.Duration, rounds int, invoice string) error {
	docs := []struct{ name, html string }{{"invoice (1 page)", invoice}, {"ledger (~20 pages)", longTable()}}
	fmt.Printf("\ntagged PDFs (the default) against tagged:false, same service, alternating\n")
	fmt.Printf("%-20s %-4s | %-24s | %-24s | %-6s | %s\n", "document", "c", "tagged PDFs/s  p50", "untagged PDFs/s  p50", "ratio", "size tagged / untagged")
	for _, d := range docs {
		sizes := [2]int{}
		for i, opts := range []string{"", `{"tagged":false}`} {
			pdf, err := api.GenerateWith(d.html, opts)
			if err != nil {
				return err
			}
			sizes[i] = len(pdf)
		}
		for _, c := range []int{levels[0], levels[len(levels)-1]} {
			var tagged, untagged benchapi.Result
			for range rounds {
				for _, side := range []struct {
					opts string
					into *benchapi.Result
				}{{"", &tagged}, {`{"tagged":false}`, &untagged}} {
					r, err := benchapi.Measure(c, dur/time.Duration(rounds), func(int, int) error {
						_, err := api.GenerateWith(d.html, side.opts)
						return err
					})
					if err != nil {
						return fmt.Errorf("tagged cost, %s at %d: %w", d.name, c, err)
					}
					side.into.Add(r)
				}
			}
			fmt.Printf("%-20s %-4d | %6.1f %8.0fms       | %6.1f %8.0fms         | %5.1f%% | %d KB / %d KB\n", d.name, c,
				tagged.Rate(), benchapi.Ms(tagged.P50()), untagged.Rate(), benchapi.Ms(untagged.P50()), 100*tagged.Rate()/untagged.Rate(),
				sizes[0]/1024, sizes[1]/1024)
		}
	}
	return nil
}
