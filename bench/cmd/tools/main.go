// Command tools measures the PDF tools of DESIGN §11 (issue 25 item 6) on
// a 50-page document, side by side in one run: each route through the
// embedded service (HTTP, queue, worker: what a client sees) against the
// command-line tool that does the same on this machine (qpdf, pdftotext,
// pdftoppm: the local limit, no HTTP at all), and, given -gotenberg,
// Gotenberg 8.36's matching route where it has one. Each figure is the
// median of -n runs; the ratio is ours over the command line's (under 1.5
// is the goal).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
	"github.com/docrender/docrender/worker/pdfium"
)

// document is 50 A4 pages of headings, paragraphs and a table each, with
// an image every page: what a report looks like.
func document() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Report</title>
<style>body{font:11pt sans-serif} h1{break-before:page} td{border:1px solid #999;padding:2px 6px}</style></head><body>`)
	for p := 1; p <= 50; p++ {
		fmt.Fprintf(&b, `<h1>Chapter %d</h1><p>`, p)
		for s := 0; s < 12; s++ {
			fmt.Fprintf(&b, "Sentence %d of chapter %d says what a report says, at some length, so the page fills. ", s+1, p)
		}
		b.WriteString(`</p><svg width="600" height="120"><rect width="600" height="120" fill="#4a90d9"/></svg><table>`)
		for r := 0; r < 10; r++ {
			fmt.Fprintf(&b, "<tr><td>%d.%d</td><td>Item %d</td><td>%d.00</td></tr>", p, r, r, p*r)
		}
		b.WriteString(`</table>`)
	}
	b.WriteString(`</body></html>`)
	return b.String()
}

// op is one tool: its route and options, the command line doing the same
// (PDF and OUT stand for the input and an output path), Gotenberg's route
// and form fields (empty: it has none).
type op struct {
	name, route, options string
	cli                  []string
	gotenberg            string
	fields               map[string]string
}

func main() {
	// A PDFium child process of this one (worker/pdfium) does its work and ends here.
	if pdfium.RunChildIfAsked() {
		return
	}
	n := flag.Int("n", 5, "runs of each, the median reported")
	gotenberg := flag.String("gotenberg", "", "Gotenberg's URL (scripts/gotenberg-up)")
	flag.Parse()
	svc, cfg, stop, err := benchapi.Embedded(nil)
	if err != nil {
		fail(err)
	}
	defer stop()
	api, err := benchapi.New("http://" + svc.App.Addr())
	if err != nil {
		fail(err)
	}
	pdf, err := api.GenerateWith(document(), "")
	if err != nil {
		fail(err)
	}
	dir, err := os.MkdirTemp("", "bench-tools-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(in, pdf, 0o644); err != nil {
		fail(err)
	}
	ops := []op{
		{"split (every 10 pages)", "/pdf/split", `{"every":10}`, []string{"qpdf", "--split-pages=10", "PDF", "OUT-%d.pdf"},
			"/forms/pdfengines/split", map[string]string{"splitMode": "pages", "splitSpan": "1-10,11-20,21-30,31-40,41-50"}},
		{"pages (reverse)", "/pdf/pages", `{"select":"` + reversed(50) + `"}`, []string{"qpdf", "PDF", "--pages", "PDF", "z-1", "--", "OUT"}, "", nil},
		{"flatten", "/pdf/flatten", "", []string{"qpdf", "--flatten-annotations=all", "PDF", "OUT"},
			"/forms/pdfengines/flatten", nil},
		{"optimize", "/pdf/optimize", "", []string{"qpdf", "--recompress-flate", "--object-streams=generate", "PDF", "OUT"}, "", nil},
		{"metadata", "/pdf/metadata", `{"metadata":{"title":"Bench"}}`, []string{"qpdf", "PDF", "OUT"}, "", nil},
		{"text", "/pdf/text", "", []string{"pdftotext", "PDF", "OUT"}, "", nil},
		{"images (PNG, 72 dpi)", "/pdf/images", `{"dpi":72}`, []string{"pdftoppm", "-png", "-r", "72", "PDF", "OUT"}, "", nil},
	}
	fmt.Printf("docrender bench tools: a %d-page PDF (%.1f MB), the embedded service (DOCRENDER_WORKERS=%d), c=1, median of %d\n",
		50, float64(len(pdf))/1e6, cfg.Workers, *n)
	fmt.Printf("%-24s | %10s | %10s %-30s | %8s | %s\n", "tool", "ours ms", "CLI ms", "(command line)", "ours/CLI", "Gotenberg 8.36 ms")
	for _, o := range ops {
		ours := median(*n, func() error {
			ct, body := form(pdf, o.options, nil)
			_, err := api.Send("POST", o.route, ct, body)
			return err
		}, func(err error) { fmt.Printf("%-24s | failed: %v\n", o.name, err) })
		cli := median(*n, func() error {
			args := slices.Clone(o.cli[1:])
			for i, a := range args {
				args[i] = strings.NewReplacer("PDF", in, "OUT", filepath.Join(dir, "out")).Replace(a)
			}
			out, err := exec.Command(o.cli[0], args...).CombinedOutput()
			if err != nil && !strings.Contains(string(out), "operation succeeded with warnings") {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}, func(err error) { fmt.Printf("%-24s | command line failed: %v\n", o.name, err) })
		got := "no such route"
		if *gotenberg == "" {
			got = "not measured"
		} else if o.gotenberg != "" {
			d := median(*n, func() error { return gotenbergPost(*gotenberg+o.gotenberg, pdf, o.fields) },
				func(err error) { got = "failed: " + err.Error() })
			if d > 0 {
				got = fmt.Sprintf("%.0f", benchapi.Ms(d))
			}
		}
		ratio := "-"
		if ours > 0 && cli > 0 {
			ratio = fmt.Sprintf("%.2f", ours.Seconds()/cli.Seconds())
		}
		fmt.Printf("%-24s | %10.0f | %10.0f %-30s | %8s | %s\n", o.name, benchapi.Ms(ours), benchapi.Ms(cli), "("+o.cli[0]+")", ratio, got)
	}
}

// reversed is "n,n-1,…,1".
func reversed(n int) string {
	parts := make([]string, 0, n)
	for i := n; i >= 1; i-- {
		parts = append(parts, fmt.Sprint(i))
	}
	return strings.Join(parts, ",")
}

// form is a multipart body of the PDF as "files", options, and fields.
func form(pdf []byte, options string, fields map[string]string) (string, *bytes.Buffer) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	p, _ := w.CreateFormFile("files", "in.pdf")
	p.Write(pdf)
	if options != "" {
		w.WriteField("options", options)
	}
	for k, v := range fields {
		w.WriteField(k, v)
	}
	w.Close()
	return w.FormDataContentType(), &buf
}

func gotenbergPost(url string, pdf []byte, fields map[string]string) error {
	ct, body := form(pdf, "", fields)
	resp, err := http.Post(url, ct, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return fmt.Errorf("%d %.200s", resp.StatusCode, b.String())
	}
	var sink bytes.Buffer
	_, err = sink.ReadFrom(resp.Body)
	return err
}

// median runs fn n times (after one warm-up) and returns the median time;
// 0 and onErr called when a run fails.
func median(n int, fn func() error, onErr func(error)) time.Duration {
	if err := fn(); err != nil {
		onErr(err)
		return 0
	}
	ds := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := fn(); err != nil {
			onErr(err)
			return 0
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench tools:", err)
	os.Exit(1)
}
