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
// writes it, whether read by one process or cut in parts.
func TestText(t *testing.T) {
	pdf := readFile(t, longPDF)
	want := reference(t, longPDF)
	if len(want) != 50 {
		t.Fatalf("reference has %d pages", len(want))
	}
	all := make([]int, 50)
	for i := range all {
		all[i] = i
	}
	for _, parts := range []int{1, 2, 4} {
		e := engine(t, Config{Parts: parts})
		for _, idx := range [][]int{all, {4, 0, 49, 4}, {17}, {30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46}} {
			t.Run(fmt.Sprintf("parts %d, pages %v", parts, idx), func(t *testing.T) {
				got, err := e.Text(context.Background(), pdf, idx)
				if err != nil {
					t.Fatal(err)
				}
				var w strings.Builder
				for _, i := range idx {
					w.WriteString(want[i])
				}
				if got != w.String() {
					t.Errorf("text differs from pdftotext's:\n%.300q\nwant\n%.300q", got, w.String())
				}
			})
		}
	}
}

// TestTextNotRead: what pdftotext does not read as expected is left to
// PDFium (ErrNotRead), each process ended, and the engine reads the next.
func TestTextNotRead(t *testing.T) {
	e := engine(t, Config{})
	pdf := readFile(t, longPDF)
	cases := []struct {
		name string
		pdf  []byte
		idx  []int
	}{
		{"not a PDF", []byte("hello, not a PDF"), []int{0}},
		{"truncated", pdf[:len(pdf)/3], []int{0}},
		{"a password", readFile(t, encryptedPDF), []int{0}},
		// A page count that lied: pdftotext writes fewer pages.
		{"pages past the end", pdf, []int{48, 49, 50, 51}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Text(context.Background(), tc.pdf, tc.idx)
			if !errors.Is(err, ErrNotRead) {
				t.Fatalf("error %v, want ErrNotRead", err)
			}
		})
	}
	if _, err := e.Text(context.Background(), pdf, []int{0}); err != nil {
		t.Fatalf("next text: %v", err)
	}
}

// TestTextBounds: the output cap, the address-space bound and the
// deadline each end pdftotext.
func TestTextBounds(t *testing.T) {
	pdf := readFile(t, longPDF)
	t.Run("output", func(t *testing.T) {
		e := engine(t, Config{MaxOutput: 1000})
		for _, idx := range [][]int{{0}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}} {
			var large *TooLargeError
			if _, err := e.Text(context.Background(), pdf, idx); !errors.As(err, &large) {
				t.Errorf("pages %v: error %v, want *TooLargeError", idx, err)
			}
		}
		// Two pages each under the cap, together over it.
		e = engine(t, Config{MaxOutput: int64(len(reference(t, longPDF)[0])) + 10})
		var large *TooLargeError
		if _, err := e.Text(context.Background(), pdf, []int{0, 0}); !errors.As(err, &large) {
			t.Errorf("the same page twice: error %v, want *TooLargeError", err)
		}
	})
	t.Run("memory", func(t *testing.T) {
		// The bound is the process's: the document that reads in 64 MiB
		// of address space does not in 8.
		if _, err := engine(t, Config{MaxMemory: 64 << 20}).Text(context.Background(), pdf, []int{0, 1}); err != nil {
			t.Fatalf("in 64 MiB: %v", err)
		}
		if _, err := engine(t, Config{MaxMemory: 8 << 20}).Text(context.Background(), pdf, []int{0, 1}); !errors.Is(err, ErrNotRead) {
			t.Errorf("in 8 MiB: error %v, want ErrNotRead", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		e := engine(t, Config{})
		slow := rawpdf.SlowPages(16, 400<<20) // seconds of parsing a page
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := e.Text(ctx, slow, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
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
	idx := make([]int, 50)
	for i := range idx {
		idx[i] = i
	}
	b.Run("engine", func(b *testing.B) {
		e := engine(b, Config{})
		for b.Loop() {
			if _, err := e.Text(context.Background(), pdf, idx); err != nil {
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
