// Command template measures stored templates (DESIGN §9, issue 23 item 4)
// against the same documents sent as HTML, side by side on one embedded
// service: a batch of n invoices (make bench's invoice, its stylesheet and
// a logo as files of the template) filled from per-row data, against the
// same n documents as htmlContent (the stylesheet inline, the logo a data
// URL: what a sender without templates sends); then single documents
// through /pdf/generate at c=1, template against HTML. PDFs/s and the
// request bytes sent per document, alternating the two sides in one run.
// Issue 23's goal: the template batch at least 1.3x the PDFs/s of the HTML
// batch at 2 render slots, and at most 1 KB a document beyond its data.
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
	"github.com/docrender/docrender/pkg/tmpl"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/pdfium"
)

func main() {
	// A PDFium child process of this one (worker/pdfium) does its work and ends here.
	if pdfium.RunChildIfAsked() {
		return
	}
	n := flag.Int("n", 1000, "documents per batch")
	rounds := flag.Int("rounds", 2, "batch rounds; each runs both sides, in turns (ABBA)")
	single := flag.Duration("d", 12*time.Second, "measuring time per side for single documents (c=1), 0 skips them")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the service's Go side during the batches to this file")
	flag.Parse()
	cpuProfile = *profile
	if err := run(*n, *rounds, *single); err != nil {
		fmt.Fprintln(os.Stderr, "bench template:", err)
		os.Exit(1)
	}
}

// invoiceCSS is make bench's invoice style, with the logo's place.
const invoiceCSS = `body { font-family: 'Liberation Sans', sans-serif; color: #222; font-size: 11pt; }
header { display: flex; justify-content: space-between; border-bottom: 3px solid #2a6; padding-bottom: 8px; }
header img { height: 40px; }
h1 { color: #2a6; margin: 0; }
table { width: 100%; border-collapse: collapse; margin-top: 16px; }
th { background: #2a6; color: white; text-align: left; padding: 4px; }
td { border-bottom: 1px solid #ddd; padding: 4px; }
tr:nth-child(even) td { background: #f4f9f6; }
.total { text-align: right; font-size: 14pt; margin-top: 12px; }
`

// invoiceTemplate is make bench's invoice (bench/cmd/bench/invoice.go) as a
// stored template: the number, customer, rows and total from the data.
const invoiceTemplate = `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="stylesheet" href="style.css"></head><body>
<header><div><img src="logo.png" alt="ACME"><h1>INVOICE</h1><div>No. {{number}}</div></div><div>ACME GmbH<br>Hauptstraße 1<br>10115 Berlin</div></header>
<p>Bill to: {{customer.name}}, {{customer.address}}</p>
<table><thead><tr><th>#</th><th>Description</th><th>Qty</th><th>Unit</th><th>Amount</th></tr></thead><tbody>{{#each items}}<tr><td>{{no}}</td><td>{{name}}</td><td>{{qty}}</td><td>€{{unit}}.00</td><td>€{{amount}}.00</td></tr>{{/each}}</tbody></table>
<p class="total"><b>Total due: €{{total}}.00</b></p><p>Payment within 14 days. Thank you for your business.</p>
</body></html>`

// logo is a 240x60 PNG with some detail to decode (a checkered banner
// with a grain), about as large as a company's logo: some KB.
var logo = func() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 240, 60))
	rnd := rand.New(rand.NewPCG(1, 2))
	for y := range 60 {
		for x := range 240 {
			c := color.NRGBA{0x22, 0xaa, 0x66, 0xff}
			if (x/8+y/8)%2 == 0 {
				c = color.NRGBA{uint8(x), uint8(y * 4), 0x99, 0xff}
			}
			if rnd.IntN(4) == 0 {
				c.R ^= uint8(rnd.IntN(32))
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}()

// rowData is document i's data: every document differs.
func rowData(i int) map[string]any {
	items := make([]map[string]any, 25)
	total := 0
	for k := range items {
		qty, unit := (k+i)%5+1, 40+k
		items[k] = map[string]any{"no": k + 1, "name": fmt.Sprintf("Consulting services, item %d", k+1), "qty": qty, "unit": unit, "amount": unit * qty}
		total += unit * qty
	}
	return map[string]any{"number": fmt.Sprintf("2026-%05d", i), "customer": map[string]any{"name": fmt.Sprintf("Example Corp %d", i), "address": "1 Market St, San Francisco"},
		"items": items, "total": total}
}

// htmlOf is document i as a sender without templates sends it: the same
// page filled here, its stylesheet inline and its logo a data URL.
func htmlOf(tp *tmpl.Template, i int) (string, error) {
	raw, _ := json.Marshal(rowData(i))
	data, err := tmpl.DecodeData(raw)
	if err != nil {
		return "", err
	}
	h, err := tp.Render(data)
	if err != nil {
		return "", err
	}
	h = strings.Replace(h, `<link rel="stylesheet" href="style.css">`, "<style>\n"+invoiceCSS+"</style>", 1)
	return strings.Replace(h, `src="logo.png"`, `src="data:image/png;base64,`+base64.StdEncoding.EncodeToString(logo)+`"`, 1), nil
}

var cpuProfile string

// selfCPU is this process's CPU time: the embedded service's Go side
// (gateway, NATS, worker) and the bench's client.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type side struct {
	name string
	body func(n int) ([]byte, int, error) // a batch request body and its data bytes
}

func run(n, rounds int, single time.Duration) error {
	svc, cfg, stop, err := benchapi.Embedded(map[string]string{"DOCRENDER_PLAN_HOBBY_MAX_BATCH": strconv.Itoa(max(n, 10))})
	if err != nil {
		return err
	}
	defer stop()
	api, err := benchapi.New("http://" + svc.App.Addr())
	if err != nil {
		return err
	}
	if err := upload(api); err != nil {
		return err
	}
	tp, err := tmpl.Parse(invoiceTemplate)
	if err != nil {
		return err
	}
	htmlBatch := func(n int) ([]byte, int, error) {
		docs := make([]map[string]string, n)
		for i := range docs {
			h, err := htmlOf(tp, i)
			if err != nil {
				return nil, 0, err
			}
			docs[i] = map[string]string{"fileName": fmt.Sprintf("invoice-%04d", i), "htmlContent": h}
		}
		b, err := json.Marshal(map[string]any{"documents": docs, "batchName": "bench-html"})
		return b, 0, err
	}
	tplBatch := func(n int) ([]byte, int, error) {
		docs := make([]map[string]any, n)
		data := 0
		for i := range docs {
			d := rowData(i)
			raw, _ := json.Marshal(d)
			data += len(raw)
			docs[i] = map[string]any{"fileName": fmt.Sprintf("invoice-%04d", i), "data": d}
		}
		b, err := json.Marshal(map[string]any{"template": "invoice", "documents": docs, "batchName": "bench-template"})
		return b, data, err
	}
	sides := []side{{"HTML (htmlContent)", htmlBatch}, {"template + data", tplBatch}}

	// Warm up both paths: tabs, fonts, the worker's template cache.
	for _, s := range sides {
		body, _, err := s.body(2 * cfg.Workers)
		if err != nil {
			return err
		}
		if _, err := api.Send("POST", "/pdf/generate-batch", "application/json", bytes.NewReader(body)); err != nil {
			return fmt.Errorf("%s warm-up: %w", s.name, err)
		}
	}
	fmt.Printf("docrender template bench: a %d-document batch of the invoice (CSS and a %d-byte PNG logo as template files), template + data against the same documents as htmlContent, DOCRENDER_WORKERS=%d, %d rounds (ABBA), load average %s\n",
		n, len(logo), cfg.Workers, rounds, loadAvg())
	fmt.Printf("%-20s | %-5s | %8s %9s | %12s %12s | %s\n", "batch", "round", "PDFs/s", "time", "sent/doc", "beyond data", "CPU/PDF: chromium + Go")
	pid := svc.Worker.Pool().PID()
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	elapsed := make([]time.Duration, len(sides))
	sent := make([]int, len(sides))
	dataBytes := make([]int, len(sides))
	var ratios []float64
	for r := range rounds {
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		took := make([]time.Duration, len(sides))
		for _, i := range order {
			s := sides[i]
			body, data, err := s.body(n)
			if err != nil {
				return err
			}
			b0, s0 := browser.ProcessTreeCPU(pid), selfCPU()
			start := time.Now()
			zip, err := api.Send("POST", "/pdf/generate-batch", "application/json", bytes.NewReader(body))
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			took[i] = time.Since(start)
			bc, sc := (browser.ProcessTreeCPU(pid)-b0)/time.Duration(n), (selfCPU()-s0)/time.Duration(n)
			if err := benchapi.CheckZip(zip, n); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			elapsed[i] += took[i]
			sent[i], dataBytes[i] = len(body), data
			fmt.Printf("%-20s | %-5d | %8.2f %9s | %10.0f B %10.0f B | %4.1f + %4.1f ms\n", s.name, r+1, float64(n)/took[i].Seconds(), took[i].Round(10*time.Millisecond),
				float64(len(body))/float64(n), float64(len(body)-data)/float64(n), benchapi.Ms(bc), benchapi.Ms(sc))
		}
		ratios = append(ratios, took[0].Seconds()/took[1].Seconds())
	}
	slices.Sort(ratios)
	for i, s := range sides {
		fmt.Printf("%-20s | %-5s | %8.2f %9s | %10.0f B %10.0f B\n", s.name, "all", float64(n*rounds)/elapsed[i].Seconds(), elapsed[i].Round(10*time.Millisecond),
			float64(sent[i])/float64(n), float64(sent[i]-dataBytes[i])/float64(n))
	}
	fmt.Printf("template/HTML batch: %.2fx overall, median round %.2fx (goal >= 1.3x); load average %s\n",
		elapsed[0].Seconds()/elapsed[1].Seconds(), ratios[len(ratios)/2], loadAvg())

	if single <= 0 {
		return nil
	}
	// Single documents, c=1, alternating in short rounds.
	genHTML := func(i int) (int, error) {
		h, err := htmlOf(tp, i)
		if err != nil {
			return 0, err
		}
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		p, _ := w.CreateFormFile("files", "index.html")
		io.WriteString(p, h)
		w.Close()
		size := buf.Len()
		pdf, err := api.Send("POST", "/pdf/generate", w.FormDataContentType(), &buf)
		if err == nil && !bytes.HasPrefix(pdf, []byte("%PDF")) {
			err = fmt.Errorf("not a PDF: %.100s", pdf)
		}
		return size, err
	}
	genTpl := func(i int) (int, error) {
		b, _ := json.Marshal(map[string]any{"template": "invoice", "data": rowData(i)})
		pdf, err := api.Send("POST", "/pdf/generate", "application/json", bytes.NewReader(b))
		if err == nil && !bytes.HasPrefix(pdf, []byte("%PDF")) {
			err = fmt.Errorf("not a PDF: %.100s", pdf)
		}
		return len(b), err
	}
	gens := []func(int) (int, error){genHTML, genTpl}
	res := make([]benchapi.Result, 2)
	sizes := make([]int, 2)
	const singleRounds = 4
	for r := range singleRounds {
		for k := range gens {
			i := k
			if r%2 == 1 {
				i = 1 - k
			}
			m, err := benchapi.Measure(1, single/singleRounds, func(_, call int) error {
				size, err := gens[i](r*100000 + call)
				sizes[i] = size
				return err
			})
			if err != nil {
				return fmt.Errorf("%s generate: %w", sides[i].name, err)
			}
			res[i].Add(m)
		}
	}
	raw, _ := json.Marshal(rowData(0))
	fmt.Printf("%-20s | %8s %8s %8s | %10s\n", "generate, c=1", "PDFs/s", "p50", "p95", "sent")
	for i, s := range sides {
		fmt.Printf("%-20s | %8.2f %6.1fms %6.1fms | %8d B\n", s.name, res[i].Rate(), benchapi.Ms(res[i].P50()), benchapi.Ms(res[i].P95()), sizes[i])
	}
	fmt.Printf("template/HTML generate: %.2fx PDFs/s (data %d B a document); load average %s\n", res[1].Rate()/res[0].Rate(), len(raw), loadAvg())
	return nil
}

// upload stores the template as "invoice".
func upload(api *benchapi.Client) error {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("name", "invoice")
	for name, data := range map[string][]byte{"index.html": []byte(invoiceTemplate), "style.css": []byte(invoiceCSS), "logo.png": logo} {
		p, _ := w.CreateFormFile("files", name)
		p.Write(data)
	}
	w.Close()
	return api.PostMultipart("/api/templates", w.FormDataContentType(), &buf)
}

// loadAvg is the 1, 5 and 15 minute load average (Linux).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
