package render

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

// ledgerPages is a ledger of n pages exactly: each page a heading and a
// table of 30 rows, forced onto a page of its own.
func ledgerPages(n int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Ledger</title>
<style>body{font:11px sans-serif} section{break-after:page} section:last-child{break-after:auto}
td,th{border-bottom:1px solid #ccc;padding:2px 6px}</style></head><body>`)
	for p := 1; p <= n; p++ {
		fmt.Fprintf(&b, `<section><h2>Sheet %d</h2><table><thead><tr><th>#</th><th>Date</th><th>Account</th><th>Description</th><th>Amount</th></tr></thead><tbody>`, p)
		for i := range 30 {
			fmt.Fprintf(&b, "<tr><td>%d</td><td>2026-11-%02d</td><td>ACC-%04d</td><td>Line item %d of the ledger</td><td>%d.%02d</td></tr>", p*30+i, i%28+1, (p*7+i)%10000, i+1, i*13%1000, i%100)
		}
		b.WriteString("</tbody></table></section>")
	}
	return b.String() + `</body></html>`
}

var (
	ledgerOnce    sync.Once
	ledgerContent []byte
	ledgerBands   []byte
)

// BenchmarkBands measures the parts of a 1000-page document's global
// header and footer against printing it with them in one piece:
//
//	go test ./render/ -run '^$' -bench Bands -benchtime 1x -timeout 20m
//
// direct and plain print the ledger (tagged) with and without the header
// and footer; bands prints its 1000 bands; stamp draws them over plain's
// PDF.
func BenchmarkBands(b *testing.B) {
	const n = 1000
	r := testRenderer(b)
	doc := egress.Bundle{"index.html": []byte(ledgerPages(n))}
	withHF := &jobspb.Print{HeaderTemplate: bandsHeader, FooterTemplate: `Page <span class="pageNumber"></span> of <span class="totalPages"></span>`}
	render := func(b *testing.B, pr *jobspb.Print) []byte {
		pdf, err := printRender(b, r, doc, roomy, pr, 5*time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if got, err := pdfedit.PageCount(context.Background(), pdf); err != nil || got != n {
			b.Fatalf("%d pages (%v)", got, err)
		}
		return pdf
	}
	prepare := func(b *testing.B) {
		ledgerOnce.Do(func() {
			ledgerContent = render(b, &jobspb.Print{})
			var err error
			if ledgerBands, err = printTestBands(b, r, roomy, withHF, bands{pages: n, title: "Ledger"}); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("direct", func(b *testing.B) {
		for range b.N {
			render(b, withHF)
		}
	})
	b.Run("plain", func(b *testing.B) {
		for range b.N {
			render(b, &jobspb.Print{})
		}
	})
	b.Run("bands", func(b *testing.B) {
		for range b.N {
			if _, err := printTestBands(b, r, roomy, withHF, bands{pages: n, title: "Ledger"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stamp", func(b *testing.B) {
		prepare(b)
		b.ResetTimer()
		for range b.N {
			if _, err := pdfedit.StampBands(context.Background(), ledgerContent, ledgerBands); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(ledgerContent))/1e6, "contentMB")
	})
}
