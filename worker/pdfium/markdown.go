package pdfium

import (
	"context"
	"math"
	"strings"

	gopdfium "github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
)

// Bounds of a page's structure tree as read here: deeper or larger trees
// come from a broken or hostile PDF, and the page falls back to its layout.
const (
	maxTreeDepth = 64
	maxTreeNodes = 20_000
)

// Markdown returns the pages asked (1-based; none: all) as Markdown.
//
// A page whose structure tree (a tagged PDF) covers its text is read from
// the tree: H1–H6 become # … ######, L/LI list items (ordered when the label
// is a number), Table/TR/TH/TD GitHub tables, P and the rest paragraphs;
// artifacts (running headers and footers) are left out as the tags ask.
// Any other page is read from its layout: lines in a font clearly larger
// than the body's become headings (the largest size #), lines starting with
// a bullet or "1." list items, and lines further apart than the line height
// start a new paragraph.
//
// Not detected: tables, columns, bold and italic, links and images of
// untagged pages; code blocks and block quotes anywhere; a table or list
// that continues on the next page is cut in two.
func (e *Engine) Markdown(ctx context.Context, pdf []byte, pages []int) (string, error) {
	if e.procs != nil {
		text, _, err := e.procs.one(ctx, request{op: opMarkdown, pages: pages}, pdf)
		return text, err
	}
	var out string
	err := e.run(ctx, pdf, func(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT) error {
		idx, err := e.pageList(in, doc, pages)
		if err != nil {
			return err
		}
		var blocks []block
		var lines []line // untagged pages' lines, classified together: the body size is the document's
		room := e.cfg.MaxOutput
		for _, i := range idx {
			if err := ctx.Err(); err != nil {
				return err
			}
			pc, err := e.pageChars(in, doc, i, room)
			if err != nil {
				return err
			}
			room -= int64(len(pc.chars))
			tree, err := pageTree(in, doc, i)
			if err != nil {
				return err
			}
			if tree != nil {
				if tb := tree.blocks(pc.mcidText()); covers(tb, pc) {
					blocks = append(blocks, layoutBlocks(lines)...)
					lines = nil
					blocks = append(blocks, tb...)
					continue
				}
			}
			lines = append(lines, pc.lines()...)
		}
		blocks = append(blocks, layoutBlocks(lines)...)
		out = render(blocks)
		return nil
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

// char is one character of a page as PDFium's text page has it.
type char struct {
	r         rune
	generated bool    // a space or line end PDFium inferred from the layout
	mcid      int     // marked-content ID of its text object, -1 if none
	size      float64 // font size as drawn, in points
	x, y      float64 // origin, points from the page's bottom left
}

type pageChars struct{ chars []char }

// pageChars reads a page's characters: 4–5 wasm calls each, so Markdown
// costs several times Text. room bounds their number.
func (e *Engine) pageChars(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, i int, room int64) (pageChars, error) {
	var pc pageChars
	tp, err := in.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: pageByIndex(doc, i)})
	if err != nil {
		return pc, fail(err)
	}
	defer in.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	n, err := in.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil {
		return pc, fail(err)
	}
	if int64(n.Count) > room {
		return pc, badInput("pages", "the text of these pages is larger than %d bytes: ask for fewer pages", e.cfg.MaxOutput)
	}
	pc.chars = make([]char, 0, max(n.Count, 0))
	for k := 0; k < n.Count; k++ {
		u, err := in.FPDFText_GetUnicode(&requests.FPDFText_GetUnicode{TextPage: tp.TextPage, Index: k})
		if err != nil {
			return pc, fail(err)
		}
		c := char{r: rune(u.Unicode), mcid: -1}
		// A character without a text object is one PDFium generated.
		obj, err := in.FPDFText_GetTextObject(&requests.FPDFText_GetTextObject{TextPage: tp.TextPage, Index: k})
		if err != nil {
			c.generated = true
			pc.chars = append(pc.chars, c)
			continue
		}
		if m, err := in.FPDFPageObj_GetMarkedContentID(&requests.FPDFPageObj_GetMarkedContentID{PageObject: obj.TextObject}); err == nil {
			c.mcid = m.MarkedContentID
		}
		fs, err := in.FPDFText_GetFontSize(&requests.FPDFText_GetFontSize{TextPage: tp.TextPage, Index: k})
		if err != nil {
			return pc, fail(err)
		}
		c.size = fs.FontSize
		// The size as drawn: some writers set a unit font size and scale it
		// with the text matrix, Chromium draws in CSS pixels scaled by ¾.
		if m, err := in.FPDFText_GetMatrix(&requests.FPDFText_GetMatrix{TextPage: tp.TextPage, Index: k}); err == nil {
			if s := math.Hypot(float64(m.Matrix.C), float64(m.Matrix.D)); s > 0 {
				c.size *= s
			}
		}
		if o, err := in.FPDFText_GetCharOrigin(&requests.FPDFText_GetCharOrigin{TextPage: tp.TextPage, Index: k}); err == nil {
			c.x, c.y = o.X, o.Y
		}
		pc.chars = append(pc.chars, c)
	}
	return pc, nil
}

// mcidText gathers the text of each marked-content ID in page order. A
// generated character belongs to the real one before it, so a paragraph's
// line breaks become spaces.
func (pc pageChars) mcidText() map[int]string {
	bs := map[int]*strings.Builder{}
	last := -1
	for _, c := range pc.chars {
		id := c.mcid
		if c.generated {
			id = last
		}
		last = id
		if id < 0 {
			continue
		}
		b := bs[id]
		if b == nil {
			b = &strings.Builder{}
			bs[id] = b
		}
		r := c.r
		if r == '\r' || r == '\n' || r == '\t' {
			r = ' '
		}
		if r >= ' ' && r != 0xfffe && r != 0xffff {
			b.WriteRune(r)
		}
	}
	m := make(map[int]string, len(bs))
	for id, b := range bs {
		m[id] = b.String()
	}
	return m
}

// covers: the tree's blocks hold most of the page's letters (not counting
// artifacts, which are outside the tree on purpose). A tree that leaves out
// much of the text is too sparse to trust, and the layout is read instead.
func covers(tb []block, pc pageChars) bool {
	inTree := 0
	for _, b := range tb {
		inTree += letters(b.text)
		for _, row := range b.rows {
			for _, cell := range row {
				inTree += letters(cell)
			}
		}
		for _, it := range b.items {
			inTree += letters(it.text)
		}
	}
	onPage := 0
	for _, c := range pc.chars {
		if !c.generated && c.mcid >= 0 && c.r > ' ' {
			onPage++
		}
	}
	return inTree > 0 && inTree*2 >= onPage
}

func letters(s string) int {
	n := 0
	for _, r := range s {
		if r > ' ' {
			n++
		}
	}
	return n
}

// lines splits a page's characters at line ends into lines with their
// font size (the size most of their letters have) and baseline.
func (pc pageChars) lines() []line {
	var ls []line
	var b strings.Builder
	sizes := map[float64]int{}
	x, y, haveY := 0.0, 0.0, false
	flush := func() {
		t := strings.TrimSpace(b.String())
		if t != "" {
			ls = append(ls, line{text: t, size: modeSize(sizes), x: x, y: y})
		}
		b.Reset()
		clear(sizes)
		haveY = false
	}
	for _, c := range pc.chars {
		if c.r == '\r' {
			continue
		}
		if c.r == '\n' {
			flush()
			continue
		}
		if c.r < ' ' || c.r == 0xfffe || c.r == 0xffff {
			continue
		}
		b.WriteRune(c.r)
		if !c.generated && c.r > ' ' {
			sizes[roundSize(c.size)]++
			if !haveY {
				x, y, haveY = c.x, c.y, true
			}
		}
	}
	flush()
	return ls
}

// roundSize to half points: sizes that differ by less are one size.
func roundSize(s float64) float64 { return math.Round(s*2) / 2 }

func modeSize(sizes map[float64]int) float64 {
	best, n := 0.0, 0
	for s, k := range sizes {
		if k > n || (k == n && s > best) {
			best, n = s, k
		}
	}
	return best
}

// node is an element of a page's structure tree; kids are elements or, where
// mcid ≥ 0, marked content.
type node struct {
	typ  string
	alt  string
	mcid int
	kids []*node
}

// pageTree reads page i's structure tree; nil when the page has none.
// Errors reading one element leave it out rather than fail the page:
// broken trees are common and the layout is the fallback.
func pageTree(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, i int) (*node, error) {
	st, err := in.FPDF_StructTree_GetForPage(&requests.FPDF_StructTree_GetForPage{Page: pageByIndex(doc, i)})
	if err != nil {
		return nil, nil // untagged
	}
	defer in.FPDF_StructTree_Close(&requests.FPDF_StructTree_Close{StructTree: st.StructTree})
	n, err := in.FPDF_StructTree_CountChildren(&requests.FPDF_StructTree_CountChildren{StructTree: st.StructTree})
	if err != nil || n.Count <= 0 {
		return nil, nil
	}
	budget := maxTreeNodes
	root := &node{typ: "Document", mcid: -1}
	for k := 0; k < n.Count && budget > 0; k++ {
		el, err := in.FPDF_StructTree_GetChildAtIndex(&requests.FPDF_StructTree_GetChildAtIndex{StructTree: st.StructTree, Index: k})
		if err != nil {
			continue
		}
		if kid := readElement(in, el.StructElement, 0, &budget); kid != nil {
			root.kids = append(root.kids, kid)
		}
	}
	return root, nil
}

func readElement(in gopdfium.Pdfium, el references.FPDF_STRUCTELEMENT, depth int, budget *int) *node {
	if depth > maxTreeDepth || *budget <= 0 {
		return nil
	}
	*budget--
	n := &node{mcid: -1}
	if t, err := in.FPDF_StructElement_GetType(&requests.FPDF_StructElement_GetType{StructElement: el}); err == nil {
		n.typ = t.Type
	}
	if n.typ == "Figure" {
		if a, err := in.FPDF_StructElement_GetAltText(&requests.FPDF_StructElement_GetAltText{StructElement: el}); err == nil {
			n.alt = a.AltText
		}
	}
	c, err := in.FPDF_StructElement_CountChildren(&requests.FPDF_StructElement_CountChildren{StructElement: el})
	if err != nil {
		return n
	}
	for k := 0; k < c.Count && *budget > 0; k++ {
		kid, err := in.FPDF_StructElement_GetChildAtIndex(&requests.FPDF_StructElement_GetChildAtIndex{StructElement: el, Index: k})
		if err != nil {
			// Not an element: marked content on the page.
			if m, err := in.FPDF_StructElement_GetChildMarkedContentID(&requests.FPDF_StructElement_GetChildMarkedContentID{StructElement: el, Index: k}); err == nil && m.ChildMarkedContentID >= 0 {
				*budget--
				n.kids = append(n.kids, &node{mcid: m.ChildMarkedContentID})
			}
			continue
		}
		if kn := readElement(in, kid.StructElement, depth+1, budget); kn != nil {
			n.kids = append(n.kids, kn)
		}
	}
	return n
}
