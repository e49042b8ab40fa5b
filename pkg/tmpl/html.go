package tmpl

import (
	"html"
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
)

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
	lang    *langCapture
}

// langCapture collects the literal value of the first <html lang="...">.
type langCapture struct {
	b    strings.Builder
	done bool
}

func (c *hctx) inLang() bool {
	return c.lang != nil && !c.lang.done && c.elem == "html" && !c.endTag && c.attr == "lang"
}

// Elements whose text is not markup: a '<' inside does not start a tag.
var rawElems = map[string]bool{
	"script": true, "style": true, "textarea": true, "title": true, "xmp": true,
	"iframe": true, "noembed": true, "noframes": true, "noscript": true, "plaintext": true,
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
// character that would glue onto an attribute name a block ended, else -1.
func (c *hctx) feed(s string) (bad int) {
	bad = -1
	for i := 0; i < len(s); i++ {
		b := s[i]
		if c.glue {
			c.glue = false
			if !(isSpace(b) || b == '>' || b == '/') {
				return i
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
			case b == '!' || b == '?':
				c.state = sBogus
			case isLetter(b):
				c.state, c.endTag, c.name = sTagName, false, string(b|0x20)
			case b == '<':
			default:
				c.state = sText
			}
		case sLtSlash:
			if isLetter(b) {
				c.state, c.endTag, c.name = sTagName, true, string(b|0x20)
			} else if b == '>' {
				c.state = sText
			} else {
				c.state = sBogus
			}
		case sTagName:
			switch {
			case isSpace(b) || b == '/':
				c.elem, c.name, c.state = c.name, "", sTag
			case b == '>':
				c.elem, c.name = c.name, ""
				c.closeTag()
			default:
				c.name += string(lower(b))
			}
		case sTag:
			switch {
			case isSpace(b) || b == '/':
			case b == '>':
				c.closeTag()
			default:
				c.state, c.name = sAttrName, string(lower(b))
			}
		case sAttrName:
			switch {
			case isSpace(b):
				c.attr, c.name, c.state = c.name, "", sAfterName
			case b == '/':
				c.attr, c.name, c.state = c.name, "", sTag
			case b == '>':
				c.attr, c.name = c.name, ""
				c.closeTag()
			case b == '=':
				c.attr, c.name, c.state = c.name, "", sBeforeValue
			default:
				c.name += string(lower(b))
			}
		case sAfterName:
			switch {
			case isSpace(b):
			case b == '=':
				c.state = sBeforeValue
			case b == '>':
				c.closeTag()
			case b == '/':
				c.state = sTag
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
				c.closeTag()
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
				return bad
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
				c.closeTag()
			}
		case sRaw:
			want := "</" + c.raw
			if c.rawPart == len(want) {
				c.rawPart = 0
				if isSpace(b) || b == '/' || b == '>' {
					c.state, c.endTag, c.elem, c.attr = sTag, true, c.raw, ""
					c.raw = ""
					if b == '>' {
						c.closeTag()
					}
					continue
				}
			}
			if lower(b) == want[c.rawPart] {
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
		}
	}
	return bad
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b | 0x20
	}
	return b
}

// closeTag is the '>' of a tag.
func (c *hctx) closeTag() {
	c.attr, c.name = "", ""
	if c.lang != nil && c.elem != "" {
		c.lang.done = true // only the first element may say the language
	}
	if !c.endTag && rawElems[c.elem] {
		c.state, c.raw, c.rawPart = sRaw, c.elem, 0
		return
	}
	c.state = sText
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
	n := hctx{state: c.state, lang: c.lang}
	switch c.state {
	case sComment:
		n.dashes = c.dashes
	case sRaw:
		n.raw, n.rawPart = c.raw, c.rawPart
	case sTagName, sTag, sAttrName, sAfterName, sBeforeValue, sValueDQ, sValueSQ, sValueUnq:
		n.elem, n.endTag, n.name = c.elem, c.endTag, c.name
		if c.state != sTag && c.state != sTagName {
			n.attr = c.attr
		}
		n.entity, n.urlFix, n.urlDyn, n.scheme, n.badURL, n.dataURL = c.entity, c.urlFix, c.urlDyn, c.scheme, c.badURL, c.dataURL
	}
	n.glue = c.glue
	return n
}
