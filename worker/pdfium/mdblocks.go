package pdfium

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Markdown blocks, built from a structure tree or from lines, then rendered.
// Kept apart from PDFium so the rules are tested on their own.

type blockKind int

const (
	paragraph blockKind = iota
	heading
	list
	table
)

type block struct {
	kind  blockKind
	level int    // heading: 1–6
	text  string // heading, paragraph
	items []item // list
	rows  [][]string
}

type item struct {
	depth   int // nesting, 0 at the top
	ordered bool
	num     int
	text    string
}

// isBlock: structure types (ISO 32000-1 14.8.4) that are blocks of their
// own. An element holding one of them is read block by block, any other
// element is one paragraph of its text.
func isBlock(n *node) bool {
	if n.mcid >= 0 {
		return false
	}
	switch n.typ {
	case "H", "H1", "H2", "H3", "H4", "H5", "H6", "Title", "P", "L", "LI", "Table",
		"Figure", "Caption", "TOCI", "BlockQuote", "Div", "Sect", "Art", "Part",
		"Document", "TOC", "Index":
		return true
	}
	return false
}

// blocks reads a structure tree into Markdown blocks; text holds the text
// of each marked-content ID of the page.
func (n *node) blocks(text map[int]string) []block {
	var out []block
	n.walk(text, &out)
	return out
}

func (n *node) walk(text map[int]string, out *[]block) {
	switch t := n.typ; {
	case t == "H" || t == "Title":
		addText(out, block{kind: heading, level: 1}, n.text(text))
	case len(t) == 2 && t[0] == 'H' && t[1] >= '1' && t[1] <= '6':
		addText(out, block{kind: heading, level: int(t[1] - '0')}, n.text(text))
	case t == "L":
		var items []item
		n.listItems(text, 0, &items)
		if len(items) > 0 {
			*out = append(*out, block{kind: list, items: items})
		}
	case t == "Table":
		if rows := n.tableRows(text); len(rows) > 0 {
			*out = append(*out, block{kind: table, rows: rows})
		}
	case t == "Figure":
		if n.alt != "" {
			addText(out, block{kind: paragraph}, n.alt)
		} else {
			addText(out, block{kind: paragraph}, n.text(text))
		}
	case n.hasBlocks():
		// Text beside blocks (a Div's loose text) is a paragraph of its own.
		var loose []string
		for _, k := range n.kids {
			if isBlock(k) {
				addText(out, block{kind: paragraph}, strings.Join(loose, " "))
				loose = nil
				k.walk(text, out)
				continue
			}
			loose = append(loose, k.text(text))
		}
		addText(out, block{kind: paragraph}, strings.Join(loose, " "))
	default:
		addText(out, block{kind: paragraph}, n.text(text))
	}
}

func (n *node) hasBlocks() bool {
	for _, k := range n.kids {
		if isBlock(k) {
			return true
		}
	}
	return false
}

// addText appends b with text unless the text is blank.
func addText(out *[]block, b block, text string) {
	if b.text = squash(text); b.text != "" {
		*out = append(*out, b)
	}
}

// text is all the text under n in order, pieces joined by one space where
// neither side has one.
func (n *node) text(text map[int]string) string {
	var b strings.Builder
	n.appendText(text, &b)
	return squash(b.String())
}

func (n *node) appendText(text map[int]string, b *strings.Builder) {
	if n.mcid >= 0 {
		b.WriteString(text[n.mcid])
		return
	}
	for _, k := range n.kids {
		k.appendText(text, b)
	}
}

// squash collapses runs of white space into one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// listItems reads the LI of an L: Lbl is the label ("1." makes the item
// ordered, a bullet or nothing not), the rest the item's text; an L inside
// an item is a nested list.
func (n *node) listItems(text map[int]string, depth int, items *[]item) {
	if depth > 8 {
		return
	}
	for _, li := range n.kids {
		if li.typ == "L" {
			li.listItems(text, depth+1, items)
			continue
		}
		if li.typ != "LI" {
			continue
		}
		it := item{depth: depth}
		var body []string
		var nested []*node
		for _, k := range li.kids {
			switch {
			case k.typ == "Lbl":
				it.ordered, it.num = ordinal(k.text(text))
			case k.typ == "L":
				nested = append(nested, k)
			case k.typ == "LBody" && slices.ContainsFunc(k.kids, func(c *node) bool { return c.typ == "L" }):
				for _, c := range k.kids {
					if c.typ == "L" {
						nested = append(nested, c)
					} else {
						body = append(body, c.text(text))
					}
				}
			default:
				body = append(body, k.text(text))
			}
		}
		it.text = squash(strings.Join(body, " "))
		if !it.ordered {
			// A label that is no element of its own: the item's text starts with it.
			it.text = stripBullet(it.text)
		}
		*items = append(*items, it)
		for _, l := range nested {
			l.listItems(text, depth+1, items)
		}
	}
}

// ordinal reads a list label such as "3." or "3)".
func ordinal(label string) (bool, int) {
	label = strings.TrimPrefix(strings.TrimSpace(label), "(")
	n, rest, ok := number(label)
	return ok && (rest == "." || rest == ")"), n
}

// number reads the decimal number s starts with (at most 9 digits).
func number(s string) (int, string, bool) {
	i := 0
	for i < len(s) && i < 10 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 9 {
		return 0, s, false
	}
	n, err := strconv.Atoi(s[:i])
	return n, s[i:], err == nil
}

// bullets start an unordered list item of an untagged page (U+F0B7 and
// U+F0A7 are Symbol and Wingdings bullets as Word writes them).
const bullets = "•◦▪▫‣●○■□–-*\uf0b7\uf0a7"

// bulletItem: s is a bullet, optional space, then the item's text.
func bulletItem(s string) (string, bool) {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || !strings.ContainsRune(bullets, r) {
		return "", false
	}
	rest := strings.TrimLeft(s[size:], " \t")
	if rest == "" || ((r == '-' || r == '*') && rest == s[size:]) {
		return "", false // "-" or "*" without a space is a word ("-5", "*args")
	}
	return rest, true
}

// numberedItem: "12. text" or "12) text".
func numberedItem(s string) (int, string, bool) {
	n, rest, ok := number(s)
	if !ok || len(rest) < 2 || (rest[0] != '.' && rest[0] != ')') || rest[1] != ' ' {
		return 0, "", false
	}
	text := strings.TrimSpace(rest[1:])
	return n, text, text != ""
}

// tableRows reads TR (directly or under THead, TBody, TFoot) and their TH
// and TD cells.
func (n *node) tableRows(text map[int]string) [][]string {
	var rows [][]string
	for _, k := range n.kids {
		switch k.typ {
		case "TR":
			var row []string
			for _, c := range k.kids {
				if c.typ == "TH" || c.typ == "TD" {
					row = append(row, c.text(text))
				}
			}
			if len(row) > 0 {
				rows = append(rows, row)
			}
		case "THead", "TBody", "TFoot":
			rows = append(rows, k.tableRows(text)...)
		}
	}
	return rows
}

// line is a line of an untagged page.
type line struct {
	text string
	size float64 // font size of most of its letters, points
	x, y float64 // where its first letter starts, on the baseline
}

// Layout rules for untagged pages.
const (
	headingRatio   = 1.2 // a heading's font is at least this much larger than the body's
	maxHeadingLen  = 120 // longer lines are paragraphs in a large font, not headings
	paragraphSpace = 1.6 // baselines further apart than this × the font size start a paragraph
)

// layoutBlocks classifies the lines of untagged pages.
func layoutBlocks(lines []line) []block {
	if len(lines) == 0 {
		return nil
	}
	// The body size is the one most letters have.
	bySize := map[float64]int{}
	for _, l := range lines {
		bySize[l.size] += len(l.text)
	}
	body := modeSize(bySize)
	var headSizes []float64
	isHeading := func(l line) bool {
		return body > 0 && l.size >= body*headingRatio && len(l.text) <= maxHeadingLen
	}
	for _, l := range lines {
		if isHeading(l) && !slices.Contains(headSizes, l.size) {
			headSizes = append(headSizes, l.size)
		}
	}
	slices.SortFunc(headSizes, func(a, b float64) int { return compareDesc(a, b) })

	var out []block
	var para []string
	var prev *line
	itemX := 0.0 // where the last list item's bullet is
	flush := func() {
		addText(&out, block{kind: paragraph}, strings.Join(para, " "))
		para = nil
	}
	for i := range lines {
		l := lines[i]
		switch {
		case isHeading(l):
			flush()
			lvl := min(slices.Index(headSizes, l.size)+1, 6)
			// A heading over two lines: the lines of one size run together.
			if n := len(out); n > 0 && prev != nil && out[n-1].kind == heading && out[n-1].level == lvl && prev.size == l.size {
				out[n-1].text += " " + l.text
			} else {
				addText(&out, block{kind: heading, level: lvl}, l.text)
			}
		case isItem(l.text):
			flush()
			itemX = l.x
			var it item
			if n, text, ok := numberedItem(l.text); ok {
				it = item{ordered: true, num: n, text: text}
			} else {
				it.text, _ = bulletItem(l.text)
			}
			if n := len(out); n > 0 && out[n-1].kind == list && out[n-1].items[0].ordered == it.ordered {
				out[n-1].items = append(out[n-1].items, it)
			} else {
				out = append(out, block{kind: list, items: []item{it}})
			}
		default:
			gap := prev != nil && l.size > 0 && (prev.y-l.y > paragraphSpace*l.size || prev.y < l.y)
			if gap || (len(out) > 0 && len(para) == 0) {
				flush()
			}
			if n := len(out); len(para) == 0 && n > 0 && out[n-1].kind == list && !gap && prev != nil && l.x > itemX+1 {
				// A wrapped list item goes on: indented past the bullet, no gap.
				last := &out[n-1].items[len(out[n-1].items)-1]
				last.text += " " + l.text
				break
			}
			para = append(para, l.text)
		}
		prev = &lines[i]
	}
	flush()
	return out
}

func compareDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func isItem(s string) bool {
	_, ok := bulletItem(s)
	_, _, ok2 := numberedItem(s)
	return ok || ok2
}

// stripBullet drops a bullet that starts a list item's text.
func stripBullet(s string) string {
	if rest, ok := bulletItem(s); ok {
		return rest
	}
	return s
}

// render writes blocks as Markdown, one blank line between blocks.
func render(blocks []block) string {
	var b strings.Builder
	for i, bl := range blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		switch bl.kind {
		case heading:
			b.WriteString(strings.Repeat("#", bl.level) + " " + escapeInline(bl.text) + "\n")
		case paragraph:
			b.WriteString(escapeLead(escapeInline(bl.text)) + "\n")
		case list:
			for _, it := range bl.items {
				b.WriteString(strings.Repeat("   ", it.depth))
				if it.ordered {
					b.WriteString(strconv.Itoa(it.num) + ". ")
				} else {
					b.WriteString("- ")
				}
				b.WriteString(escapeLead(escapeInline(it.text)) + "\n")
			}
		case table:
			cols := 0
			for _, r := range bl.rows {
				cols = max(cols, len(r))
			}
			for ri, r := range bl.rows {
				b.WriteString("|")
				for c := range cols {
					cell := ""
					if c < len(r) {
						cell = strings.ReplaceAll(escapeInline(r[c]), "|", `\|`)
					}
					b.WriteString(" " + cell + " |")
				}
				b.WriteString("\n")
				if ri == 0 {
					// GitHub tables need a header row: the first row is it.
					b.WriteString("|" + strings.Repeat(" --- |", cols) + "\n")
				}
			}
		}
	}
	return b.String()
}

// escapeInline escapes what would turn text into emphasis, code, a link or
// HTML: the PDF's text is text.
func escapeInline(s string) string {
	if !strings.ContainsAny(s, "\\*_`[]<") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\*_`[]<", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// escapeLead escapes what would make a paragraph or an item's text a
// heading, quote, list item or rule.
func escapeLead(s string) string {
	if s == "" {
		return s
	}
	if _, rest, ok := number(s); ok && len(rest) >= 1 && (rest[0] == '.' || rest[0] == ')') && (len(rest) == 1 || rest[1] == ' ') {
		i := len(s) - len(rest)
		return s[:i] + `\` + s[i:]
	}
	switch s[0] {
	case '#', '>', '|':
		return `\` + s
	case '-', '+', '=':
		if len(s) == 1 || s[1] == ' ' || strings.Trim(s, s[:1]) == "" {
			return `\` + s
		}
	}
	return s
}
