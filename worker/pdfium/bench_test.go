package pdfium

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// Benchmarks against poppler's command-line tools on the same 50-page
// Chromium document (testdata/long.pdf), one page after another on each
// side, so ns/op compare directly:
//
//	go test -run '^$' -bench . -benchtime 3x ./pdfium/
//
// Measured on the 2-core dev machine (AMD EPYC, others' tests running),
// before the engine ran without wazero's termination checks:
//
//	Text, 50 pages          pdfium 1.11 s   pdftotext -enc UTF-8          0.108 s  (10× slower)
//	Markdown, 50 pages      pdfium 3.70 s
//	Images PNG 72 dpi       pdfium 1.84 s   pdftoppm -png -r 72   4.70 s  (2.6× faster)
//	Images PNG 150 dpi      pdfium 3.54 s   pdftoppm -png -r 150 13.12 s  (3.7× faster)
//	Images JPEG / WebP 72   pdfium 1.54 s / 4.15 s
//
// Without them (Config.Interruptible false, the default), on a machine
// whose load made pdftotext take 0.21–0.28 s: Text 0.68–1.04 s on one
// instance, 2.3–2.8 s Interruptible (docs/benchmarks.md "PDF tools").
// Text's time is PDFium's own (FPDF_LoadPage and FPDFText_LoadPage inside
// wasm; copying the text out is under 1 ms a page).

const benchPDF = "testdata/long.pdf"

// BenchmarkNew: starting an engine (compiling PDFium's module, then its
// instances). The heap metric is the Go heap an engine keeps, which holds
// the instances' linear memories (wazero allocates them there); the
// compiled code is mapped outside the heap.
func BenchmarkNew(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run("instances="+strconv.Itoa(n), func(b *testing.B) {
			var heap float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				e, err := New(context.Background(), Config{Instances: n, InProcess: true})
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap = float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
				e.Close()
			}
			b.ReportMetric(heap, "heap-MiB")
		})
	}
	b.Run("instance", func(b *testing.B) {
		// One instance started: a killed one is replaced on the next take.
		e, err := New(context.Background(), Config{Instances: 1, InProcess: true})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		for b.Loop() {
			in, err := e.pool.GetInstanceWithContext(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			in.Kill()
		}
	})
	b.Run("cached", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			e, err := New(context.Background(), Config{Instances: 1, CacheDir: dir, InProcess: true})
			if err != nil {
				b.Fatal(err)
			}
			e.Close()
		}
	})
}

func benchEngine(b *testing.B) (*Engine, []byte) {
	b.Helper()
	e, err := New(context.Background(), Config{Instances: 1, InProcess: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e, readFile(b, benchPDF)
}

func BenchmarkText(b *testing.B) {
	e, pdf := benchEngine(b)
	b.Run("pdfium", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Text(context.Background(), pdf, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pdfium-interruptible", func(b *testing.B) {
		ie, err := New(context.Background(), Config{Instances: 1, Interruptible: true, InProcess: true})
		if err != nil {
			b.Fatal(err)
		}
		defer ie.Close()
		for b.Loop() {
			if _, err := ie.Text(context.Background(), pdf, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pdfium-2-instances", func(b *testing.B) {
		// An idle worker with two slots: the pages are read on both.
		e2, err := New(context.Background(), Config{Instances: 2, InProcess: true})
		if err != nil {
			b.Fatal(err)
		}
		defer e2.Close()
		for b.Loop() {
			if _, err := e2.Text(context.Background(), pdf, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pdftotext", func(b *testing.B) {
		tool(b, "pdftotext")
		for b.Loop() {
			run(b, "pdftotext", "-enc", "UTF-8", benchPDF, os.DevNull)
		}
	})
}

func BenchmarkMarkdown(b *testing.B) {
	e, pdf := benchEngine(b)
	for b.Loop() {
		if _, err := e.Markdown(context.Background(), pdf, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkImages(b *testing.B) {
	e, pdf := benchEngine(b)
	for _, dpi := range []int{72, 150} {
		d := strconv.Itoa(dpi)
		b.Run("pdfium-png-"+d, func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Images(context.Background(), pdf, nil, "png", dpi, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("pdftoppm-png-"+d, func(b *testing.B) {
			tool(b, "pdftoppm")
			out := filepath.Join(b.TempDir(), "page")
			for b.Loop() {
				run(b, "pdftoppm", "-png", "-r", d, benchPDF, out)
			}
		})
	}
	for _, f := range []string{"jpeg", "webp"} {
		b.Run("pdfium-"+f+"-72", func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Images(context.Background(), pdf, nil, f, 72, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func tool(b *testing.B, name string) {
	if _, err := exec.LookPath(name); err != nil {
		b.Skipf("%s not installed", name)
	}
}

func run(b *testing.B, name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v: %s", name, err, out)
	}
}
