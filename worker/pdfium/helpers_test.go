package pdfium

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/docrender/docrender/pkg/testenv/rawpdf"
)

// Test PDFs are written here object by object, so each hostile shape is
// exactly the one named; Chromium-made ones are in testdata/.

// transparentPDF's page has a transparency group and a half-transparent
// black square (the PDFium of go-pdfium v1.21.4 reports no transparency for it and renders
// it on white; TestOnWhite covers the pages where it does not).
func transparentPDF() []byte {
	return rawpdf.Build(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Group << /S /Transparency /CS /DeviceRGB >> /Resources << /ExtGState << /G 5 0 R >> >> /Contents 4 0 R >>",
		rawpdf.Stream("", "/G gs 0 g 100 100 200 200 re f"),
		"<< /Type /ExtGState /ca 0.5 >>",
	)
}

// manyPagesPDF has n empty pages, all in one Kids array.
func manyPagesPDF(n int) []byte {
	objs := make([]string, 2, n+2)
	objs[0] = "<< /Type /Catalog /Pages 2 0 R >>"
	var kids strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", i+3)
		objs = append(objs, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>")
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n)
	return rawpdf.Build(objs...)
}

// bombPDF's one page has a Flate content stream that inflates to size
// bytes of zeros from a few KiB: one compressed MiB of zeros, repeated.
func bombPDF(size int) []byte {
	return rawpdf.Build(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		rawpdf.BombStream(size),
	)
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testEngine is one engine for the package's tests: the module compiles
// once (about 2.5 s here), not once per test.
var testEngine = sync.OnceValues(func() (*Engine, error) {
	return New(context.Background(), Config{Instances: 2, MaxMemory: 256 << 20, RecycleAbove: 64 << 20, InProcess: true})
})

func engine(t testing.TB) *Engine {
	t.Helper()
	e, err := testEngine()
	if err != nil {
		t.Fatal(err)
	}
	return e
}
