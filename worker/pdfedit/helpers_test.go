package pdfedit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The tests check pdfedit's output with independent tools: qpdf and
// poppler-utils (pdfinfo, pdftotext, pdftoppm, pdfimages).
// scripts/setup installs them (apt-get install -y poppler-utils qpdf).
func needTools(tb testing.TB, tools ...string) {
	tb.Helper()
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			tb.Fatalf("%s not found (apt-get install -y poppler-utils qpdf): %v", t, err)
		}
	}
}

// pageLabel is the text that identifies page p of document doc.
func pageLabel(doc string, p int) string {
	return fmt.Sprintf("%sPAGE%02d", doc, p)
}

// rawPDF builds a plain PDF 1.4 of n A4 pages; page p shows pageLabel(doc, p)
// and filler lines of text. Offsets and xref are exact.
func rawPDF(doc string, n, fillerLines int) []byte {
	return buildPDF(doc, n, fillerLines, false)
}

// outlinedPDF is rawPDF with an outline (bookmarks): one item per page,
// titled pageLabel, pointing at its page.
func outlinedPDF(doc string, n int) []byte {
	return buildPDF(doc, n, 1, true)
}

func buildPDF(doc string, n, fillerLines int, outline bool) []byte {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	// 1 catalog, 2 pages, 3 font, then per page: page, content.
	outlineRoot := 4 + 2*n
	if outline {
		obj(fmt.Sprintf("<< /Type /Catalog /Pages 2 0 R /Outlines %d 0 R /PageMode /UseOutlines >>", outlineRoot))
	} else {
		obj("<< /Type /Catalog /Pages 2 0 R >>")
	}
	var kids []string
	for p := range n {
		kids = append(kids, fmt.Sprintf("%d 0 R", 4+2*p))
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for p := 1; p <= n; p++ {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*(p-1)))
		var c strings.Builder
		fmt.Fprintf(&c, "BT /F1 20 Tf 72 770 Td (%s) Tj ET\n", pageLabel(doc, p))
		for l := range fillerLines {
			fmt.Fprintf(&c, "BT /F1 9 Tf 72 %d Td (Filler line %d of page %d: the quick brown fox jumps over the lazy dog.) Tj ET\n", 740-l*11, l+1, p)
		}
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", c.Len(), c.String()))
	}
	if outline {
		item := func(p int) int { return outlineRoot + p }
		obj(fmt.Sprintf("<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>", item(1), item(n), n))
		for p := 1; p <= n; p++ {
			d := fmt.Sprintf("<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /Fit]", pageLabel(doc, p), outlineRoot, 4+2*(p-1))
			if p > 1 {
				d += fmt.Sprintf(" /Prev %d 0 R", item(p-1))
			}
			if p < n {
				d += fmt.Sprintf(" /Next %d 0 R", item(p+1))
			}
			obj(d + " >>")
		}
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return buf.Bytes()
}

// qpdfPDF returns rawPDF rewritten by qpdf the way real-world producers write
// PDFs: compressed streams, object streams and a cross-reference stream.
func qpdfPDF(tb testing.TB, doc string, n int) []byte {
	tb.Helper()
	dir := tb.TempDir()
	in := filepath.Join(dir, "raw.pdf")
	out := filepath.Join(dir, "out.pdf")
	writeFile(tb, in, rawPDF(doc, n, 8))
	run(tb, "qpdf", "--object-streams=generate", "--compress-streams=y", in, out)
	return readFile(tb, out)
}

func writeFile(tb testing.TB, path string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// run runs a tool and returns its stdout; a non-zero exit fails the test.
// qpdf exit code 3 (success with warnings) is accepted.
func run(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !(ok && name == "qpdf" && ee.ExitCode() == 3) {
			tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
	}
	return stdout.String()
}

// tmpPDF writes b to a temporary file and returns its path.
func tmpPDF(tb testing.TB, b []byte) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "doc.pdf")
	writeFile(tb, p, b)
	return p
}

var pagesRe = regexp.MustCompile(`(?m)^Pages:\s+(\d+)`)

// pdfinfoPages is the page count pdfinfo reports.
func pdfinfoPages(tb testing.TB, path string) int {
	tb.Helper()
	m := pagesRe.FindStringSubmatch(run(tb, "pdfinfo", path))
	if m == nil {
		tb.Fatalf("pdfinfo %s: no page count", path)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// pageText is pdftotext's text of page p, in content stream order (-raw),
// so that rotated text keeps its letters together.
func pageText(tb testing.TB, path string, p int) string {
	tb.Helper()
	return run(tb, "pdftotext", "-q", "-raw", "-f", strconv.Itoa(p), "-l", strconv.Itoa(p), path, "-")
}

// hasText reports whether text contains word, ignoring white space (rotated
// text comes out one glyph run per line).
func hasText(text, word string) bool {
	return strings.Contains(strings.Join(strings.Fields(text), ""), strings.Join(strings.Fields(word), ""))
}
