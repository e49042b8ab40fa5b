package pdfedit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// PageCount reads the page tree's count, of Chromium's own output too, and
// fails (never panics) on what is not a PDF.
func TestPageCount(t *testing.T) {
	tests := []struct {
		name string
		pdf  []byte
		want int
	}{
		{"one page", rawPDF("A", 1, 1), 1},
		{"many pages", rawPDF("B", 37, 1), 37},
		{"with an outline", outlinedPDF("C", 5), 5},
	}
	if chromium, err := os.ReadFile("testdata/chromium.pdf"); err == nil {
		tests = append(tests, struct {
			name string
			pdf  []byte
			want int
		}{"Chromium", chromium, pdfinfoPagesOf(t, chromium)})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := PageCount(context.Background(), tc.pdf)
			if err != nil || n != tc.want {
				t.Fatalf("PageCount = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
	for _, bad := range [][]byte{nil, []byte("not a PDF")} {
		if n, err := PageCount(context.Background(), bad); err == nil {
			t.Errorf("PageCount(%.20q) = %d, want an error", bad, n)
		}
	}
}

func pdfinfoPagesOf(t *testing.T, pdf []byte) int {
	t.Helper()
	needTools(t, "pdfinfo")
	return pdfinfoPages(t, tmpPDF(t, pdf))
}

func BenchmarkPageCount(b *testing.B) {
	pdf := rawPDF("E", 200, 40)
	for b.Loop() {
		if _, err := PageCount(context.Background(), pdf); err != nil {
			b.Fatal(err)
		}
	}
}

// Chromium's PDFs take the short way, which agrees with pdfcpu's full
// read; other shapes (an incremental update, object streams) fall back.
func TestChromiumPageCount(t *testing.T) {
	chromium, err := os.ReadFile("testdata/chromium.pdf")
	if err != nil {
		t.Fatal(err)
	}
	// An incremental update appends a second table whose trailer points
	// at the first (/Prev): the count may have changed, pdfcpu reads it.
	obj := "\n9 0 obj\n<</Type /Pages\n/Count 1\n/Kids [2 0 R]>>\nendobj\n"
	updated := append(slices.Clip(chromium), obj+"xref\n9 1\n"+fmt.Sprintf("%010d", len(chromium)+1)+" 00000 n \ntrailer\n<</Size 32 /Root 23 0 R /Prev 16840>>\nstartxref\n"+strconv.Itoa(len(chromium)+len(obj))+"\n%%EOF\n"...)
	if n, err := PageCount(context.Background(), updated); err != nil || n != 1 {
		t.Fatalf("the updated PDF has %d pages (%v), want 1: the test builds it wrong", n, err)
	}
	tests := []struct {
		name  string
		pdf   []byte
		short bool
	}{
		{"Chromium", chromium, true},
		{"pdfcpu's own", rawPDF("A", 7, 1), true},
		{"with an outline", outlinedPDF("C", 5), true},
		{"an incremental update", updated, false},
		{"no PDF", []byte("startxref\n0\n%%EOF"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, short := chromiumPageCount(tc.pdf)
			if short != tc.short {
				t.Fatalf("short way taken = %v, want %v", short, tc.short)
			}
			if !short {
				return
			}
			pc, err := pdfcpu.ReadWithContext(context.Background(), bytes.NewReader(tc.pdf), newConf(model.LISTINFO))
			if err != nil {
				t.Fatal(err)
			}
			if err := pc.EnsurePageCount(); err != nil {
				t.Fatal(err)
			}
			if n != pc.PageCount {
				t.Errorf("short way counts %d, pdfcpu %d", n, pc.PageCount)
			}
		})
	}
	// Cut short anywhere, or with a byte changed anywhere in its tail
	// (where the table, trailer and catalog are), it never panics and never
	// counts fewer than one page.
	for cut := len(chromium) - 1200; cut < len(chromium); cut++ {
		if n, ok := chromiumPageCount(chromium[:cut]); ok && n < 1 {
			t.Fatalf("cut at %d: %d pages", cut, n)
		}
		b := slices.Clone(chromium)
		b[cut] ^= 0x5a
		if n, ok := chromiumPageCount(b); ok && n < 1 {
			t.Fatalf("byte %d changed: %d pages", cut, n)
		}
	}
}

func FuzzPageCount(f *testing.F) {
	if chromium, err := os.ReadFile("testdata/chromium.pdf"); err == nil {
		f.Add(chromium)
	}
	f.Add(rawPDF("F", 3, 1))
	f.Fuzz(func(t *testing.T, pdf []byte) {
		if n, ok := chromiumPageCount(pdf); ok && n < 1 {
			t.Fatalf("%d pages", n)
		}
	})
}
