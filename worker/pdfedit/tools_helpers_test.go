package pdfedit

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
)

// assemble builds a PDF 1.4 whose object i+1 is objs[i] (object 1 the
// catalog) with an exact cross-reference table; trailerExtra goes into
// the trailer dictionary.
func assemble(objs [][]byte, trailerExtra string) []byte {
	var buf bytes.Buffer
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = buf.Len()
		fmt.Fprintf(&buf, "%d 0 obj\n", i+1)
		buf.Write(o)
		buf.WriteString("\nendobj\n")
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailerExtra, xref)
	return buf.Bytes()
}

// stream is a stream object of dict (without /Length) and data.
func stream(dict string, data []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<< %s /Length %d >>\nstream\n", dict, len(data))
	b.Write(data)
	b.WriteString("\nendstream")
	return b.Bytes()
}

func deflated(data []byte) []byte {
	var b bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return b.Bytes()
}

// onePage is the objects of a one-page A4 document (catalog, pages, page,
// content drawing text) followed by extra, with pageExtra in the page
// dictionary; extra's objects are numbered from 5.
func onePage(text, pageExtra string, extra ...[]byte) []byte {
	content := fmt.Sprintf("BT /F1 18 Tf 72 760 Td (%s) Tj ET\n", text)
	objs := [][]byte{
		[]byte("<< /Type /Catalog /Pages 2 0 R >>"),
		[]byte("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
		[]byte("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> " + pageExtra + " >> >>"),
		stream("", []byte(content)),
	}
	return assemble(append(objs, extra...), "")
}

// noisyImage is w×h samples of comps components with enough detail that
// deflate cannot squeeze them and JPEG can.
func noisyImage(w, h, comps int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, w*h*comps)
	for y := range h {
		for x := range w {
			for c := range comps {
				b[(y*w+x)*comps+c] = byte((x*3+y*5+c*80)%256) ^ byte(r.IntN(24))
			}
		}
	}
	return b
}

// imagePDF is a one-page A4 document drawing image XObjects /Im0, /Im1,
// ... (their dictionaries and data given) over the whole page.
func imagePDF(images ...[]byte) []byte {
	var names, draws strings.Builder
	for i := range images {
		fmt.Fprintf(&names, "/Im%d %d 0 R ", i, 5+i)
		fmt.Fprintf(&draws, "q 595 0 0 842 0 0 cm /Im%d Do Q\n", i)
	}
	objs := [][]byte{
		[]byte("<< /Type /Catalog /Pages 2 0 R >>"),
		[]byte("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
		[]byte("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /XObject << " + names.String() + ">> >> >>"),
		stream("", []byte(draws.String())),
	}
	return assemble(append(objs, images...), "")
}

// imageObj is an image XObject of w×h samples, deflated.
func imageObj(w, h int, cs string, comps int, extra string) []byte {
	return stream(fmt.Sprintf("/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace %s /BitsPerComponent 8 /Filter /FlateDecode %s", w, h, cs, extra),
		deflated(noisyImage(w, h, comps)))
}

// formPDF is a one-page form pdfcpu makes: a text field holding value and
// a checked check box.
func formPDF(tb testing.TB, value string) []byte {
	tb.Helper()
	spec := `{"paper": "A4P", "origin": "LowerLeft",
	 "fonts": {"input": {"name": "Helvetica", "size": 12}},
	 "pages": {"1": {"content": {
	   "text": [{"value": "FORMPAGE", "pos": [100, 780], "font": {"name": "$input"}}],
	   "textfield": [{"id": "name", "value": "` + value + `", "pos": [100, 700], "width": 150, "font": {"name": "$input"}}],
	   "checkbox": [{"id": "agree", "value": true, "pos": [100, 650], "width": 12}]}}}}`
	newConf(0) // pdfcpu's config directory off, as the package wants
	var b bytes.Buffer
	if err := api.Create(nil, strings.NewReader(spec), &b, nil); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// isBad reports whether err is a *BadInputError.
func isBad(err error) bool {
	var bad *BadInputError
	return errors.As(err, &bad)
}

// optionField is the field an *OptionError names, or "".
func optionField(err error) string {
	var opt *OptionError
	if errors.As(err, &opt) {
		return opt.Field
	}
	return ""
}

// rotations is each page's rotation as pdfinfo reports it.
func rotations(tb testing.TB, path string, n int) []int {
	tb.Helper()
	rot := regexp.MustCompile(`(?m)^Page\s+(\d+) rot:\s+(\d+)`)
	out := make([]int, n)
	for _, m := range rot.FindAllStringSubmatch(run(tb, "pdfinfo", "-f", "1", "-l", strconv.Itoa(n), path), -1) {
		p, _ := strconv.Atoi(m[1])
		r, _ := strconv.Atoi(m[2])
		if p >= 1 && p <= n {
			out[p-1] = r
		}
	}
	return out
}

// qpdfCheck fails the test when qpdf --check finds the file broken or
// warns.
func qpdfCheck(tb testing.TB, path string) {
	tb.Helper()
	out := run(tb, "qpdf", "--check", path)
	if !strings.Contains(out, "No syntax or stream encoding errors found") || strings.Contains(strings.ToLower(out), "warning") {
		tb.Fatalf("qpdf --check %s:\n%s", path, out)
	}
}

// qdf is the file rewritten by qpdf uncompressed, for searching.
func qdf(tb testing.TB, path string) string {
	tb.Helper()
	return run(tb, "qpdf", "--qdf", "--object-streams=disable", path, "-")
}
