package poppler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/testenv/rawpdf"
)

// Chromium's 50-page document and a password-protected one, shared with
// the PDFium engine's tests and benchmarks.
const (
	longPDF      = "../pdfium/testdata/long.pdf"
	encryptedPDF = "../pdfium/testdata/encrypted.pdf"
)

func engine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("pdftotext is a test dependency (scripts/setup installs poppler-utils): %v", err)
	}
	return e
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reference is pdftotext run on the command line over the whole file.
func reference(t *testing.T, name string) []string {
	t.Helper()
	out, err := exec.Command("pdftotext", "-q", "-enc", "UTF-8", name, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	pages := strings.SplitAfter(string(out), "\f")
	return pages[:len(pages)-1] // after the last form feed: ""
}

// TestText: the pages asked, in the order asked, each as the command line
// writes it, whether read by one process or cut in parts, with the page
// count known or not.
func TestText(t *testing.T) {
	pdf := readFile(t, longPDF)
	want := reference(t, longPDF)
	if len(want) != 50 {
		t.Fatalf("reference has %d pages", len(want))
	}
	for _, parts := range []int{1, 2, 4} {
		e := engine(t, Config{Parts: parts})
		for _, count := range []int{50, 0} {
			for _, pages := range [][]int{nil, {5, 1, 3, 2, 4, 5}, {18}, {31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47}, {50, 40}} {
				t.Run(fmt.Sprintf("parts %d, count %d, pages %v", parts, count, pages), func(t *testing.T) {
					got, err := e.Text(context.Background(), pdf, pages, count, 2000)
					if err != nil {
						t.Fatal(err)
					}
					var w strings.Builder
					if pages == nil {
						w.WriteString(strings.Join(want, ""))
					}
					for _, p := range pages {
						w.WriteString(want[p-1])
					}
					if string(got) != w.String() {
						t.Errorf("text differs from pdftotext's:\n%.300q\nwant\n%.300q", got, w.String())
					}
				})
			}
		}
	}
}

// TestTextNotRead: what pdftotext does not read as expected is left to
// PDFium (ErrNotRead), each process ended, and the engine reads the next.
func TestTextNotRead(t *testing.T) {
	e := engine(t, Config{})
	pdf := readFile(t, longPDF)
	cases := []struct {
		name         string
		pdf          []byte
		pages        []int
		count, limit int
	}{
		{"not a PDF", []byte("hello, not a PDF"), []int{1}, 0, 2000},
		{"truncated", pdf[:len(pdf)/3], []int{1}, 0, 2000},
		{"truncated, all pages", pdf[:len(pdf)/3], nil, 0, 2000},
		{"a password", readFile(t, encryptedPDF), []int{1}, 0, 2000},
		// A page count that lied: pdftotext writes fewer pages.
		{"pages past the end, count known", pdf, []int{49, 50, 51, 52}, 52, 2000},
		{"pages past the end, count not known", pdf, []int{49, 50, 51, 52}, 0, 2000},
		{"a page past the count", pdf, []int{51}, 50, 2000},
		{"page 0", pdf, []int{0}, 50, 2000},
		{"more pages than the limit", pdf, nil, 50, 10},
		{"more pages than the limit, count not known", pdf, nil, 0, 10},
		{"more pages asked than the limit", pdf, []int{1, 2, 3}, 50, 2},
		// Two pages 49 apart: pdftotext would read the 47 between.
		{"a sparse request", pdf, []int{1, 50}, 50, 2000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Text(context.Background(), tc.pdf, tc.pages, tc.count, tc.limit)
			if !errors.Is(err, ErrNotRead) {
				t.Fatalf("error %v, want ErrNotRead", err)
			}
		})
	}
	if _, err := e.Text(context.Background(), pdf, []int{1}, 50, 2000); err != nil {
		t.Fatalf("next text: %v", err)
	}
}

// TestTextBounds: the output cap, the address-space bound and the
// deadline each end pdftotext.
func TestTextBounds(t *testing.T) {
	pdf := readFile(t, longPDF)
	t.Run("output", func(t *testing.T) {
		e := engine(t, Config{MaxOutput: 1000})
		for _, pages := range [][]int{{1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, nil} {
			for _, count := range []int{50, 0} {
				var large *TooLargeError
				if _, err := e.Text(context.Background(), pdf, pages, count, 2000); !errors.As(err, &large) {
					t.Errorf("pages %v, count %d: error %v, want *TooLargeError", pages, count, err)
				}
			}
		}
		// Two pages each under the cap, together over it.
		e = engine(t, Config{MaxOutput: int64(len(reference(t, longPDF)[0])) + 10})
		var large *TooLargeError
		if _, err := e.Text(context.Background(), pdf, []int{1, 1}, 50, 2000); !errors.As(err, &large) {
			t.Errorf("the same page twice: error %v, want *TooLargeError", err)
		}
	})
	t.Run("memory", func(t *testing.T) {
		// The bound is the process's: the document that reads in 64 MiB
		// of address space does not in 8.
		if _, err := engine(t, Config{MaxMemory: 64 << 20}).Text(context.Background(), pdf, []int{1, 2}, 50, 2000); err != nil {
			t.Fatalf("in 64 MiB: %v", err)
		}
		if _, err := engine(t, Config{MaxMemory: 8 << 20}).Text(context.Background(), pdf, []int{1, 2}, 50, 2000); !errors.Is(err, ErrNotRead) {
			t.Errorf("in 8 MiB: error %v, want ErrNotRead", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		e := engine(t, Config{})
		slow := rawpdf.SlowPages(16, 400<<20) // seconds of parsing a page
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := e.Text(ctx, slow, nil, 16, 2000)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want the deadline", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("answered after %v: the processes were not killed at the deadline", took)
		}
	})
}

func TestNewWithoutPdftotext(t *testing.T) {
	if _, err := New(Config{Path: "/nonexistent/pdftotext"}); err == nil {
		t.Fatal("New found a pdftotext that does not exist")
	}
}

// BenchmarkText: the 50-page document's text through the engine (two
// processes) and pdftotext on the command line, side by side.
//
//	go test -run '^$' -bench Text -benchtime 20x ./poppler/
func BenchmarkText(b *testing.B) {
	pdf := readFile(b, longPDF)
	b.Run("engine", func(b *testing.B) {
		e := engine(b, Config{})
		for b.Loop() {
			if _, err := e.Text(context.Background(), pdf, nil, 50, 2000); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pdftotext", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("pdftotext", "-q", "-enc", "UTF-8", longPDF, os.DevNull).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
