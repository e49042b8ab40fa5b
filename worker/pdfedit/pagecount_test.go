package pdfedit

import (
	"context"
	"os"
	"testing"
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
