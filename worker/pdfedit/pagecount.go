package pdfedit

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// PageCount returns the number of pages of pdf, a PDF this worker made
// (Chromium's print): its page tree's /Count, which the render report
// needs and nothing else. A pdfcpu panic is an error, as everywhere here.
//
// Chromium's PDFs are read by following three objects from the
// cross-reference table (chromiumPageCount): pdfcpu parses every object
// first, which for a tagged PDF's thousands of structure elements was the
// largest cost of a render on the worker's Go side (docs/benchmarks.md).
// Anything else goes to pdfcpu.
func PageCount(ctx context.Context, pdf []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("pdfedit: page count: %v", r)
		}
	}()
	if n, ok := chromiumPageCount(pdf); ok {
		return n, nil
	}
	pc, err := pdfcpu.ReadWithContext(ctx, bytes.NewReader(pdf), newConf(model.LISTINFO))
	if err != nil {
		return 0, fmt.Errorf("pdfedit: page count: %w", err)
	}
	if err := pc.EnsurePageCount(); err != nil {
		return 0, fmt.Errorf("pdfedit: page count: %w", err)
	}
	return pc.PageCount, nil
}

// QuickPageCount is the page count of a PDF in the layout Chromium writes
// (chromiumPageCount), read from its page tree's root without parsing the
// file: bounded work for any bytes. ok is false for any other layout.
func QuickPageCount(pdf []byte) (n int, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			n, ok = 0, false
		}
	}()
	return chromiumPageCount(pdf)
}

// chromiumPageCount reads /Count of the page tree's root the way Skia
// writes a PDF: a classic cross-reference table at startxref, a trailer
// naming the catalog, the catalog naming the page tree, all plain objects.
// ok is false for any other shape (object streams, an incremental update,
// a page tree whose root counts through something else).
func chromiumPageCount(pdf []byte) (n int, ok bool) {
	at := bytes.LastIndex(pdf, []byte("startxref"))
	if at < 0 {
		return 0, false
	}
	toks := pdfTokens(pdf[at+len("startxref"):], 1)
	if len(toks) != 1 {
		return 0, false
	}
	xref, err := strconv.Atoi(toks[0])
	if err != nil || xref < 0 || xref >= at || !bytes.HasPrefix(pdf[xref:], []byte("xref")) {
		return 0, false
	}
	table, trailer, ok := xrefTable(pdf, xref+len("xref"))
	if !ok || bytes.Contains(trailer, []byte("/Prev")) {
		return 0, false
	}
	root, ok := refIn(trailer, "/Root")
	if !ok {
		return 0, false
	}
	catalog, ok := object(pdf, table, root)
	if !ok {
		return 0, false
	}
	pagesRef, ok := refIn(catalog, "/Pages")
	if !ok {
		return 0, false
	}
	pages, ok := object(pdf, table, pagesRef)
	if !ok || dictValue(pages, "/Type") != "/Pages" {
		return 0, false
	}
	n, err = strconv.Atoi(dictValue(pages, "/Count"))
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// xrefTable reads the subsections of a classic cross-reference table that
// starts at pdf[i:], and the trailer dictionary after them. Entries are
// not copied: a subsection is where its 20-byte entries start.
func xrefTable(pdf []byte, i int) (table []subsection, trailer []byte, ok bool) {
	for {
		i = skipSpace(pdf, i)
		if bytes.HasPrefix(pdf[i:], []byte("trailer")) {
			start := skipSpace(pdf, i+len("trailer"))
			end := dictEnd(pdf, start)
			if end < 0 {
				return nil, nil, false
			}
			return table, pdf[start:end], true
		}
		line := bytes.IndexByte(pdf[i:], '\n')
		if line < 0 || len(table) == maxSubsections {
			return nil, nil, false
		}
		head := pdfTokens(pdf[i:i+line], 3)
		if len(head) != 2 {
			return nil, nil, false
		}
		first, err1 := strconv.Atoi(head[0])
		count, err2 := strconv.Atoi(head[1])
		i += line + 1
		if err1 != nil || err2 != nil || first < 0 || count < 0 || count > (len(pdf)-i)/20 {
			return nil, nil, false
		}
		table = append(table, subsection{first: first, count: count, at: i})
		i += 20 * count
	}
}

// maxSubsections bounds a table's subsections (Skia writes one).
const maxSubsections = 1024

// subsection is a run of a cross-reference table: count entries of 20
// bytes from pdf[at], for the objects first, first+1, ...
type subsection struct{ first, count, at int }

// entry is the 20 bytes of object n's entry, or nil.
func entry(pdf []byte, table []subsection, n int) []byte {
	for _, s := range table {
		if n >= s.first && n < s.first+s.count {
			at := s.at + 20*(n-s.first)
			return pdf[at : at+20]
		}
	}
	return nil
}

// object returns the dictionary of the in-use object ref ("n g") at its
// table entry's offset.
func object(pdf []byte, table []subsection, ref [2]int) ([]byte, bool) {
	e := entry(pdf, table, ref[0])
	if e == nil || e[17] != 'n' {
		return nil, false
	}
	off, err := strconv.Atoi(string(e[:10]))
	if err != nil || off < 0 || off >= len(pdf) {
		return nil, false
	}
	head := pdfTokens(pdf[off:], 3)
	if len(head) != 3 || head[0] != strconv.Itoa(ref[0]) || head[1] != strconv.Itoa(ref[1]) || head[2] != "obj" {
		return nil, false
	}
	start := bytes.Index(pdf[off:min(off+64, len(pdf))], []byte("<<"))
	if start < 0 {
		return nil, false
	}
	start += off
	end := dictEnd(pdf, start)
	if end < 0 {
		return nil, false
	}
	return pdf[start:end], true
}

// refIn is the indirect reference that key names at the top level of dict.
func refIn(dict []byte, key string) ([2]int, bool) {
	v := dictEntry(dict, key)
	if len(v) != 3 || v[2] != "R" {
		return [2]int{}, false
	}
	n, err1 := strconv.Atoi(v[0])
	g, err2 := strconv.Atoi(v[1])
	return [2]int{n, g}, err1 == nil && err2 == nil && n > 0 && g >= 0
}

// dictValue is the single-token value that key names at the top level of
// dict ("" if none, or not a single token).
func dictValue(dict []byte, key string) string {
	if v := dictEntry(dict, key); len(v) == 1 {
		return v[0]
	}
	return ""
}

// dictEntry is the tokens of the value that key names at the top level of
// dict (which starts with "<<"); nil if none.
func dictEntry(dict []byte, key string) []string {
	t := pdfTokens(dict, -1)
	if len(t) == 0 || t[0] != "<<" {
		return nil
	}
	for i := 1; i < len(t) && t[i] != ">>"; {
		k := t[i]
		n := valueLen(t[i+1:])
		if k[0] != '/' || n == 0 {
			return nil
		}
		if k == key {
			return t[i+1 : i+1+n]
		}
		i += 1 + n
	}
	return nil
}

// valueLen is the number of tokens of the value t starts with: a
// dictionary or array to its end, a reference "n g R", or one token; 0 if
// t starts with no value.
func valueLen(t []string) int {
	if len(t) == 0 {
		return 0
	}
	switch t[0] {
	case "<<", "[":
		depth := 0
		for i, s := range t {
			switch s {
			case "<<", "[":
				depth++
			case ">>", "]":
				depth--
			}
			if depth == 0 {
				return i + 1
			}
		}
		return 0
	case ">>", "]":
		return 0
	}
	if len(t) >= 3 && t[2] == "R" && isUint(t[0]) && isUint(t[1]) {
		return 3
	}
	return 1
}

func isUint(s string) bool {
	_, err := strconv.ParseUint(s, 10, 31)
	return err == nil
}

// dictEnd is the index just past the dictionary that starts at pdf[i:], or
// -1.
func dictEnd(pdf []byte, i int) int {
	if !bytes.HasPrefix(pdf[i:], []byte("<<")) {
		return -1
	}
	depth := 0
	for j := i; j < len(pdf); {
		switch {
		case bytes.HasPrefix(pdf[j:], []byte("<<")):
			depth++
			j += 2
		case bytes.HasPrefix(pdf[j:], []byte(">>")):
			depth--
			j += 2
			if depth == 0 {
				return j
			}
		case pdf[j] == '(':
			j = stringEnd(pdf, j)
			if j < 0 {
				return -1
			}
		default:
			j++
		}
	}
	return -1
}

// stringEnd is the index just past the literal string at pdf[i] == '(',
// or -1: parentheses nest, a backslash escapes the next byte.
func stringEnd(pdf []byte, i int) int {
	depth := 0
	for j := i; j < len(pdf); j++ {
		switch pdf[j] {
		case '\\':
			j++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}

// pdfSpace and pdfDelim are PDF's white-space and delimiter characters
// (ISO 32000-1 7.2.2) as tables: the lazy join and split scan every byte
// of the objects they copy, and a call per byte to bytes.IndexByte was
// 40% of a tagged join (docs/benchmarks.md, session 15).
var (
	pdfSpace = [256]bool{' ': true, '\n': true, '\r': true, '\t': true, '\f': true, 0: true}
	pdfDelim = [256]bool{'(': true, ')': true, '<': true, '>': true, '[': true, ']': true, '{': true, '}': true, '/': true, '%': true}
)

func isSpace(c byte) bool { return pdfSpace[c] }

func isDelim(c byte) bool { return pdfDelim[c] }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// pdfTokens splits b into PDF tokens, at most max (all when max < 0):
// names keep their slash, strings and hex strings are one token each,
// comments are dropped.
func pdfTokens(b []byte, max int) []string {
	var out []string
	for i := skipSpace(b, 0); i < len(b) && (max < 0 || len(out) < max); i = skipSpace(b, i) {
		start := i
		switch c := b[i]; {
		case c == '%':
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
			continue
		case bytes.HasPrefix(b[i:], []byte("<<")), bytes.HasPrefix(b[i:], []byte(">>")):
			i += 2
		case c == '<':
			end := bytes.IndexByte(b[i:], '>')
			if end < 0 {
				return out
			}
			i += end + 1
		case c == '(':
			if i = stringEnd(b, i); i < 0 {
				return out
			}
		case c == '[' || c == ']' || c == '{' || c == '}' || c == '>' || c == ')':
			i++
		default: // a name, number or keyword
			i++
			for i < len(b) && !isSpace(b[i]) && !isDelim(b[i]) {
				i++
			}
		}
		out = append(out, string(b[start:i]))
	}
	return out
}
