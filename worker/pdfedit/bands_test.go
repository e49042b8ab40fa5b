package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/docrender/docrender/worker/pdfcheck"
)

// skipWithoutTools skips a test when poppler or qpdf is missing.
func skipWithoutTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// bandsPDF is a bands document of n pages of w×h points whose media box
// starts at (x0, y0): page p says "Band p of n" near the bottom and
// "HEAD" near the top, in one font shared through the page tree's
// inherited resources.
func bandsPDF(n int, x0, y0, w, h float64) []byte {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	var kids []string
	for p := range n {
		kids = append(kids, fmt.Sprintf("%d 0 R", 4+2*p))
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /MediaBox [%g %g %g %g] /Resources << /Font << /F1 3 0 R >> >> >>",
		strings.Join(kids, " "), n, x0, y0, x0+w, y0+h))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for p := 1; p <= n; p++ {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /Contents %d 0 R >>", 5+2*(p-1)))
		c := fmt.Sprintf("BT /F1 9 Tf %g %g Td (Band %d of %d) Tj ET\nBT /F1 9 Tf %g %g Td (HEAD) Tj ET\n",
			x0+300, y0+20, p, n, x0+40, y0+h-30)
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", len(c), c))
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return buf.Bytes()
}

var bandWord = regexp.MustCompile(`<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>`)

// wordAt is the box (xMin, yMin, xMax, yMax) of word on page p
// (pdftotext -bbox: points from the page box's top left).
func wordAt(t testing.TB, pdf []byte, p int, word string) [4]float64 {
	t.Helper()
	n := strconv.Itoa(p)
	out := run(t, "pdftotext", "-q", "-bbox", "-f", n, "-l", n, tmpPDF(t, pdf), "-")
	for _, m := range bandWord.FindAllStringSubmatch(out, -1) {
		if m[5] == word {
			var b [4]float64
			for i := range b {
				b[i], _ = strconv.ParseFloat(m[i+1], 64)
			}
			return b
		}
	}
	t.Fatalf("page %d: no word %q in\n%s", p, word, out)
	return [4]float64{}
}

func TestStampBands(t *testing.T) {
	skipWithoutTools(t, "pdftotext", "pdfinfo", "qpdf")
	ctx := context.Background()
	a4 := func(n int) []byte { return bandsPDF(n, 0, 0, 595, 842) }
	for _, tc := range []struct {
		name    string
		content []byte
		bands   []byte
	}{
		{"plain", rawPDF("C", 3, 2), a4(3)},
		{"object streams", qpdfPDF(t, "C", 3), a4(3)},
		{"band media box elsewhere", rawPDF("C", 3, 2), bandsPDF(3, 50, -20, 595, 842)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := StampBands(ctx, tc.content, tc.bands)
			if err != nil {
				t.Fatal(err)
			}
			path := tmpPDF(t, out)
			run(t, "qpdf", "--check", path)
			if got := pdfinfoPages(t, path); got != 3 {
				t.Fatalf("%d pages", got)
			}
			for p := 1; p <= 3; p++ {
				text := pageText(t, path, p)
				for _, want := range []string{pageLabel("C", p), fmt.Sprintf("Band %d of 3", p), "HEAD"} {
					if !hasText(text, want) {
						t.Errorf("page %d: %q missing from %q", p, want, text)
					}
				}
				// Exactly where the band page has it.
				for _, w := range []string{"Band", "HEAD"} {
					got, want := wordAt(t, out, p, w), wordAt(t, tc.bands, p, w)
					for i := range got {
						if math.Abs(got[i]-want[i]) > 1 {
							t.Errorf("page %d: %q at %v, on its band at %v", p, w, got, want)
							break
						}
					}
				}
			}
			// The content is drawn once, before the band: untouched.
			if n := strings.Count(pageText(t, path, 2), pageLabel("C", 2)); n != 1 {
				t.Errorf("page 2's label %d times", n)
			}
		})
	}
}

// TestStampBandsTagged stamps a tagged Chromium PDF: still tagged, the
// same structure, the band outside it (an artifact), no new PDF/UA
// violation.
func TestStampBandsTagged(t *testing.T) {
	skipWithoutTools(t, "pdftotext", "pdfinfo")
	content := chromiumPDF(t)
	out, err := StampBands(context.Background(), content, bandsPDF(2, 0, 0, 612, 792))
	if err != nil {
		t.Fatal(err)
	}
	path := tmpPDF(t, out)
	if info := run(t, "pdfinfo", path); !regexp.MustCompile(`(?m)^Tagged:\s+yes`).MatchString(info) {
		t.Errorf("not tagged:\n%s", info)
	}
	if !hasText(pageText(t, path, 2), "Band 2 of 2") {
		t.Errorf("page 2 has no band: %q", pageText(t, path, 2))
	}
	got, want := run(t, "pdfinfo", "-struct-text", path), run(t, "pdfinfo", "-struct-text", tmpPDF(t, content))
	if got != want || strings.Contains(got, "Band") || strings.TrimSpace(got) == "" {
		t.Errorf("structure text:\n%s\nwas:\n%s", got, want)
	}
	before, err := pdfcheck.Check(content, pdfcheck.Level{PDFUA: true})
	if err != nil {
		t.Fatal(err)
	}
	after, err := pdfcheck.Check(out, pdfcheck.Level{PDFUA: true})
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, v := range before {
		old[v.String()] = true
	}
	for _, v := range after {
		// The test's bands use Helvetica, not embedded (Chromium's
		// embed theirs: render's TestBandsStamped).
		if v.Rule == "UA 7.21.4.1-1" && strings.Contains(v.Object, "form "+bandName) {
			continue
		}
		if !old[v.String()] {
			t.Errorf("new violation: %v", v)
		}
	}
	// The band's drawing is marked as an artifact.
	if !bytes.Contains(out, []byte("/Artifact <</Type /Pagination>> BDC")) {
		t.Error("no artifact marking")
	}
}

func TestStampBandsRefused(t *testing.T) {
	ctx := context.Background()
	good := rawPDF("C", 3, 1)
	bands := bandsPDF(3, 0, 0, 595, 842)
	var bad *BadInputError
	for _, tc := range []struct {
		name           string
		content, bands []byte
		want           func(error) bool
	}{
		{"fewer bands", good, bandsPDF(2, 0, 0, 595, 842), func(err error) bool { return errors.Is(err, ErrBandsMismatch) }},
		{"more bands", good, bandsPDF(4, 0, 0, 595, 842), func(err error) bool { return errors.Is(err, ErrBandsMismatch) }},
		{"other paper", good, bandsPDF(3, 0, 0, 612, 792), func(err error) bool { return errors.Is(err, ErrBandsMismatch) }},
		{"garbage content", []byte("%PDF-1.4\nnot really"), bands, func(err error) bool { return errors.As(err, &bad) && bad.Name == "content" }},
		{"garbage bands", good, []byte("hello"), func(err error) bool { return errors.As(err, &bad) && bad.Name == "bands" }},
		{"empty bands", good, nil, func(err error) bool { return errors.As(err, &bad) }},
		// pdfcpu may repair what is left: an error or a PDF, no panic.
		{"truncated content", good[:len(good)/2], bands, func(error) bool { return true }},
		{"truncated bands", good, bands[:len(bands)*2/3], func(error) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := StampBands(ctx, tc.content, tc.bands)
			if !tc.want(err) {
				t.Errorf("got %v (%d bytes)", err, len(out))
			}
		})
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := StampBands(cancelled, good, bands); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// FuzzStampBands: whatever the bytes, an error or a PDF, never a panic.
func FuzzStampBands(f *testing.F) {
	f.Add(rawPDF("C", 2, 1), bandsPDF(2, 0, 0, 595, 842))
	f.Add(rawPDF("C", 1, 0), []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj"))
	f.Fuzz(func(t *testing.T, content, bands []byte) {
		_, _ = StampBands(context.Background(), content, bands)
	})
}

// BenchmarkStampBands stamps 1000 bands on a plain 1000-page PDF: the
// whole of StampBands, and the stamping alone on a document read already
// (what Join would add).
func BenchmarkStampBands(b *testing.B) {
	const n = 1000
	content, bands := rawPDF("C", n, 10), bandsPDF(n, 0, 0, 595, 842)
	b.Run("bytes", func(b *testing.B) {
		for range b.N {
			if _, err := StampBands(context.Background(), content, bands); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("in-memory", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			pc, err := readPDF(context.Background(), "content", bytes.NewReader(content), newConf(0))
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := stampBands(context.Background(), pc, bands); err != nil {
				b.Fatal(err)
			}
		}
	})
}
