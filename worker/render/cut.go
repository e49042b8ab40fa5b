package render

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

// Cutting a page's source (DESIGN §10) before any tab loads it. planJS
// cuts the loaded page by its layout, but the job's tab must first load
// and lay out the whole page, one core's work (~4 s of a 1,145-page
// ledger's 17 s) before any slice starts, while the other core waits: with
// it two slots can never be 1.6× faster than one (docs/benchmarks.md). A
// job that asks for slices (split: true) says its page is long, so its
// source is cut here instead, by the size of its blocks rather than their
// height, and each slice is loaded by its own tab as a page of its own
// (hooks, waits and report as any page), all at once.
//
// The cuts are planJS's: between the body's blocks, the rows of a long
// table (its head kept in every slice) or the children of a long
// container; near equal shares of the source's bytes; at a forced page
// break where the page's CSS makes one within half a share (read from its
// <style> elements, linked stylesheets of the job's files and style
// attributes, for selectors of one element: h2, .chapter, #s4, section.x),
// else before a heading, else at the first block past the share.

// Bounds on a source cut here (every byte is a tenant's): the elements
// parsed into a tree in the worker's memory (~112 bytes each; a larger
// page is cut after loading, as before), the break rules kept from its
// CSS, the headings given to the outline and the text of each title.
const (
	maxCutElements = 1 << 20
	maxBreakRules  = 10_000
	maxCutHeadings = 10_000
	maxTitleBytes  = 1 << 10
	// replacedWeight is what an image, a canvas or an embedded object
	// weighs in a slice's share, in bytes of source: about a page's worth
	// of a dense ledger, so that a page of scans is not one slice of
	// thousands of pages (Chromium fails such a print).
	replacedWeight = 6 << 10
)

// cutting says how a source is cut.
type cutting struct {
	// slots is how many render slots print the slices at once.
	slots int
	// slicePages bounds a slice's pages by its size (replacedWeight
	// bytes a page), as SlicePages bounds a loaded page's estimated
	// pages; 0: only sliceBytes bounds it.
	slicePages int
	// minPages > 0: only a body of at least minPages pages by its
	// content's size (contentSize over replacedWeight) is cut.
	minPages int
}

// cutHTML cuts src, the job's entry page entry (without scripts), into
// slices as c says, as planJS does the loaded page; files are the job's
// files (its linked stylesheets are read for page breaks).
// errUnsplittable: the source is not cut.
func cutHTML(ctx context.Context, src string, files egress.Bundle, entry string, c cutting) (*slicePlan, error) {
	if strings.Count(src, "<") > maxCutElements {
		return nil, errUnsplittable
	}
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil || tooDeep(doc, maxCutDepth) {
		return nil, errUnsplittable
	}
	var head, body *html.Node
	for n := range elements(doc) {
		if n.DataAtom == atom.Head && head == nil {
			head = n
		}
		if n.DataAtom == atom.Body {
			body = n
			break
		}
	}
	if body == nil || textIn(body) || c.minPages > 0 && contentSize(body) < c.minPages*replacedWeight {
		return nil, errUnsplittable
	}
	breaks := &breakRules{}
	read := map[string]bool{}
	ids := map[string]bool{}
	for n := range elements(doc) {
		if id, ok := attr(n, "id"); ok {
			ids[id] = true
		}
		if hasAttr(n, "data-page-of") || hasAttr(n, "data-pages-total") || n.DataAtom == atom.Nav && hasAttr(n, "data-toc") {
			// Page references (refsSelector) need the passes of one print.
			return nil, errUnsplittable
		}
		switch n.DataAtom {
		case atom.Style:
			breaks.add(textOf(n, -1))
		case atom.Link:
			if name, css, ok := stylesheet(n, files, entry); ok && !read[name] {
				read[name] = true
				breaks.add(css)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	plan := &slicePlan{}
	if head != nil {
		for n := range elements(head) {
			if n.DataAtom == atom.Title {
				plan.Title = collapse(textOf(n, maxTitleBytes))
				break
			}
		}
	}
	fresh := 0
	targets := map[string]bool{}
	for n := range elements(body) {
		level := headingLevel(n)
		if level == 0 || len(plan.Headings) >= maxCutHeadings {
			continue
		}
		title := collapse(textOf(n, maxTitleBytes))
		if title == "" {
			continue
		}
		id, ok := attr(n, "id")
		if !ok || id == "" {
			for {
				fresh++
				id = "docrender-h-" + strconv.Itoa(fresh)
				if !ids[id] {
					break
				}
			}
			ids[id] = true
			setAttr(n, "id", id)
		}
		plan.Headings = append(plan.Headings, pdfedit.Heading{Level: level, Title: title, Dest: id})
		targets[id] = true
	}
	for id := range linkedIDs(body) {
		targets[id] = true
	}
	total := size(body)
	perSlice := sliceBytes
	if c.slicePages > 0 {
		perSlice = min(perSlice, c.slicePages*replacedWeight)
	}
	k := cutCount(total, c.slots, perSlice)
	share := max(total/k, 1)
	var units, shells []*html.Node
	var visit func(el *html.Node, depth int)
	visit = func(el *html.Node, depth int) {
		for c := el.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || c.DataAtom == atom.Script || c.DataAtom == atom.Template || pageWide(c) {
				// Kept in every slice.
				continue
			}
			if depth < 4 && size(c) > share {
				switch {
				case c.DataAtom == atom.Table:
					if rows := tableRows(c); len(rows) > 1 {
						shells = append(shells, c)
						units = append(units, rows...)
						continue
					}
				case isContainer(c) && elementChildren(c) > 1 && !textIn(c):
					shells = append(shells, c)
					visit(c, depth+1)
					continue
				}
			}
			units = append(units, c)
		}
	}
	visit(body, 0)
	if len(units) < 2 {
		return nil, errUnsplittable
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tops := make([]int, len(units))
	at := 0
	for i, u := range units {
		tops[i] = at
		at += size(u)
	}
	forced := func(u *html.Node) bool {
		if breaks.breaksBefore(u) {
			return true
		}
		prev := u.PrevSibling
		for prev != nil && prev.Type != html.ElementNode {
			prev = prev.PrevSibling
		}
		return prev != nil && breaks.breaksAfter(prev)
	}
	spanned := rowsSpanned(shells)
	cuts := cutPoints(tops, share, k, func(j int) bool { return forced(units[j]) }, func(j int) bool { return headingLevel(units[j]) > 0 },
		func(j int) bool { return !spanned[units[j]] })
	if len(cuts) == 0 {
		return nil, errUnsplittable
	}
	bounds := append(append([]int{0}, cuts...), len(units))
	sorted := sortedKeys(targets)
	for s := 0; s+1 < len(bounds); s++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out, err := renderSlice(doc, body, units, shells, bounds[s], bounds[s+1], sorted)
		if err != nil {
			return nil, err
		}
		plan.Slices = append(plan.Slices, out)
	}
	return plan, nil
}

// elements yields the elements under n in document order, not those
// inside a <template>: its content is not the page's (no heading, ID or
// link of it is shown).
func elements(n *html.Node) iter.Seq[*html.Node] {
	return func(yield func(*html.Node) bool) {
		var walk func(n *html.Node) bool
		walk = func(n *html.Node) bool {
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type != html.ElementNode {
					continue
				}
				if !yield(c) {
					return false
				}
				if c.DataAtom != atom.Template && !walk(c) {
					return false
				}
			}
			return true
		}
		walk(n)
	}
}

// pageWide reports whether el, in the body, serves the whole page rather
// than its place in it: styles, metadata, image maps, an SVG of
// definitions only (sprites, gradients): it stays in every slice.
func pageWide(el *html.Node) bool {
	switch el.DataAtom {
	case atom.Style, atom.Link, atom.Meta, atom.Base, atom.Map:
		return true
	case atom.Svg:
		for c := el.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.Data {
			case "defs", "symbol", "title", "desc", "style":
			default:
				return false
			}
		}
		return true
	}
	return false
}

// rowsSpanned are the rows of the shells' tables that a cell of an
// earlier row spans into: a slice starting there would shift its cells.
func rowsSpanned(shells []*html.Node) map[*html.Node]bool {
	spanned := map[*html.Node]bool{}
	for _, t := range shells {
		if t.DataAtom != atom.Table {
			continue
		}
		reach := 0 // rows still covered by a rowspan above
		for _, r := range tableRows(t) {
			if reach > 0 {
				spanned[r] = true
				reach--
			}
			for c := r.FirstChild; c != nil; c = c.NextSibling {
				if c.Type != html.ElementNode {
					continue
				}
				if v, ok := attr(c, "rowspan"); ok {
					if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 1 {
						reach = max(reach, min(n, 65534)-1)
					}
				}
			}
		}
	}
	return spanned
}

// cutPoints picks where the slices start (indexes into units, ascending,
// each allowed): near (i+1) shares down the source, a forced break within
// half a share the nearest, else a heading within half a share the
// nearest, else the first unit at or past the share.
func cutPoints(tops []int, share, k int, forced, heading, allowed func(int) bool) []int {
	var cuts []int
	from := 1
	for i := 1; i < k && from < len(tops); i++ {
		want, slack := tops[0]+share*i, share/2
		at, best, head := -1, -1, -1
		near := func(j, than int) bool { return than < 0 || abs(tops[j]-want) < abs(tops[than]-want) }
		for j := from; j < len(tops) && tops[j] <= want+slack; j++ {
			if !allowed(j) {
				continue
			}
			if at < 0 && tops[j] >= want {
				at = j
			}
			if tops[j] >= want-slack {
				if forced(j) && near(j, best) {
					best = j
				} else if heading(j) && near(j, head) {
					head = j
				}
			}
		}
		switch {
		case best >= 0:
			at = best
		case head >= 0:
			at = head
		}
		if at < 0 {
			for j := from; j < len(tops); j++ {
				if tops[j] >= want && allowed(j) {
					at = j
					break
				}
			}
		}
		if at < 0 {
			break
		}
		cuts = append(cuts, at)
		from = at + 1
	}
	return cuts
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// detached is a node taken out of the tree for one slice, and where it was.
type detached struct {
	n, parent, next *html.Node
}

// renderSlice writes the document with only units lo to hi-1 in it (and
// the shells that still hold some), the hidden links and stand-ins planJS
// adds, then puts the tree back as it was.
func renderSlice(doc, body *html.Node, units, shells []*html.Node, lo, hi int, targets []string) (string, error) {
	var gone []detached
	take := func(n *html.Node) {
		gone = append(gone, detached{n: n, parent: n.Parent, next: n.NextSibling})
		n.Parent.RemoveChild(n)
	}
	for i, u := range units {
		if i < lo || i >= hi {
			take(u)
		}
	}
	for i := len(shells) - 1; i >= 0; i-- {
		sh := shells[i]
		kept := elementChildren(sh) > 0
		if sh.DataAtom == atom.Table {
			kept = len(tableRows(sh)) > 0
		}
		if !kept && sh.Parent != nil {
			take(sh)
		}
	}
	held := map[string]bool{}
	for n := range elements(body) {
		if id, ok := attr(n, "id"); ok {
			held[id] = true
		}
	}
	refs := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div, Attr: []html.Attribute{
		{Key: "aria-hidden", Val: "true"}, {Key: "data-docrender-refs"}, {Key: "style", Val: "display:none !important"}}}
	for _, id := range targets {
		if held[id] {
			refs.AppendChild(&html.Node{Type: html.ElementNode, Data: "a", DataAtom: atom.A, Attr: []html.Attribute{
				{Key: "href", Val: "#" + encodeURIComponent(id)}, {Key: "tabindex", Val: "-1"}}})
		}
	}
	for _, id := range sortedKeys(linkedIDs(body)) {
		if !held[id] {
			refs.AppendChild(&html.Node{Type: html.ElementNode, Data: "span", DataAtom: atom.Span, Attr: []html.Attribute{{Key: "id", Val: id}}})
		}
	}
	body.AppendChild(refs)
	var b bytes.Buffer
	err := html.Render(&b, doc)
	body.RemoveChild(refs)
	for i := len(gone) - 1; i >= 0; i-- {
		g := gone[i]
		g.parent.InsertBefore(g.n, g.next)
	}
	if err != nil {
		return "", fmt.Errorf("render: write slice: %w", err)
	}
	return b.String(), nil
}

// size is n's length in the source, about: its text, its tags and
// attributes, replacedWeight more for an image or embedded object.
func size(n *html.Node) int { return measure(n, false) }

// contentSize is size without attribute values (a data: URL, an SVG
// path) nor what a replaced element holds: what the page shows, about,
// for whether it is long.
func contentSize(n *html.Node) int { return measure(n, true) }

func measure(n *html.Node, content bool) int {
	switch n.Type {
	case html.TextNode:
		return len(n.Data)
	case html.ElementNode:
		s := 2*len(n.Data) + 5
		switch n.DataAtom {
		case atom.Img, atom.Svg, atom.Canvas, atom.Video, atom.Iframe, atom.Object, atom.Embed:
			if s += replacedWeight; content {
				return s
			}
		}
		if !content {
			for _, a := range n.Attr {
				s += len(a.Key) + len(a.Val) + 4
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			s += measure(c, content)
		}
		return s
	}
	return 0
}

// textIn reports whether el holds text directly (not only in elements).
func textIn(el *html.Node) bool {
	for c := el.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode && strings.TrimSpace(c.Data) != "" {
			return true
		}
	}
	return false
}

func elementChildren(el *html.Node) int {
	n := 0
	for c := el.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			n++
		}
	}
	return n
}

func isContainer(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Div, atom.Section, atom.Article, atom.Main:
		return true
	}
	return false
}

// tableRows are the rows of t's bodies (the parser gives every table one).
func tableRows(t *html.Node) []*html.Node {
	var rows []*html.Node
	for tb := t.FirstChild; tb != nil; tb = tb.NextSibling {
		if tb.Type != html.ElementNode || tb.DataAtom != atom.Tbody {
			continue
		}
		for r := tb.FirstChild; r != nil; r = r.NextSibling {
			if r.Type == html.ElementNode && r.DataAtom == atom.Tr {
				rows = append(rows, r)
			}
		}
	}
	return rows
}

func headingLevel(n *html.Node) int {
	switch n.DataAtom {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	return 0
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasAttr(n *html.Node, key string) bool {
	_, ok := attr(n, key)
	return ok
}

func setAttr(n *html.Node, key, val string) {
	for i, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

// textOf is n's textContent, its first max bytes (max < 0: all).
func textOf(n *html.Node, max int) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
			if max >= 0 && b.Len() >= max {
				return strings.ToValidUTF8(b.String()[:max], "")
			}
		}
	}
	return b.String()
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// linkedIDs are the IDs the links under root point to (href="#id").
func linkedIDs(root *html.Node) map[string]bool {
	ids := map[string]bool{}
	for n := range elements(root) {
		if n.DataAtom != atom.A {
			continue
		}
		href, _ := attr(n, "href")
		id, ok := strings.CutPrefix(href, "#")
		if !ok || id == "" {
			continue
		}
		if dec, err := decodeURIComponent(id); err == nil {
			id = dec
		}
		if id != "" {
			ids[id] = true
		}
	}
	return ids
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// encodeURIComponent is JavaScript's: all but A-Z a-z 0-9 - _ . ! ~ * ' ( )
// percent-encoded as UTF-8.
func encodeURIComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// decodeURIComponent is JavaScript's, as planJS calls it on a link's
// fragment.
func decodeURIComponent(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("render: bad escape in %q", s)
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("render: bad escape in %q", s)
		}
		b.WriteByte(byte(v))
		i += 2
	}
	if !utf8.ValidString(b.String()) {
		// JavaScript's throws: planJS kept the fragment as written.
		return "", fmt.Errorf("render: %q is not UTF-8 escaped", s)
	}
	return b.String(), nil
}

// breakRules are the page's rules that force a page break before or
// after an element, for selectors of one element, indexed by the id,
// class or tag each needs (a unit is matched against its own keys' rules
// only). Past maxBreakRules the page's CSS is not read for breaks at all
// (cuts fall before headings instead): a hostile sheet costs no more.
type breakRules struct {
	before, after map[string][]simpleSelector
	n             int
	off           bool
}

// simpleSelector is tag, .class, #id or a compound of them.
type simpleSelector struct {
	tag, id string
	classes []string
}

// key is where s is indexed: its id, else its first class, else its tag.
func (s simpleSelector) key() string {
	switch {
	case s.id != "":
		return "#" + s.id
	case len(s.classes) > 0:
		return "." + s.classes[0]
	}
	return s.tag
}

var (
	// cssRule is a rule's last selector list and its declarations: for
	// "@media print { h2 { … } }" the "h2".
	cssRule = regexp.MustCompile(`([^{};]*)\{([^{}]*)\}`)
	// breakDecl is a declaration that forces a page break.
	breakDecl      = regexp.MustCompile(`(?i)(?:^|[;\s])(page-break-|break-)(before|after)\s*:\s*(page|left|right|recto|verso|always)\b`)
	cssComment     = regexp.MustCompile(`(?s)/\*.*?\*/`)
	simpleSelRegex = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9-]*)?((?:[.#][a-zA-Z_-][a-zA-Z0-9_-]*)*)$`)
)

// stylesheet is the name and text of the job's file a <link
// rel=stylesheet> names.
func stylesheet(link *html.Node, files egress.Bundle, entry string) (name, css string, ok bool) {
	rel, _ := attr(link, "rel")
	href, _ := attr(link, "href")
	if !slices.Contains(strings.Fields(strings.ToLower(rel)), "stylesheet") || href == "" || strings.Contains(href, ":") || strings.HasPrefix(href, "/") {
		return "", "", false
	}
	href, _, _ = strings.Cut(href, "#")
	href, _, _ = strings.Cut(href, "?")
	name = path.Join(path.Dir(entry), href)
	data, ok := files[name]
	return name, string(data), ok
}

// maxCutDepth bounds the nesting of a page cut here (the walks recurse):
// Chromium's own parser nests no deeper than 512.
const maxCutDepth = 512

// tooDeep reports whether n nests elements deeper than max, without
// recursing.
func tooDeep(n *html.Node, max int) bool {
	type at struct {
		n     *html.Node
		depth int
	}
	stack := []at{{n, 0}}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if top.depth > max {
			return true
		}
		for c := top.n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, at{c, top.depth + 1})
		}
	}
	return false
}

// add reads the rules of a stylesheet's text.
func (r *breakRules) add(css string) {
	if r.off {
		return
	}
	css = cssComment.ReplaceAllString(css, "")
	for _, m := range cssRule.FindAllStringSubmatch(css, -1) {
		for _, d := range breakDecl.FindAllStringSubmatch(m[2], -1) {
			for _, sel := range strings.Split(m[1], ",") {
				s, ok := parseSimple(strings.TrimSpace(sel))
				if !ok {
					continue
				}
				if r.n++; r.n > maxBreakRules {
					r.off, r.before, r.after = true, nil, nil
					return
				}
				side := &r.after
				if strings.EqualFold(d[2], "before") {
					side = &r.before
				}
				if *side == nil {
					*side = map[string][]simpleSelector{}
				}
				(*side)[s.key()] = append((*side)[s.key()], s)
			}
		}
	}
}

func parseSimple(sel string) (simpleSelector, bool) {
	m := simpleSelRegex.FindStringSubmatch(sel)
	if m == nil || sel == "" {
		return simpleSelector{}, false
	}
	s := simpleSelector{tag: strings.ToLower(m[1])}
	rest := m[2]
	for rest != "" {
		kind := rest[0]
		end := strings.IndexAny(rest[1:], ".#")
		name := rest[1:]
		if end >= 0 {
			name, rest = rest[1:end+1], rest[end+1:]
		} else {
			rest = ""
		}
		if kind == '#' {
			s.id = name
		} else {
			s.classes = append(s.classes, name)
		}
	}
	return s, true
}

func (s simpleSelector) matches(n *html.Node) bool {
	if s.tag != "" && s.tag != n.Data {
		return false
	}
	if s.id != "" {
		if id, _ := attr(n, "id"); id != s.id {
			return false
		}
	}
	if len(s.classes) > 0 {
		class, _ := attr(n, "class")
		have := strings.Fields(class)
		for _, c := range s.classes {
			if !slices.Contains(have, c) {
				return false
			}
		}
	}
	return true
}

func (r *breakRules) forces(n *html.Node, rules map[string][]simpleSelector, side string) bool {
	if style, ok := attr(n, "style"); ok {
		for _, d := range breakDecl.FindAllStringSubmatch(style, -1) {
			if strings.EqualFold(d[2], side) {
				return true
			}
		}
	}
	if len(rules) == 0 {
		return false
	}
	keys := []string{n.Data}
	if id, ok := attr(n, "id"); ok {
		keys = append(keys, "#"+id)
	}
	if class, ok := attr(n, "class"); ok {
		for _, c := range strings.Fields(class) {
			keys = append(keys, "."+c)
		}
	}
	for _, k := range keys {
		for _, s := range rules[k] {
			if s.matches(n) {
				return true
			}
		}
	}
	return false
}

func (r *breakRules) breaksBefore(n *html.Node) bool { return r.forces(n, r.before, "before") }
func (r *breakRules) breaksAfter(n *html.Node) bool  { return r.forces(n, r.after, "after") }

// sliceBytes is the share of a page's source one slice of a page cut
// before loading is cut for, at most: ~190 pages of a dense ledger. A
// renderer's time a page grows with its document (one 573-page half of the
// 1,145-page ledger loads and prints in 1.8 + 4.3 s alone, 287 pages in
// 0.5 + 1.0), and two large documents at once on the two cores slow each
// other further (the two halves: 3.1-3.7 + 7.2-8.0 s each). So slices
// stay small, several a tab: 1,145 pages in 2 slices 10.7-13.9 s, 4 slices
// 8.7 s, 6 8.0 s, 8 7.8 s, 12 7.9 s (bench/cmd/longdoc, docs/benchmarks.md
// "Session 16"); each slice costs a load of the head and a print call.
const sliceBytes = 1 << 20

// cutCount is how many slices a body of n bytes (replaced elements
// weighed as a page each) is cut into: a multiple
// of the slots (slices that cannot all print at once leave a slot idle
// while the last ones print), each of at most perSlice bytes.
func cutCount(n, slots, perSlice int) int {
	slots = max(slots, 2)
	rounds := (n + slots*perSlice - 1) / (slots * perSlice)
	return min(max(rounds, 1)*slots, maxSlices)
}

// cutSource is the plan of rj's page cut before any tab loads it, for a
// job that asks for slices (split: true), or leaves it to the service and
// whose source is long by its size (at least SplitPages pages of
// replacedWeight bytes of content: 12 MB of text and tags for the default
// 2,000, no short page reaches it; a page below it is measured by its
// layout, as before), and whose page can be cut so:
// its own source without scripts, no page references, no wait that one
// slice could not see through (a selector or expression of the whole
// page), no page ranges, not a template's warm page. Its slices print in
// this worker's tabs and, with a farm, in other workers' (each loaded as
// the job's page is, its report sent back with its PDF: farm.go). nil:
// the page loads whole, as before.
func (r *Renderer) cutSource(ctx context.Context, b egress.Bundle, entry string, rj *jobspb.RenderJob, warm bool) *slicePlan {
	pr := rj.GetPrint()
	if r.SplitPages <= 0 || pr.GetSplit() == jobspb.Split_SPLIT_OFF || rj.GetUrl() != nil || warm ||
		pr.GetPageRanges() != "" || pr.GetToc() || pr.GetWaitForSelector() != "" || pr.GetWaitForExpression() != "" {
		return nil
	}
	minPages := 0
	if pr.GetSplit() != jobspb.Split_SPLIT_ON {
		minPages = r.SplitPages
		if len(b[entry]) < minPages*replacedWeight {
			return nil
		}
	}
	src, ok := scriptFree(b, entry)
	if !ok {
		return nil
	}
	plan, err := cutHTML(ctx, src, b, entry, cutting{slots: r.SplitSlots, slicePages: r.SlicePages, minPages: minPages})
	if err != nil {
		r.log().DebugContext(ctx, "split: the source is not cut; the page loads whole", "err", err)
		return nil
	}
	r.log().DebugContext(ctx, "split: the source is cut before loading", "slices", len(plan.Slices))
	return plan
}
