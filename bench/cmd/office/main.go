// Command office measures office conversions (DESIGN §11, issue 26 item 6):
// a 10-page docx and a 3-sheet xlsx through the embedded service's POST
// /pdf/office against Gotenberg 8.36's LibreOffice route (given -gotenberg,
// scripts/gotenberg-up), c=1 and c=4, side by side in one run: documents
// per second and the ratio (ours over Gotenberg's; the goal is ≥ 1 at c=1
// and ≥ 1.5 at c=4).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
	"github.com/docrender/docrender/worker/office/officetest"
	"github.com/docrender/docrender/worker/pdfium"
)

// builder is officetest.T for a program: a failure ends it.
type builder struct{}

func (builder) Helper() {}
func (builder) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"bench office:"}, args...)...)
	os.Exit(1)
}

// docx is ten pages of paragraphs in Calibri, a page break before each.
func docx() []byte {
	var paras []officetest.Para
	for p := 1; p <= 10; p++ {
		paras = append(paras, officetest.Para{Text: fmt.Sprintf("Chapter %d", p), Font: "Calibri", BreakPage: p > 1})
		for s := 0; s < 20; s++ {
			paras = append(paras, officetest.Para{Text: strings.Repeat(fmt.Sprintf("Sentence %d of chapter %d, as a report has them. ", s+1, p), 3), Font: "Calibri"})
		}
	}
	return officetest.Docx(builder{}, officetest.DocxBody(paras), "")
}

// xlsx is three sheets of 60 rows by 6 columns.
func xlsx() []byte {
	var sheets [][][]string
	for s := 0; s < 3; s++ {
		var rows [][]string
		for r := 0; r < 60; r++ {
			row := []string{fmt.Sprintf("S%dR%d", s+1, r+1)}
			for c := 0; c < 5; c++ {
				row = append(row, fmt.Sprint((r+1)*(c+1)*(s+1)))
			}
			rows = append(rows, row)
		}
		sheets = append(sheets, rows)
	}
	return officetest.Xlsx(builder{}, sheets)
}

func main() {
	// A PDFium child process of this one (worker/pdfium) does its work and ends here.
	if pdfium.RunChildIfAsked() {
		return
	}
	gotenberg := flag.String("gotenberg", "", "Gotenberg's URL (scripts/gotenberg-up)")
	d := flag.Duration("d", 20*time.Second, "how long each cell is measured")
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
	files := []struct {
		name string
		data []byte
	}{{"report.docx", docx()}, {"sheets.xlsx", xlsx()}}
	fmt.Printf("docrender bench office: the embedded service (DOCRENDER_WORKERS=%d: LibreOffice slots) against Gotenberg 8.36's LibreOffice route, %s a cell\n",
		cfg.Workers, *d)
	fmt.Printf("%-12s %3s | %14s %9s | %14s %9s | %s\n", "file", "c", "ours PDFs/s", "p50 ms", "Gotenberg PDFs/s", "p50 ms", "ours/Gotenberg")
	for _, f := range files {
		for _, c := range []int{1, 4} {
			ours, err := benchapi.Measure(c, *d, func(int, int) error {
				ct, body := form(f.name, f.data)
				_, err := api.Send("POST", "/pdf/office", ct, body)
				return err
			})
			if err != nil {
				fmt.Printf("%-12s %3d | failed: %v\n", f.name, c, err)
				continue
			}
			theirs := "not measured"
			ratio := ""
			if *gotenberg != "" {
				g, err := benchapi.Measure(c, *d, func(int, int) error { return post(*gotenberg+"/forms/libreoffice/convert", f.name, f.data) })
				if err != nil {
					theirs = "failed: " + err.Error()
				} else {
					theirs = fmt.Sprintf("%14.2f %9.0f", g.Rate(), benchapi.Ms(g.P50()))
					ratio = fmt.Sprintf("%.2f×", ours.Rate()/g.Rate())
				}
			}
			fmt.Printf("%-12s %3d | %14.2f %9.0f | %s | %s\n", f.name, c, ours.Rate(), benchapi.Ms(ours.P50()), theirs, ratio)
		}
	}
}

func form(name string, data []byte) (string, *bytes.Buffer) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	p, _ := w.CreateFormFile("files", name)
	p.Write(data)
	w.Close()
	return w.FormDataContentType(), &buf
}

func post(url, name string, data []byte) error {
	ct, body := form(name, data)
	resp, err := http.Post(url, ct, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(out, []byte("%PDF")) {
		return errors.New(resp.Status)
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench office:", err)
	os.Exit(1)
}
