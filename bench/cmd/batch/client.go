package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/docrender/docrender/bench/internal/benchapi"
)

// invoice is a one-page document, numbered so every document differs.
func invoice(no int) string {
	var rows strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&rows, "<tr><td>%d</td><td>Consulting services, item %d</td><td>%d</td><td>€%d.00</td></tr>", i, i, i%5+1, (40+i)*(i%5+1))
	}
	return `<!doctype html><html><head><meta charset="utf-8"><style>
body { font-family: 'Liberation Sans', sans-serif; font-size: 11pt; color: #222; }
h1 { color: #2a6; } table { width: 100%; border-collapse: collapse; }
th { background: #2a6; color: white; text-align: left; padding: 4px; } td { border-bottom: 1px solid #ddd; padding: 4px; }
</style></head><body><h1>INVOICE ` + fmt.Sprintf("2026-%05d", no) + `</h1><p>ACME GmbH, Hauptstraße 1, 10115 Berlin</p>
<table><thead><tr><th>#</th><th>Description</th><th>Qty</th><th>Amount</th></tr></thead><tbody>` + rows.String() + `</tbody></table>
<p><b>Total due: €4,242.00</b></p></body></html>`
}

func batchRequest(n int, stream bool) map[string]any {
	docs := make([]map[string]string, n)
	for i := range docs {
		docs[i] = map[string]string{"fileName": fmt.Sprintf("invoice-%04d", i), "htmlContent": invoice(i)}
	}
	return map[string]any{"documents": docs, "batchName": "bench", "stream": stream}
}

// batchZip runs an n-document batch without stream: the answer is the ZIP.
func batchZip(a *benchapi.Client, n int) ([]byte, error) {
	b, _ := json.Marshal(batchRequest(n, false))
	return a.Send("POST", "/pdf/generate-batch", "application/json", bytes.NewReader(b))
}
