package pdfcheck

import (
	"bytes"
	"maps"
	"slices"
	"strconv"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// checkBytes runs the file-structure rules on c.pdf. The trailer and the
// stream offsets come from a model of these very bytes: c.x when it was
// read from them, else a fresh read.
func (c *checker) checkBytes() {
	pdf := c.pdf
	c.checkHeader(pdf)
	c.checkEOF(pdf)
	if !c.pdfa() {
		return
	}
	c.checkXRefEOL(pdf)
	bx := c.x
	if !c.sameFile {
		bx = nil
		if xctx, err := read(pdf); err == nil {
			bx = xctx.XRefTable
		}
	}
	if bx == nil {
		return
	}
	if len(bx.ID) == 0 {
		c.report("6.1.3-1", "trailer", "the trailer has no file identifier (ID)")
	}
	if bx.Encrypt != nil {
		c.report("6.1.3-2", "trailer", "the file is encrypted (Encrypt in the trailer)")
	}
	c.checkStreamKeywords(bx, pdf)
}

// checkHeader: 6.1.2-1 ("%PDF-1.n" at byte 0, then one EOL), 6.1.2-2 (a
// binary comment of at least four bytes above 127), UA 6.1-1.
func (c *checker) checkHeader(pdf []byte) {
	eol := 0
	ok := len(pdf) >= 9 && bytes.HasPrefix(pdf, []byte("%PDF-1.")) && pdf[7] >= '0' && pdf[7] <= '7'
	if ok {
		eol = eolLen(pdf[8:])
		ok = eol > 0
	}
	if !ok {
		h := pdf[:min(len(pdf), 12)]
		if c.pdfa() {
			c.report("6.1.2-1", "file header", "the file does not start with %%PDF-1.n (n 0…7) and one EOL: %q", h)
		}
		if c.lvl.PDFUA && !bytes.Contains(pdf[:min(len(pdf), 1024)], []byte("%PDF-1.")) {
			c.report("UA 6.1-1", "file header", "no %%PDF-1.n header: %q", h)
		}
		return
	}
	if !c.pdfa() {
		return
	}
	rest := pdf[8+eol:]
	if len(rest) < 5 || rest[0] != '%' || rest[1] < 128 || rest[2] < 128 || rest[3] < 128 || rest[4] < 128 {
		c.report("6.1.2-2", "file header", "the header is not followed by a comment of at least four bytes above 127")
	}
}

// eolLen is the length of the EOL marker at the start of b: 2 for CR LF,
// 1 for CR or LF, 0 for none.
func eolLen(b []byte) int {
	switch {
	case len(b) >= 2 && b[0] == '\r' && b[1] == '\n':
		return 2
	case len(b) >= 1 && (b[0] == '\r' || b[0] == '\n'):
		return 1
	}
	return 0
}

// checkEOF: 6.1.3-3, nothing but one optional EOL after the last %%EOF.
func (c *checker) checkEOF(pdf []byte) {
	if !c.pdfa() {
		return
	}
	i := bytes.LastIndex(pdf, []byte("%%EOF"))
	if i < 0 {
		c.report("6.1.3-3", "file", "the file has no %%%%EOF marker")
		return
	}
	after := pdf[i+5:]
	if n := eolLen(after); n != len(after) {
		c.report("6.1.3-3", "file", "%d bytes follow the last %%%%EOF marker", len(after))
	}
}

// checkXRefEOL: 6.1.4-2, the last classic cross-reference table's xref
// keyword is followed by one EOL and a subsection header.
func (c *checker) checkXRefEOL(pdf []byte) {
	i := bytes.LastIndex(pdf, []byte("startxref"))
	if i < 0 {
		return
	}
	j := i + len("startxref")
	for j < len(pdf) && isSpace(pdf[j]) {
		j++
	}
	k := j
	for k < len(pdf) && pdf[k] >= '0' && pdf[k] <= '9' {
		k++
	}
	off, err := strconv.ParseInt(string(pdf[j:k]), 10, 64)
	if err != nil || off < 0 || off >= int64(len(pdf)) || !bytes.HasPrefix(pdf[off:], []byte("xref")) {
		return // an xref stream, or a broken startxref (pdfcpu reads it anyway)
	}
	rest := pdf[off+4:]
	n := eolLen(rest)
	if n == 0 || len(rest) <= n || rest[n] < '0' || rest[n] > '9' {
		c.report("6.1.4-2", "cross-reference table", "the xref keyword is not followed by one EOL and the subsection header")
	}
}

// checkStreamKeywords: 6.1.7.1-1 (Length is the real length) and 6.1.7.1-2
// (stream followed by CR LF or LF, endstream preceded by an EOL), from the
// offsets pdfcpu recorded while reading pdf.
func (c *checker) checkStreamKeywords(bx *model.XRefTable, pdf []byte) {
	for _, nr := range slices.Sorted(maps.Keys(bx.Table)) {
		e := bx.Table[nr]
		if e == nil || e.Free || e.Compressed || e.Object == nil {
			continue
		}
		sd, ok := e.Object.(types.StreamDict)
		if !ok || sd.StreamOffset <= 0 || sd.StreamOffset > int64(len(pdf)) {
			continue
		}
		obj := "object " + strconv.Itoa(nr)
		off := sd.StreamOffset
		head := pdf[max(0, off-8):off]
		if !bytes.HasSuffix(head, []byte("stream\r\n")) && !bytes.HasSuffix(head, []byte("stream\n")) {
			c.report("6.1.7.1-2", obj, "the stream keyword is not followed by CR LF or LF alone")
		}
		if sd.StreamLength == nil {
			continue
		}
		end := off + *sd.StreamLength
		if end < off || end > int64(len(pdf)) {
			c.report("6.1.7.1-1", obj, "the stream's Length %d runs past the end of the file", *sd.StreamLength)
			continue
		}
		tail := pdf[end:]
		switch n := eolLen(tail); {
		case bytes.HasPrefix(tail[n:], []byte("endstream")) && n > 0:
		case bytes.HasPrefix(tail, []byte("endstream")):
			c.report("6.1.7.1-2", obj, "the endstream keyword is not preceded by an EOL")
		default:
			c.report("6.1.7.1-1", obj, "the stream's Length %d is not its real length", *sd.StreamLength)
		}
	}
}

func isSpace(b byte) bool {
	switch b {
	case ' ', '\t', '\r', '\n', '\f', 0:
		return true
	}
	return false
}
