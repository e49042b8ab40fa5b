package pdfium

import (
	"context"
	"testing"
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
	b.Run("one-page", func(b *testing.B) {
		// A small call: the round trip's share is largest.
		e, err := New(context.Background(), Config{Instances: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		for b.Loop() {
			if _, err := e.Text(context.Background(), pdf, []int{1}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-page-in-process", func(b *testing.B) {
		e, err := New(context.Background(), Config{Instances: 1, InProcess: true})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		for b.Loop() {
			if _, err := e.Text(context.Background(), pdf, []int{1}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkChildStart: starting a child with PDFium compiled in the cache
// (what replacing a killed child costs), and without it (the first).
func BenchmarkChildStart(b *testing.B) {
	for _, cached := range []bool{true, false} {
		name := map[bool]string{true: "cached", false: "compiling"}[cached]
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
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
