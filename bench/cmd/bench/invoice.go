package main

import (
	"fmt"
	"strings"
)

// Invoice is the one-page document both sides print.
var Invoice = func() string {
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
</body></html>`
}()

// Scripted is the invoice with a script that fills in the date: a page the
// service must navigate to, with scripts on, rather than write.
var Scripted = strings.Replace(Invoice, "</body>", `<p id="d"></p><script>document.getElementById('d').textContent = 'Issued 2026-11-21';</script></body>`, 1)
