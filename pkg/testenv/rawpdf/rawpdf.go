// Package rawpdf writes test PDFs object by object, so that each hostile
// shape a test names is exactly that shape (Chromium-made PDFs are in the
// tests' testdata).
package rawpdf

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"strings"
)

// Build writes objects 1..n (objs[0] is object 1, the catalog) with a
// correct xref table.
func Build(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// Stream is a stream object of data, dict's entries and its /Length.
func Stream(dict, data string) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

// TextPages has one page of width×height points per entry of pages, each
// entry's lines drawn in 12 pt Helvetica from the top.
func TextPages(width, height float64, pages ...[]string) []byte {
	n := len(pages)
	// 1 catalog, 2 pages, 3 font, then page and content per page.
	kids := make([]string, n)
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"}
	for i, lines := range pages {
		page, content := 4+2*i, 5+2*i
		kids[i] = fmt.Sprintf("%d 0 R", page)
		var c strings.Builder
		fmt.Fprintf(&c, "BT /F1 12 Tf 14 TL 72 %.0f Td\n", height-72)
		for _, l := range lines {
			fmt.Fprintf(&c, "(%s) Tj T*\n", l)
		}
		c.WriteString("ET")
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", width, height, content),
			Stream("", c.String()))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n)
	return Build(objs...)
}

// BombStream is a flate stream object of size zero bytes, a few KiB
// compressed.
func BombStream(size int) string {
	const chunk = 1 << 20
	var one bytes.Buffer
	w, _ := flate.NewWriter(&one, flate.BestCompression)
	w.Write(make([]byte, chunk))
	w.Flush() // a non-final block: copies of it follow one another
	var z bytes.Buffer
	z.Write([]byte{0x78, 0x9c})
	for range size / chunk {
		z.Write(one.Bytes())
	}
	z.Write([]byte{0x03, 0x00}) // a final empty block
	// Adler-32 of zeros: a stays 1, b adds 1 per byte.
	binary.Write(&z, binary.BigEndian, uint32(((size/chunk*chunk)%65521)<<16|1))
	return fmt.Sprintf("<< /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream", z.Len(), z.String())
}

// SlowPages has n pages sharing one content stream of size zero bytes:
// each page keeps a reader busy, the file stays small.
func SlowPages(n, size int) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", ""}
	kids := make([]string, n)
	for i := range n {
		kids[i] = fmt.Sprintf("%d 0 R", 3+i)
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>", 3+n))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n)
	return Build(append(objs, BombStream(size))...)
}
