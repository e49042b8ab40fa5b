// Command record measures what DESIGN §8's steps (PDF/A, PDF/UA, an
// e-invoice, a signature B-B and B-T) add to a render, side by side with
// the plain render on the same embedded service, alternating in short
// rounds: a one-page invoice and a ~20-page ledger at c=1, p50 and the
// ratio to the plain render. Issue 22's goal: all of §8 together adds at
// most 20% to the invoice.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"mime/multipart"
	"os"
	"strings"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
	"github.com/docrender/docrender/pkg/signids"
	"github.com/docrender/docrender/worker/pdfium"
	"github.com/docrender/docrender/worker/sign/signtest"
)

const adminToken = "bench-admin-token-0123456789"

// cii is a minimal Factur-X (CII) invoice.
const cii = `<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"><rsm:ExchangedDocument/></rsm:CrossIndustryInvoice>`

func main() {
	// A PDFium child process of this one (worker/pdfium) does its work and ends here.
	if pdfium.RunChildIfAsked() {
		return
	}
	dur := flag.Duration("d", 6*time.Second, "measuring time per variant and document")
	rounds := flag.Int("rounds", 3, "rounds: the variants take turns, each measured for d/rounds")
	flag.Parse()
	if err := run(*dur, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench record:", err)
		os.Exit(1)
	}
}

func run(dur time.Duration, rounds int) error {
	dir, err := os.MkdirTemp("", "docrender-bench-pki-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pki, err := signtest.Make(dir)
	if err != nil {
		return err
	}
	tsa := signtest.NewTSA(pki, nil)
	defer tsa.Close()
	if _, err := signids.Names(pki.IDs); err != nil {
		return err
	}
	svc, cfg, stop, err := benchapi.Embedded(map[string]string{
		"DOCRENDER_SIGNING_DIR": pki.IDs, "DOCRENDER_TSA_URL": tsa.URL, "DOCRENDER_ADMIN_TOKEN": adminToken,
	})
	if err != nil {
		return err
	}
	defer stop()
	api, err := benchapi.New("http://" + svc.App.Addr())
	if err != nil {
		return err
	}
	if err := grant(api); err != nil {
		return err
	}
	meta := `"metadata":{"title":"Invoice 2026-001"},"lang":"en"`
	xml, _ := json.Marshal(cii)
	variants := []struct{ name, opts string }{
		{"plain render", ""},
		{"+ pdfa 2b", `{"pdfa":"2b"}`},
		{"+ pdfua", `{"pdfua":true,` + meta + `}`},
		{"+ einvoice (3b)", `{"einvoice":{"profile":"EN 16931","xml":` + string(xml) + `}}`},
		{"+ sign B-B", `{"sign":{"identity":"acme"}}`},
		{"+ sign B-T (local TSA)", `{"sign":{"identity":"acme","level":"B-T"}}`},
		{"all: 3u+UA+einvoice+B-B", `{"pdfa":"3u","pdfua":true,` + meta + `,"einvoice":{"profile":"EN 16931","xml":` + string(xml) + `},"sign":{"identity":"acme"}}`},
	}
	docs := []struct{ name, html string }{{"invoice (1 page)", invoice()}, {"ledger (~20 pages)", ledger()}}
	fmt.Printf("docrender bench record: DESIGN §8 steps against the plain render, same embedded service (DOCRENDER_WORKERS=%d), c=1, %s per variant in %d alternating rounds\n",
		cfg.Workers, dur, rounds)
	fmt.Printf("%-20s %-26s | %8s %8s | %7s | %s\n", "document", "variant", "PDFs/s", "p50", "vs plain", "size")
	for _, d := range docs {
		res := make([]benchapi.Result, len(variants))
		sizes := make([]int, len(variants))
		for i, v := range variants {
			pdf, err := api.GenerateWith(d.html, v.opts)
			if err != nil {
				return fmt.Errorf("%s %s: %w", d.name, v.name, err)
			}
			sizes[i] = len(pdf)
		}
		for range rounds {
			for i, v := range variants {
				r, err := benchapi.Measure(1, dur/time.Duration(rounds), func(int, int) error {
					_, err := api.GenerateWith(d.html, v.opts)
					return err
				})
				if err != nil {
					return fmt.Errorf("%s %s: %w", d.name, v.name, err)
				}
				res[i].Add(r)
			}
		}
		for i, v := range variants {
			fmt.Printf("%-20s %-26s | %8.1f %6.1fms | %+6.1f%% | %d KB\n", d.name, v.name, res[i].Rate(), benchapi.Ms(res[i].P50()),
				100*(benchapi.Ms(res[i].P50())/benchapi.Ms(res[0].P50())-1), sizes[i]/1024)
		}
		// Inspect of the all-of-§8 PDF: what reading it back costs.
		pdf, err := api.GenerateWith(d.html, variants[len(variants)-1].opts)
		if err != nil {
			return err
		}
		r, err := benchapi.Measure(1, dur/2, func(int, int) error { return inspect(api, pdf) })
		if err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
		fmt.Printf("%-20s %-26s | %8.1f %6.1fms |\n", d.name, "inspect (all-of-§8 PDF)", r.Rate(), benchapi.Ms(r.P50()))
	}
	return nil
}

// grant lets the bench account sign as acme (DESIGN §8's admin route).
func grant(api *benchapi.Client) error {
	var me struct {
		Data struct {
			Accounts []struct {
				ID string `json:"id"`
			} `json:"accounts"`
		} `json:"data"`
	}
	b, err := adminDo(api, "GET", "/api/admin/accounts?limit=1", nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &me); err != nil || len(me.Data.Accounts) != 1 {
		return fmt.Errorf("admin accounts: %v %.200s", err, b)
	}
	_, err = adminDo(api, "PUT", "/api/admin/accounts/"+me.Data.Accounts[0].ID+"/signing", []byte(`{"identities":["acme"]}`))
	return err
}

func adminDo(api *benchapi.Client, method, path string, body []byte) ([]byte, error) {
	return api.SendAuth(method, path, "Bearer "+adminToken, body)
}

func inspect(api *benchapi.Client, pdf []byte) error {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	p, _ := w.CreateFormFile("files", "doc.pdf")
	p.Write(pdf)
	w.Close()
	_, err := api.Send("POST", "/pdf/inspect", w.FormDataContentType(), &buf)
	return err
}

// invoice is a one-page invoice like make bench's.
func invoice() string {
	var rows strings.Builder
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&rows, "<tr><td>%d</td><td>Consulting services, item %d</td><td>%d</td><td>€%d.00</td></tr>", i, i, i%5+1, (40+i)*(i%5+1))
	}
	return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Invoice 2026-001</title><style>
body { font-family: 'Liberation Sans', sans-serif; font-size: 11pt; } table { width: 100%; border-collapse: collapse; }
th { background: #2a6; color: white; text-align: left; } td { border-bottom: 1px solid #ddd; }</style></head><body>
<h1>Invoice 2026-001</h1><p>ACME GmbH, Musterstraße 1, 10115 Berlin</p>
<table><thead><tr><th>#</th><th>Description</th><th>Qty</th><th>Amount</th></tr></thead><tbody>` + rows.String() + `</tbody></table>
<p>Total due in 30 days.</p></body></html>`
}

// ledger is about 20 pages of table.
func ledger() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Ledger</title>
<style>body{font:11px sans-serif} td,th{border-bottom:1px solid #ccc;padding:2px 6px}</style></head><body>
<h1>Ledger</h1><table><thead><tr><th>#</th><th>Date</th><th>Account</th><th>Description</th><th>Amount</th></tr></thead><tbody>`)
	for i := range 800 {
		fmt.Fprintf(&b, "<tr><td>%d</td><td>2026-11-%02d</td><td>ACC-%04d</td><td>Line item number %d of the ledger</td><td>%d.%02d</td></tr>",
			i+1, i%28+1, i*7%10000, i+1, i*13%1000, i%100)
	}
	b.WriteString("</tbody></table></body></html>")
	return b.String()
}
