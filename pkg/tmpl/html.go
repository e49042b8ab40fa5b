package tmpl

import (
	"html"
	"strconv"
	"strings"
)

// This file follows the HTML that surrounds the template's mustaches: for
// every {{expression}} it says where the value lands (text, a quoted
// attribute value, a URL attribute, a srcset) or why it may not be there.
// It is a small tokenizer after the HTML standard's states, enough to know
// the context, not to build a tree.

type hstate uint8

const (
	sText        hstate = iota // between tags
	sLt                        // just after '<'
	sLtSlash                   // just after "</"
	sTagName                   // in a tag's name
	sTag                       // inside a tag, between attributes
	sAttrName                  // in an attribute's name
	sAfterName                 // whitespace after an attribute's name
	sBeforeValue               // after '='
	sValueDQ                   // in a "..." value
	sValueSQ                   // in a '...' value
	sValueUnq                  // in an unquoted value
	sRaw                       // in the text of script, style, textarea, title, ...
	sComment                   // in <!-- ... -->
	sBogus                     // in <!...> or <?...>
	sCDATA                     // in <![CDATA[ ... ]]> (foreign content only)
)

// Bounds of the markup the tokenizer follows.
const (
	maxNameBytes    = 256 // a tag's or an attribute's name
	maxForeignDepth = 256 // elements open inside <svg> or <math>
)

// fnode is an open element of foreign content (inside <svg> or <math>),
// with its ancestors up to the outermost <svg> or <math>. Only foreign
// elements are kept: HTML elements inside an integration point are not.
// Nodes are immutable; contexts share them.
type fnode struct {
	parent *fnode
	name   string // lower case
	math   bool   // MathML, else SVG
	ip     bool   // an HTML integration point: its start tags are read as HTML's
	depth  int    // 1 for the outermost
}

// sameStack says whether two stacks hold the same elements.
func sameStack(x, y *fnode) bool {
	for x != y {
		if x == nil || y == nil || x.depth != y.depth || x.name != y.name || x.math != y.math {
			return false
		}
		x, y = x.parent, y.parent
	}
	return true
}

// attrKind is what an attribute's value is, for the values inside it.
type attrKind uint8

const (
	attrPlain  attrKind = iota
	attrURL             // filtered as a URL
	attrSrcset          // filtered as a srcset list
	attrBanned          // script or style: no mustache at all
)

// hctx is the context at one point of the template. It is comparable, so
// that the two branches of a block can be compared.
type hctx struct {
	state   hstate
	elem    string // lower-case name of the current (or last) tag
	endTag  bool   // the current tag is an end tag
	attr    string // lower-case name of the current attribute
	name    string // the name being read (tag or attribute)
	raw     string // the raw-text element whose end we look for
	rawPart int    // how much of "</"+raw the text ends with
	dashes  int    // in a comment: how many '-' just before
	entity  bool   // the value's literal text ends inside a character reference
	urlFix  bool   // in a URL value: the scheme is decided (a ':' '/' '?' '#' was seen)
	urlDyn  bool   // in a URL value: a mustache came before the scheme was decided
	scheme  string // in a URL value: the literal text before the scheme is decided
	badURL  bool   // in a URL value: the template's own scheme is not a safe one (javascript:)
	glue    bool   // a block ended an attribute name: the next char must end it
	dataURL bool   // in a URL value: after a literal "data:", before its ';' or ','
	slash   bool   // in a tag: a '/' just before (a '>' now closes a self-closing tag)
	rawEnd  bool   // the current end tag ends a raw-text element (the HTML tokenizer found it)
	rawLt   bool   // in the text of <title> or <textarea>: a '<' came before
	fn      *fnode // the innermost open element of foreign content; nil outside <svg> and <math>
	fsName  string // "script" or "style" when inside such an element of foreign content
	fsCount int    // how many fsName elements are open
	lang    *langCapture
}

// htmlView says whether a start tag here is read as HTML's (outside
// foreign content, or in an HTML integration point like <svg><foreignObject>),
// else as a foreign element's, where title, textarea, noscript ... are
// ordinary elements and <![CDATA[ opens a CDATA section.
func (c *hctx) htmlView() bool { return c.fn == nil || c.fn.ip }

// langCapture collects the literal value of the first <html lang="...">.
type langCapture struct {
	b    strings.Builder
	done bool
}

func (c *hctx) inLang() bool {
	return c.lang != nil && !c.lang.done && c.elem == "html" && !c.endTag && c.attr == "lang"
}

// HTML elements whose text is not markup: a '<' inside does not start a
// tag. In foreign content (inside <svg> or <math>) they are ordinary
// elements.
var rawElems = map[string]bool{
	"script": true, "style": true, "textarea": true, "title": true, "xmp": true,
	"iframe": true, "noembed": true, "noframes": true, "noscript": true, "plaintext": true,
}

// Raw-text elements whose text a browser may read as markup or not, or not
// show at all (noscript depends on whether scripting is on, plaintext never
// ends): no {{value}} at all inside them.
var opaqueElems = map[string]bool{
	"xmp": true, "iframe": true, "noembed": true, "noframes": true, "noscript": true, "plaintext": true,
}

// URL-valued attributes (any element unless noted).
var urlAttrs = map[string]bool{
	"href": true, "src": true, "action": true, "formaction": true, "cite": true,
	"poster": true, "background": true, "xlink:href": true, "codebase": true,
	"longdesc": true, "usemap": true, "profile": true, "icon": true, "manifest": true,
	"archive": true, "classid": true, "dynsrc": true, "lowsrc": true, "itemtype": true,
	"xml:base": true, "ping": true,
}

// SVG animation elements can set any attribute, href included.
var animElems = map[string]bool{"set": true, "animate": true, "animatemotion": true, "animatetransform": true}

func kindOf(elem, attr string) attrKind {
	switch {
	case strings.HasPrefix(attr, "on"), attr == "style", attr == "srcdoc", animElems[elem]:
		return attrBanned
	case attr == "srcset" || attr == "imagesrcset":
		return attrSrcset
	case urlAttrs[attr], attr == "data" && elem == "object",
		strings.HasPrefix(attr, "xmlns"), strings.Contains(attr, "url"), strings.Contains(attr, "uri"):
		return attrURL
	}
	return attrPlain
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// feed advances c over literal template text s. It returns the offset in s
// of a ':' that would end a URL scheme started by a mustache, or of a
// character that would glue onto an attribute name a block ended, else -1;
// or the offset and the problem of markup it refuses.
func (c *hctx) feed(s string) (bad int, problem string) {
	bad = -1
	for i := 0; i < len(s); i++ {
		b := s[i]
		if c.glue {
			c.glue = false
			if !(isSpace(b) || b == '>' || b == '/') {
				return i, ""
			}
		}
		switch c.state {
		case sText:
			if b == '<' {
				c.state = sLt
			}
		case sLt:
			switch {
			case b == '/':
				c.state = sLtSlash
			case b == '!' && strings.HasPrefix(s[i:], "!--"):
				c.state, c.dashes = sComment, 0
				i += 2
			case b == '!' && !c.htmlView() && strings.HasPrefix(s[i:], "![CDATA["):
				c.state, c.dashes = sCDATA, 0
				i += 7
			case b == '!' && len(s)-i < len("![CDATA[") && (strings.HasPrefix("!--", s[i:]) || strings.HasPrefix("![CDATA[", s[i:])):
				// The rest of <!-- or <![CDATA[ follows a {{!comment}}: the
				// browser sees it whole.
				return i, "a {{!comment}} may not split <!-- or <![CDATA["
			case b == '!' || b == '?':
				c.state = sBogus
			case isLetter(b):
				c.state, c.endTag, c.name, c.slash, c.rawEnd = sTagName, false, string(b|0x20), false, false
			case b == '<':
			default:
				c.state = sText
			}
		case sLtSlash:
			if isLetter(b) {
				c.state, c.endTag, c.name, c.slash, c.rawEnd = sTagName, true, string(b|0x20), false, false
			} else if b == '>' {
				c.state = sText
			} else {
				c.state = sBogus
			}
		case sTagName:
			switch {
			case isSpace(b) || b == '/':
				c.elem, c.name, c.state, c.slash = c.name, "", sTag, b == '/'
			case b == '>':
				c.elem, c.name = c.name, ""
				if p := c.closeTag(); p != "" {
					return i, p
				}
			default:
				// The rest of the name at once: appending byte by byte
				// would copy the name for every byte.
				j := i + nameEnd(s[i:], false)
				if c.name = appendLower(c.name, s[i:j]); len(c.name) > maxNameBytes {
					return i, "a tag name is longer than " + strconv.Itoa(maxNameBytes) + " bytes"
				}
				i = j - 1
			}
		case sTag:
			switch {
			case isSpace(b):
				c.slash = false
			case b == '/':
				c.slash = true
			case b == '>':
				if p := c.closeTag(); p != "" {
					return i, p
				}
			default:
				c.state, c.name, c.slash = sAttrName, string(lower(b)), false
			}
		case sAttrName:
			switch {
			case isSpace(b):
				c.attr, c.name, c.state = c.name, "", sAfterName
			case b == '/':
				c.attr, c.name, c.state, c.slash = c.name, "", sTag, true
			case b == '>':
				c.attr, c.name = c.name, ""
				if p := c.closeTag(); p != "" {
					return i, p
				}
			case b == '=':
				c.attr, c.name, c.state = c.name, "", sBeforeValue
			default:
				j := i + nameEnd(s[i:], true)
				if c.name = appendLower(c.name, s[i:j]); len(c.name) > maxNameBytes {
					return i, "an attribute name is longer than " + strconv.Itoa(maxNameBytes) + " bytes"
				}
				i = j - 1
			}
		case sAfterName:
			switch {
			case isSpace(b):
			case b == '=':
				c.state = sBeforeValue
			case b == '>':
				if p := c.closeTag(); p != "" {
					return i, p
				}
			case b == '/':
				c.state, c.slash = sTag, true
			default:
				c.state, c.name = sAttrName, string(lower(b))
			}
		case sBeforeValue:
			switch {
			case isSpace(b):
			case b == '"':
				c.state = sValueDQ
				c.startValue()
			case b == '\'':
				c.state = sValueSQ
				c.startValue()
			case b == '>':
				if p := c.closeTag(); p != "" {
					return i, p
				}
			default:
				c.state = sValueUnq
			}
		case sValueDQ, sValueSQ:
			q := byte('"')
			if c.state == sValueSQ {
				q = '\''
			}
			j := strings.IndexByte(s[i:], q)
			end := len(s)
			if j >= 0 {
				end = i + j
			}
			if c.valueText(s[i:end]) && bad < 0 {
				bad = i
			}
			if j < 0 {
				return bad, ""
			}
			i = end
			if c.inLang() {
				c.lang.done = true
			}
			c.state, c.attr = sTag, ""
			c.startValue()
		case sValueUnq:
			switch {
			case isSpace(b):
				c.state, c.attr = sTag, ""
			case b == '>':
				if p := c.closeTag(); p != "" {
					return i, p
				}
			}
		case sRaw:
			if c.raw == "plaintext" {
				return bad, "" // the rest of the document is its text
			}
			if b == '<' && (c.raw == "title" || c.raw == "textarea") {
				c.rawLt = true
			}
			if b == '<' && c.raw == "script" && (strings.HasPrefix(s[i:], "<!--") || len(s)-i < 4 && strings.HasPrefix("<!--", s[i:])) {
				// After <!-- a browser reads a script's end tags by other
				// rules (the "escaped" script states), so where the script
				// ends would be a guess: refused.
				return i, "<!-- inside <script> is not allowed in a template (where the script ends would depend on it)"
			}
			if c.rawPart == len(c.raw)+2 {
				c.rawPart = 0
				if isSpace(b) || b == '/' || b == '>' {
					c.state, c.endTag, c.elem, c.attr, c.slash, c.rawEnd = sTag, true, c.raw, "", b == '/', true
					c.raw, c.rawLt = "", false
					if b == '>' {
						if p := c.closeTag(); p != "" {
							return i, p
						}
					}
					continue
				}
			}
			if lower(b) == rawEndAt(c.raw, c.rawPart) {
				c.rawPart++
			} else if b == '<' {
				c.rawPart = 1
			} else {
				c.rawPart = 0
			}
		case sComment:
			switch {
			case b == '-':
				c.dashes++
			case b == '>' && c.dashes >= 2:
				c.state, c.dashes = sText, 0
			case b == '!' && c.dashes >= 2 && strings.HasPrefix(s[i:], "!>"):
				c.state, c.dashes = sText, 0
				i++
			default:
				c.dashes = 0
			}
		case sBogus:
			if b == '>' {
				c.state = sText
			}
		case sCDATA:
			switch {
			case b == ']':
				c.dashes++
			case b == '>' && c.dashes >= 2:
				c.state, c.dashes = sText, 0
			default:
				c.dashes = 0
			}
		}
	}
	return bad, ""
}

// rawEndAt is byte k of "</"+raw.
func rawEndAt(raw string, k int) byte {
	switch k {
	case 0:
		return '<'
	case 1:
		return '/'
	}
	return raw[k-2]
}

// nameEnd is the length of the tag name (or, for attr, the attribute
// name) at the start of s.
func nameEnd(s string, attr bool) int {
	for i := 0; i < len(s); i++ {
		if b := s[i]; isSpace(b) || b == '/' || b == '>' || attr && b == '=' {
			return i
		}
	}
	return len(s)
}

// appendLower appends s to name, ASCII letters in lower case.
func appendLower(name, s string) string {
	var b strings.Builder
	b.Grow(len(name) + len(s))
	b.WriteString(name)
	for i := 0; i < len(s); i++ {
		b.WriteByte(lower(s[i]))
	}
	return b.String()
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b | 0x20
	}
	return b
}

// closeTag is the '>' of a tag. It returns a problem with the markup, else "".
func (c *hctx) closeTag() string {
	selfClosing, rawEnd := c.slash, c.rawEnd
	c.attr, c.name, c.slash, c.rawEnd = "", "", false, false
	c.state = sText
	if c.lang != nil && c.elem != "" {
		c.lang.done = true // only the first element may say the language
	}
	if c.endTag {
		if rawEnd {
			return "" // the end of an HTML raw-text element: no foreign element
		}
		if c.fsName == c.elem && c.fsCount > 0 {
			if c.fsCount--; c.fsCount == 0 {
				c.fsName = ""
			}
		}
		// In foreign content an end tag closes the nearest open element of
		// its name, with the elements inside it; else it is ignored.
		for n := c.fn; n != nil; n = n.parent {
			if n.name == c.elem {
				c.fn = n.parent
				break
			}
		}
		return ""
	}
	html := c.htmlView()
	if html && c.fn != nil && c.fn.math && (c.elem == "mglyph" || c.elem == "malignmark") {
		html = false // a MathML text integration point keeps these MathML
	}
	if html {
		switch {
		case c.elem == "svg" || c.elem == "math":
			if !selfClosing {
				return c.push(c.elem, c.elem == "math", c.fn)
			}
		case rawElems[c.elem]:
			c.state, c.raw, c.rawPart, c.rawLt = sRaw, c.elem, 0, false
		}
		return ""
	}
	if selfClosing {
		return ""
	}
	// A foreign element: in the namespace of its parent, but for <svg> in
	// MathML's annotation-xml.
	isMath := c.fn.math
	if isMath && c.elem == "svg" && c.fn.name == "annotation-xml" {
		isMath = false
	}
	if c.elem == "script" || c.elem == "style" {
		// Its text is script or CSS, read as markup (character
		// references, CDATA) till its end tag: no {{value}} in it.
		if c.fsName == "" {
			c.fsName = c.elem
		}
		if c.fsName == c.elem {
			c.fsCount++
		}
	}
	return c.push(c.elem, isMath, c.fn)
}

// push opens a foreign element.
func (c *hctx) push(name string, isMath bool, parent *fnode) string {
	d := 1
	if parent != nil {
		d = parent.depth + 1
	}
	if d > maxForeignDepth {
		return "elements nested more than " + strconv.Itoa(maxForeignDepth) + " deep inside <svg> or <math> (close them, or write <path/> for an empty one)"
	}
	ip := false
	if isMath {
		ip = name == "mi" || name == "mo" || name == "mn" || name == "ms" || name == "mtext"
	} else {
		ip = name == "foreignobject" || name == "desc" || name == "title"
	}
	c.fn = &fnode{parent: parent, name: name, math: isMath, ip: ip, depth: d}
	return ""
}

func (c *hctx) startValue() {
	c.entity, c.urlFix, c.urlDyn, c.scheme, c.badURL, c.dataURL = false, false, false, "", false, false
}

// valueText is literal text inside a quoted attribute value (without the
// closing quote). It keeps the URL state: the scheme of a URL is decided by
// the first ':' (a scheme), '/', '?' or '#' (no scheme: relative). A ':'
// after a mustache that came before the scheme was decided would let data
// choose the scheme: valueText then returns true.
func (c *hctx) valueText(s string) (schemeFromData bool) {
	if s == "" {
		return false
	}
	c.entity = endsInCharRef(s)
	if c.inLang() {
		c.lang.b.WriteString(s)
	}
	k := kindOf(c.elem, c.attr)
	if k != attrURL && k != attrSrcset {
		return false
	}
	d := html.UnescapeString(s)
	for i := 0; i < len(d); i++ {
		if c.dataURL {
			// data: is safe for raster images only: decide on the media type.
			if d[i] == ';' || d[i] == ',' {
				c.badURL = !isSafeURL(c.scheme + ",")
				c.dataURL, c.scheme = false, ""
			} else if len(c.scheme) < 64 {
				c.scheme += d[i : i+1]
			}
			continue
		}
		switch d[i] {
		case ',':
			if k == attrSrcset {
				c.urlFix, c.urlDyn = false, false
			}
		case ':':
			if !c.urlFix {
				if c.urlDyn {
					schemeFromData = true
				}
				c.badURL = !isSafeURL(c.scheme + ":")
				if strings.EqualFold(strings.TrimSpace(c.scheme), "data") {
					c.dataURL, c.scheme = true, "data:"
				} else {
					c.scheme = ""
				}
				c.urlFix, c.urlDyn = true, false
			}
			continue
		case '/', '?', '#':
			c.urlFix, c.scheme = true, ""
			continue
		case ' ', '\t', '\n', '\r', '\f':
			if k == attrSrcset && (c.urlFix || c.urlDyn) {
				c.urlFix = true // the descriptor
			}
		}
		if !c.urlFix && len(c.scheme) < 64 {
			c.scheme += d[i : i+1]
		}
	}
	return schemeFromData
}

// endsInCharRef says whether s ends inside a character reference (&, &#,
// &#x1, &amp) that a following value could complete.
func endsInCharRef(s string) bool {
	i := strings.LastIndexByte(s, '&')
	if i < 0 {
		return false
	}
	for _, r := range s[i+1:] {
		if !(r == '#' || r >= '0' && r <= '9' || r|0x20 >= 'a' && r|0x20 <= 'z') {
			return false
		}
	}
	return true
}

// norm clears what does not matter in c's state, so that two contexts
// compare equal when the HTML after them is read alike.
func (c hctx) norm() hctx {
	n := hctx{state: c.state, lang: c.lang, fn: c.fn, fsName: c.fsName, fsCount: c.fsCount}
	switch c.state {
	case sComment, sCDATA:
		n.dashes = c.dashes
	case sRaw:
		n.raw, n.rawPart, n.rawLt = c.raw, c.rawPart, c.rawLt
	case sTagName, sTag, sAttrName, sAfterName, sBeforeValue, sValueDQ, sValueSQ, sValueUnq:
		n.elem, n.endTag, n.name = c.elem, c.endTag, c.name
		if c.state != sTag && c.state != sTagName {
			n.attr = c.attr
		}
		n.entity, n.urlFix, n.urlDyn, n.scheme, n.badURL, n.dataURL = c.entity, c.urlFix, c.urlDyn, c.scheme, c.badURL, c.dataURL
		n.slash, n.rawEnd = c.slash, c.rawEnd
	}
	n.glue = c.glue
	return n
}
