package office

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/docrender/docrender/worker/office/officetest"
)

// benchDocs are issue 26's benchmark documents: a 10-page docx and a
// 3-sheet xlsx (40 rows of 6 columns each).
func benchDocs(b *testing.B) []Input {
	var sheets [][][]string
	for s := range 3 {
		var rows [][]string
		for r := range 40 {
			var row []string
			for c := range 6 {
				row = append(row, fmt.Sprintf("S%dR%dC%d", s+1, r+1, c+1))
			}
			rows = append(rows, row)
		}
		sheets = append(sheets, rows)
	}
	return []Input{
		{"ten-pages.docx", manyPages(b, 10)},
		{"three-sheets.xlsx", officetest.Xlsx(b, sheets)},
	}
}

// BenchmarkConvert: the engine on a warm slot against a fresh
// `soffice --headless --convert-to pdf` per document (what a service
// without kept processes pays: LibreOffice's start-up each time; the
// profile is kept between runs, as such a service would).
func BenchmarkConvert(b *testing.B) {
	needOffice(b)
	docs := benchDocs(b)
	for _, in := range docs {
		b.Run("engine/"+in.Name, func(b *testing.B) {
			e := sharedEngine(b)
			if _, _, err := e.Convert(context.Background(), in, Options{}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := e.Convert(context.Background(), in, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("soffice-convert-to/"+in.Name, func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, in.Name)
			if err := os.WriteFile(path, in.Data, 0o600); err != nil {
				b.Fatal(err)
			}
			run := func() {
				out, err := exec.Command("soffice", "--headless", "--norestore", "-env:UserInstallation=file://"+filepath.Join(dir, "profile"),
					"--convert-to", "pdf", "--outdir", filepath.Join(dir, "out"), path).CombinedOutput()
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
			run() // the profile's first start, not measured
			b.ResetTimer()
			for b.Loop() {
				run()
			}
		})
	}
}
