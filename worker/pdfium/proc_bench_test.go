package pdfium

import (
	"context"
	"testing"

	"github.com/docrender/docrender/pkg/testenv/rawpdf"
)

// BenchmarkTextChild: Text of the 50-page benchmark document through child
// processes (the worker's mode), to set against BenchmarkText's pdfium
// (in-process, same instance settings): the difference is the cost of the
// process mode per call.
func BenchmarkTextChild(b *testing.B) {
	pdf := readFile(b, benchPDF)
	for _, tc := range []struct {
		name      string
		instances int
	}{{"1-instance", 1}, {"2-instances", 2}} {
		b.Run(tc.name, func(b *testing.B) {
			e, err := New(context.Background(), Config{Instances: tc.instances})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			for b.Loop() {
				if _, err := e.Text(context.Background(), pdf, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Small calls, where the round trip's share is largest: one page of
	// the 50 (the whole 0.6 MB document crosses the pipe), and a one-line
	// PDF of 600 bytes.
	tiny := rawpdf.TextPages(612, 792, []string{"Hello"})
	for _, tc := range []struct {
		name  string
		pdf   []byte
		pages []int
	}{{"one-page", pdf, []int{1}}, {"tiny", tiny, nil}} {
		for _, inProcess := range []bool{false, true} {
			name := tc.name
			if inProcess {
				name += "-in-process"
			}
			b.Run(name, func(b *testing.B) {
				e, err := New(context.Background(), Config{Instances: 1, InProcess: inProcess})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				for b.Loop() {
					if _, err := e.Text(context.Background(), tc.pdf, tc.pages); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkChildStart: starting a child with PDFium compiled in the cache
// (what replacing a killed child costs), and without it (the first).
func BenchmarkChildStart(b *testing.B) {
	for _, cached := range []bool{true, false} {
		name := "compiling"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			if cached {
				// Fill the cache before the clock starts.
				e, err := New(context.Background(), Config{Instances: 1, CacheDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				e.Close()
			}
			for b.Loop() {
				if !cached {
					dir = b.TempDir()
				}
				e, err := New(context.Background(), Config{Instances: 1, CacheDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				e.Close()
			}
		})
	}
}
