package pdfcheck

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// resourceWalk checks resources (fonts, graphics states) and scans content
// streams: pages, the form XObjects they draw, annotation appearances.
type resourceWalk struct {
	c      *checker
	fonts  map[int]*fontInfo // by object number
	extg   map[int]bool
	forms  map[[2]int]bool // (object number, needs marking) scanned
	direct int             // direct font dictionaries checked
}

func newResourceWalk(c *checker) *resourceWalk {
	return &resourceWalk{c: c, fonts: map[int]*fontInfo{}, extg: map[int]bool{}, forms: map[[2]int]bool{}}
}

// page checks a page's resources and scans its content.
func (r *resourceWalk) page(p *page) {
	obj := fmt.Sprintf("page %d", p.n)
	r.resources(p.resources, obj)
	content := r.pageContent(p, obj)
	if content == nil {
		return
	}
	r.scan(content, p.resources, obj, &scanState{needMarking: r.c.lvl.PDFUA}, 0)
}

// pageContent concatenates the page's content streams.
func (r *resourceWalk) pageContent(p *page, obj string) []byte {
	c := r.c
	o, _ := c.x.Dereference(p.d["Contents"])
	var streams []types.Object
	switch v := o.(type) {
	case types.StreamDict:
		streams = []types.Object{v}
	case types.Array:
		streams = v
	}
	var buf bytes.Buffer
	for _, s := range streams {
		sd, _, err := c.x.DereferenceStreamDict(s)
		if err != nil || sd == nil {
			continue
		}
		b, ok := c.decode(sd, maxStreamBytes, obj+" content")
		if !ok {
			return nil
		}
		if buf.Len()+len(b) > maxStreamBytes {
			c.limit("content:"+obj, obj, "the content of %s is larger than the checker's bound", obj)
			return nil
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// resources checks the fonts and graphics states of a resource
// dictionary (not the XObjects: forms are checked when drawn).
func (r *resourceWalk) resources(res types.Dict, obj string) {
	c := r.c
	if res == nil {
		return
	}
	if fonts, err := c.x.DereferenceDict(res["Font"]); err == nil && fonts != nil {
		for _, name := range slices.Sorted(maps.Keys(fonts)) {
			r.font(fonts[name], obj+" font "+name)
		}
	}
	if !c.pdfa() {
		return
	}
	if gs, err := c.x.DereferenceDict(res["ExtGState"]); err == nil && gs != nil {
		for _, name := range slices.Sorted(maps.Keys(gs)) {
			o := gs[name]
			if ref, ok := o.(types.IndirectRef); ok {
				if r.extg[ref.ObjectNumber.Value()] {
					continue
				}
				r.extg[ref.ObjectNumber.Value()] = true
			}
			if d, err := c.x.DereferenceDict(o); err == nil && d != nil {
				c.checkExtGState(d, obj+" graphics state "+name)
			}
		}
	}
}

// standardBlendModes are ISO 32000-1's (6.2.10-1).
var standardBlendModes = map[string]bool{"Normal": true, "Compatible": true, "Multiply": true, "Screen": true,
	"Overlay": true, "Darken": true, "Lighten": true, "ColorDodge": true, "ColorBurn": true, "HardLight": true,
	"SoftLight": true, "Difference": true, "Exclusion": true, "Hue": true, "Saturation": true, "Color": true,
	"Luminosity": true}

var renderingIntents = map[string]bool{"RelativeColorimetric": true, "AbsoluteColorimetric": true,
	"Perceptual": true, "Saturation": true}

// checkExtGState: 6.2.5-1/2/3, 6.2.10-1, 6.2.6-1.
func (c *checker) checkExtGState(d types.Dict, obj string) {
	if d["TR"] != nil {
		c.report("6.2.5-1", obj, "the graphics state has a transfer function (TR)")
	}
	if d["TR2"] != nil && c.name(d["TR2"]) != "Default" {
		c.report("6.2.5-2", obj, "the graphics state has TR2 other than Default")
	}
	if d["HTP"] != nil {
		c.report("6.2.5-3", obj, "the graphics state has HTP")
	}
	bm, _ := c.x.Dereference(d["BM"])
	var modes []string
	switch v := bm.(type) {
	case types.Name:
		modes = []string{string(v)}
	case types.Array:
		for _, x := range v {
			modes = append(modes, c.name(x))
		}
	}
	for _, m := range modes {
		if !standardBlendModes[m] {
			c.report("6.2.10-1", obj, "the blend mode %q is not one of ISO 32000-1", m)
		}
	}
	if d["RI"] != nil && !renderingIntents[c.name(d["RI"])] {
		c.report("6.2.6-1", obj, "the rendering intent %q is not one of the four of ISO 32000-1", c.name(d["RI"]))
	}
}

// scanState is the marked-content state a content stream is scanned in.
type scanState struct {
	needMarking bool   // UA: painting must be tagged or an artifact
	marks       []bool // open marked-content sequences: does each tag or mark as artifact
}

func (s *scanState) marked() bool {
	return slices.Contains(s.marks, true)
}

// scan runs the content-stream rules over content drawn with res:
// 6.1.13-8 (q nesting), 6.2.4.3 (device colour), 6.2.6-1 (ri), 6.1.10-1
// and 6.2.8-3 (inline images), 6.2.11.8-1 / UA 7.21.8-1 (.notdef via
// Identity-H CID 0), UA 7.1-3 (text and images tagged or artifacts).
// Form XObjects are scanned where drawn, in the marked state of the Do.
func (r *resourceWalk) scan(content []byte, res types.Dict, obj string, st *scanState, depth int) {
	c := r.c
	c.contentBytes += len(content)
	if c.contentBytes > maxContentBytes {
		c.limit("contentBytes", obj, "the document's content is larger than the checker's bound (%d bytes); the rest is not checked", maxContentBytes)
		return
	}
	lx := lexer{b: content}
	var ops []token
	var font *fontInfo
	qDepth := 0
	baseMarks := len(st.marks)
	for {
		t := lx.next()
		if t.kind == tEOF {
			break
		}
		if t.kind != tOp {
			if len(ops) < 1<<16 {
				ops = append(ops, t)
			}
			continue
		}
		c.ops++
		if c.ops > maxOps {
			c.limit("ops", obj, "the document has more content operators than the checker's bound (%d); the rest is not checked", maxOps)
			return
		}
		op := string(t.v)
		switch op {
		case "q":
			qDepth++
			if qDepth > 28 && c.pdfa() {
				c.report("6.1.13-8", obj, "q/Q pairs nest deeper than 28 levels")
			}
		case "Q":
			qDepth = max(0, qDepth-1)
		case "BMC", "BDC":
			st.marks = append(st.marks, r.marksContent(ops, res))
		case "EMC":
			if len(st.marks) > baseMarks {
				st.marks = st.marks[:len(st.marks)-1]
			}
		case "Tf":
			font = nil
			if n := lastOf(ops, tName); n != nil {
				font = r.fontByName(res, string(n.v))
			}
		case "Tj", "'", "\"", "TJ":
			r.paint(st, obj, "text")
			if font != nil && font.cid0IsNotdef {
				for _, s := range ops {
					if (s.kind == tStr || s.kind == tHex) && hasZeroCID(s.str()) {
						if c.pdfa() {
							c.report("6.2.11.8-1", obj, "text shows CID 0 (.notdef) of font %s", font.name)
						}
						if c.lvl.PDFUA {
							c.report("UA 7.21.8-1", obj, "text shows CID 0 (.notdef) of font %s", font.name)
						}
						break
					}
				}
			}
		case "rg", "RG":
			c.deviceColour("DeviceRGB", res, obj)
		case "k", "K":
			c.deviceColour("DeviceCMYK", res, obj)
		case "g", "G":
			c.deviceColour("DeviceGray", res, obj)
		case "cs", "CS":
			if n := lastOf(ops, tName); n != nil {
				c.deviceColour(string(n.v), res, obj)
			}
		case "ri":
			if n := lastOf(ops, tName); n != nil && c.pdfa() && !renderingIntents[string(n.v)] {
				c.report("6.2.6-1", obj, "the rendering intent %q is not one of the four of ISO 32000-1", n.v)
			}
		case "BI":
			r.inlineImage(&lx, res, obj)
			r.paint(st, obj, "an inline image")
		case "Do":
			if n := lastOf(ops, tName); n != nil {
				r.do(string(n.v), res, obj, st, depth)
			}
		}
		ops = ops[:0]
	}
	st.marks = st.marks[:baseMarks]
}

func lastOf(ops []token, kind int) *token {
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].kind == kind {
			return &ops[i]
		}
	}
	return nil
}

// marksContent: does a BMC/BDC (operands ops) tag content or mark it as
// an artifact? Artifact does; otherwise a property list with an MCID.
func (r *resourceWalk) marksContent(ops []token, res types.Dict) bool {
	if len(ops) == 0 || ops[0].kind != tName {
		return false
	}
	if string(ops[0].v) == "Artifact" {
		return true
	}
	for _, t := range ops[1:] {
		if t.kind == tName && string(t.v) == "MCID" {
			return true
		}
	}
	if len(ops) >= 2 && ops[1].kind == tName && res != nil {
		c := r.c
		if props, err := c.x.DereferenceDict(res["Properties"]); err == nil && props != nil {
			if d, err := c.x.DereferenceDict(props[string(ops[1].v)]); err == nil && d != nil && d["MCID"] != nil {
				return true
			}
		}
	}
	return false
}

// paint: UA 7.1-3 for text or an image painted in state st.
func (r *resourceWalk) paint(st *scanState, obj, what string) {
	if what == "text" {
		r.c.hasText = true
	}
	if st.needMarking && !st.marked() {
		r.c.report("UA 7.1-3", obj, "%s is painted outside tagged content and outside an Artifact", what)
	}
}

// do draws the XObject name of res.
func (r *resourceWalk) do(name string, res types.Dict, obj string, st *scanState, depth int) {
	c := r.c
	if res == nil {
		return
	}
	xo, err := c.x.DereferenceDict(res["XObject"])
	if err != nil || xo == nil {
		return
	}
	o := xo[name]
	sd, _, err := c.x.DereferenceStreamDict(o)
	if err != nil || sd == nil {
		return
	}
	switch c.name(sd.Dict["Subtype"]) {
	case "Image":
		r.paint(st, obj, "an image")
	case "Form":
		nr := -1
		if ref, ok := o.(types.IndirectRef); ok {
			nr = ref.ObjectNumber.Value()
		}
		need := 0
		if st.needMarking && !st.marked() {
			need = 1
		}
		key := [2]int{nr, need}
		if nr >= 0 && r.forms[key] {
			return
		}
		r.forms[key] = true
		if depth >= maxDepth {
			c.limit("formDepth", obj, "form XObjects nest deeper than %d", maxDepth)
			return
		}
		formObj := obj + " form " + name
		fres := res
		if d, err := c.x.DereferenceDict(sd.Dict["Resources"]); err == nil && d != nil {
			fres = d
		}
		r.resources(fres, formObj)
		content, ok := c.decode(sd, maxStreamBytes, formObj)
		if !ok {
			return
		}
		sub := &scanState{needMarking: st.needMarking, marks: append([]bool(nil), st.marks...)}
		r.scan(content, fres, formObj, sub, depth+1)
	}
}

// appearance checks an annotation's appearance stream: its resources and
// content (no marking requirement: UA tags annotations themselves).
func (r *resourceWalk) appearance(sd *types.StreamDict, nr int, obj string) {
	c := r.c
	key := [2]int{nr, 0}
	if nr >= 0 {
		if r.forms[key] {
			return
		}
		r.forms[key] = true
	}
	var res types.Dict
	if d, err := c.x.DereferenceDict(sd.Dict["Resources"]); err == nil && d != nil {
		res = d
	}
	r.resources(res, obj)
	content, ok := c.decode(sd, maxStreamBytes, obj)
	if !ok {
		return
	}
	r.scan(content, res, obj, &scanState{}, 1)
}

// inlineImage reads an inline image's dictionary up to ID, checks it and
// skips its data up to EI.
func (r *resourceWalk) inlineImage(lx *lexer, res types.Dict, obj string) {
	c := r.c
	var toks []token
	for {
		t := lx.next()
		if t.kind == tEOF {
			return
		}
		if t.kind == tOp && string(t.v) == "ID" {
			break
		}
		if len(toks) < 256 {
			toks = append(toks, t)
		}
	}
	mask := false
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].kind != tName {
			continue
		}
		k, v := string(toks[i].v), toks[i+1]
		switch k {
		case "IM", "ImageMask":
			mask = v.kind == tOp && string(v.v) == "true"
		case "I", "Interpolate":
			if v.kind == tOp && string(v.v) == "true" && c.pdfa() {
				c.report("6.2.8-3", obj, "an inline image has Interpolate true")
			}
		case "F", "Filter":
			var names []string
			if v.kind == tName {
				names = append(names, string(v.v))
			} else if v.kind == tArrOpen {
				for j := i + 2; j < len(toks) && toks[j].kind == tName; j++ {
					names = append(names, string(toks[j].v))
				}
			}
			for _, f := range names {
				if c.pdfa() && !inlineFilters[f] {
					c.report("6.1.10-1", obj, "an inline image uses the filter %s", f)
				}
			}
		}
	}
	if !mask {
		for i := 0; i+1 < len(toks); i++ {
			if toks[i].kind == tName && (string(toks[i].v) == "CS" || string(toks[i].v) == "ColorSpace") && toks[i+1].kind == tName {
				c.deviceColour(string(toks[i+1].v), res, obj)
			}
		}
	}
	lx.skipInlineData()
}

var inlineFilters = map[string]bool{"ASCIIHexDecode": true, "ASCII85Decode": true, "FlateDecode": true,
	"RunLengthDecode": true, "CCITTFaxDecode": true, "DCTDecode": true, "AHx": true, "A85": true, "Fl": true,
	"RL": true, "CCF": true, "DCT": true}

// hasZeroCID: does a string shown with a two-byte Identity CMap contain
// code 0?
func hasZeroCID(s []byte) bool {
	for i := 0; i+1 < len(s); i += 2 {
		if s[i] == 0 && s[i+1] == 0 {
			return true
		}
	}
	return false
}

// Content stream tokens.
const (
	tEOF = iota
	tNum
	tName
	tStr
	tHex
	tArrOpen
	tArrClose
	tDictOpen
	tDictClose
	tOp
)

type token struct {
	kind int
	v    []byte // a name without '/', a string's raw bytes, an operator
}

// str is a string token's bytes: escapes expanded, hex decoded.
func (t token) str() []byte {
	if t.kind == tHex {
		var out []byte
		var hi byte
		half := false
		for _, ch := range t.v {
			n, ok := hexVal(ch)
			if !ok {
				continue
			}
			if half {
				out = append(out, hi<<4|n)
			} else {
				hi = n
			}
			half = !half
		}
		if half {
			out = append(out, hi<<4)
		}
		return out
	}
	if bytes.IndexByte(t.v, '\\') < 0 {
		return t.v
	}
	b, err := types.Unescape(string(t.v))
	if err != nil {
		return t.v
	}
	return b
}

func hexVal(ch byte) (byte, bool) {
	switch {
	case ch >= '0' && ch <= '9':
		return ch - '0', true
	case ch >= 'a' && ch <= 'f':
		return ch - 'a' + 10, true
	case ch >= 'A' && ch <= 'F':
		return ch - 'A' + 10, true
	}
	return 0, false
}

// lexer tokenises a content stream. It never fails: malformed input
// yields odd tokens, never a panic or a loop.
type lexer struct {
	b []byte
	i int
}

func isDelim(ch byte) bool {
	switch ch {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (l *lexer) next() token {
	b := l.b
	for l.i < len(b) {
		ch := b[l.i]
		if isSpace(ch) {
			l.i++
			continue
		}
		if ch == '%' {
			for l.i < len(b) && b[l.i] != '\n' && b[l.i] != '\r' {
				l.i++
			}
			continue
		}
		break
	}
	if l.i >= len(b) {
		return token{kind: tEOF}
	}
	start := l.i
	switch ch := b[l.i]; {
	case ch == '/':
		l.i++
		for l.i < len(b) && !isSpace(b[l.i]) && !isDelim(b[l.i]) {
			l.i++
		}
		return token{kind: tName, v: []byte(unescapeName(string(b[start+1 : l.i])))}
	case ch == '(':
		l.i++
		depth := 1
		for l.i < len(b) && depth > 0 {
			switch b[l.i] {
			case '\\':
				l.i++
			case '(':
				depth++
			case ')':
				depth--
			}
			l.i++
		}
		end := min(l.i, len(b))
		if depth == 0 {
			end--
		}
		return token{kind: tStr, v: b[start+1 : max(start+1, end)]}
	case ch == '<':
		if l.i+1 < len(b) && b[l.i+1] == '<' {
			l.i += 2
			return token{kind: tDictOpen}
		}
		l.i++
		for l.i < len(b) && b[l.i] != '>' {
			l.i++
		}
		v := b[start+1 : l.i]
		if l.i < len(b) {
			l.i++
		}
		return token{kind: tHex, v: v}
	case ch == '>':
		l.i++
		if l.i < len(b) && b[l.i] == '>' {
			l.i++
		}
		return token{kind: tDictClose}
	case ch == '[':
		l.i++
		return token{kind: tArrOpen}
	case ch == ']':
		l.i++
		return token{kind: tArrClose}
	case ch == '{' || ch == '}' || ch == ')':
		l.i++
		return token{kind: tOp, v: b[start:l.i]}
	case ch == '+' || ch == '-' || ch == '.' || ch >= '0' && ch <= '9':
		l.i++
		for l.i < len(b) && !isSpace(b[l.i]) && !isDelim(b[l.i]) {
			l.i++
		}
		return token{kind: tNum, v: b[start:l.i]}
	}
	for l.i < len(b) && !isSpace(b[l.i]) && !isDelim(b[l.i]) {
		l.i++
	}
	return token{kind: tOp, v: b[start:l.i]}
}

// skipInlineData skips an inline image's data after ID: up to an EI
// between white space (or at the end).
func (l *lexer) skipInlineData() {
	if l.i < len(l.b) && isSpace(l.b[l.i]) {
		l.i++
	}
	for j := l.i; j+1 < len(l.b); j++ {
		if l.b[j] == 'E' && l.b[j+1] == 'I' && (j == 0 || isSpace(l.b[j-1])) && (j+2 == len(l.b) || isSpace(l.b[j+2]) || isDelim(l.b[j+2])) {
			l.i = j + 2
			return
		}
	}
	l.i = len(l.b)
}
