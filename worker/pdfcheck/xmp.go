package pdfcheck

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// XMP namespaces.
const (
	nsRDF       = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	nsXML       = "http://www.w3.org/XML/1998/namespace"
	nsDC        = "http://purl.org/dc/elements/1.1/"
	nsXMP       = "http://ns.adobe.com/xap/1.0/"
	nsPDF       = "http://ns.adobe.com/pdf/1.3/"
	nsPDFAID    = "http://www.aiim.org/pdfa/ns/id/"
	nsPDFUAID   = "http://www.aiim.org/pdfua/ns/id/"
	nsExtension = "http://www.aiim.org/pdfa/ns/extension/"
	nsSchema    = "http://www.aiim.org/pdfa/ns/schema#"
	nsProperty  = "http://www.aiim.org/pdfa/ns/property#"
)

// predefinedXMP are the schemas 6.6.2.3.1 accepts without an extension
// schema: those of the XMP Specification 2005 and of ISO 19005.
var predefinedXMP = map[string]bool{
	nsDC: true, nsXMP: true, nsPDF: true, nsPDFAID: true, nsExtension: true,
	"http://ns.adobe.com/xap/1.0/rights/":          true,
	"http://ns.adobe.com/xap/1.0/mm/":              true,
	"http://ns.adobe.com/xap/1.0/bj/":              true,
	"http://ns.adobe.com/xap/1.0/t/pg/":            true,
	"http://ns.adobe.com/xmp/1.0/DynamicMedia/":    true,
	"http://ns.adobe.com/photoshop/1.0/":           true,
	"http://ns.adobe.com/camera-raw-settings/1.0/": true,
	"http://ns.adobe.com/exif/1.0/":                true,
	"http://ns.adobe.com/exif/1.0/aux/":            true,
	"http://ns.adobe.com/tiff/1.0/":                true,
}

// pdfaidProperties are the properties of the PDF/A identification schema.
var pdfaidProperties = map[string]bool{"part": true, "conformance": true, "amd": true, "corr": true}

// maxXMPDepth bounds the XML element nesting of an XMP packet.
const maxXMPDepth = 100

// xelem is an XML element with the prefixes it was written with.
type xelem struct {
	uri, local, prefix string
	attrs              []xattr
	kids               []*xelem
	text               strings.Builder
}

type xattr struct {
	uri, local, prefix, value string
}

// xprop is one top-level XMP property.
type xprop struct {
	uri, local, prefix string
	value              string   // a simple value
	items              []string // rdf:li values of an array
	langs              []string // their xml:lang
	el                 *xelem   // nil when written as an attribute
}

// xmpInfo is what the checker needs from the catalog's XMP packet.
type xmpInfo struct {
	props    []xprop
	ext      map[string]map[string]bool // extension schemas: namespace → property names
	xDefault bool                       // a language alternative has an x-default item
}

func (x *xmpInfo) get(uri, local string) *xprop {
	for i := range x.props {
		if x.props[i].uri == uri && x.props[i].local == local {
			return &x.props[i]
		}
	}
	return nil
}

// langValue is a language alternative's x-default item (else its first).
func (p *xprop) langValue() string {
	if p == nil {
		return ""
	}
	for i, l := range p.langs {
		if l == "x-default" {
			return p.items[i]
		}
	}
	if len(p.items) > 0 {
		return p.items[0]
	}
	return p.value
}

func (p *xprop) simple() string {
	if p == nil {
		return ""
	}
	if p.value == "" && len(p.items) > 0 {
		return p.items[0]
	}
	return p.value
}

// checkXMP: 6.6.2.1 (the metadata stream and its packet), 6.6.2.3
// (extension schemas), 6.6.4 (PDF/A identification), UA 5 (PDF/UA
// identification), UA 7.1-8/9 (metadata, dc:title).
func (c *checker) checkXMP() {
	if !c.pdfa() && !c.lvl.PDFUA {
		return
	}
	sd, _, err := c.x.DereferenceStreamDict(c.catalog["Metadata"])
	if err != nil || sd == nil {
		if c.pdfa() {
			c.report("6.6.2.1-1", "catalog", "the catalog has no XMP metadata stream")
		}
		if c.lvl.PDFUA {
			c.report("UA 7.1-8", "catalog", "the catalog has no XMP metadata stream")
		}
		return
	}
	if t, st := sd.Dict.NameEntry("Type"), sd.Dict.NameEntry("Subtype"); t == nil || *t != "Metadata" || st == nil || *st != "XML" {
		if c.pdfa() {
			c.report("6.6.2.1-1", "XMP metadata", "the metadata stream is not of Type Metadata and Subtype XML")
		}
		if c.lvl.PDFUA {
			c.report("UA 7.1-8", "XMP metadata", "the metadata stream is not of Type Metadata and Subtype XML")
		}
	}
	data, ok := c.decode(sd, maxXMPBytes, "XMP metadata")
	if !ok {
		return
	}
	info, ok := c.parseXMP(data)
	if !ok {
		return
	}
	c.xmp = info
	if c.pdfa() {
		c.checkPDFAID(info)
		c.checkExtensionSchemas(info)
	}
	if c.lvl.PDFUA {
		c.checkPDFUAID(info)
		if info.get(nsDC, "title") == nil {
			c.report("UA 7.1-9", "XMP metadata", "the XMP metadata has no dc:title")
		}
	}
}

// parseXMP parses and checks the packet's form (6.6.2.1-2…5).
func (c *checker) parseXMP(data []byte) (*xmpInfo, bool) {
	malformed := func(format string, args ...any) (*xmpInfo, bool) {
		if c.pdfa() {
			c.report("6.6.2.1-4", "XMP metadata", format, args...)
		}
		if c.lvl.PDFUA {
			c.report("UA 7.1-8", "XMP metadata", format, args...)
		}
		return nil, false
	}
	if bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || !utf8.Valid(data) {
		if c.pdfa() {
			c.report("6.6.2.1-5", "XMP metadata", "the XMP packet is not UTF-8")
		}
		return nil, false
	}
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.CharsetReader = func(label string, _ io.Reader) (io.Reader, error) {
		return nil, fmt.Errorf("encoding %q", label)
	}
	var root xelem
	stack := []*xelem{&root}
	scopes := []map[string]string{{"xml": nsXML}}
	resolve := func(prefix string) (string, bool) {
		for i := len(scopes) - 1; i >= 0; i-- {
			if u, ok := scopes[i][prefix]; ok {
				return u, true
			}
		}
		return "", prefix == ""
	}
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return malformed("the XMP packet is not well-formed XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.ProcInst:
			if t.Target == "xpacket" {
				inst := string(t.Inst)
				if c.pdfa() && hasPseudoAttr(inst, "bytes") {
					c.report("6.6.2.1-2", "XMP metadata", "the xpacket header has a bytes attribute")
				}
				if c.pdfa() && hasPseudoAttr(inst, "encoding") {
					c.report("6.6.2.1-3", "XMP metadata", "the xpacket header has an encoding attribute")
				}
			}
		case xml.Directive:
			return malformed("the XMP packet has a DOCTYPE or entity declaration, which the checker does not accept")
		case xml.StartElement:
			if len(stack) > maxXMPDepth {
				return malformed("the XMP packet nests elements deeper than %d", maxXMPDepth)
			}
			scope := map[string]string{}
			for _, a := range t.Attr {
				switch {
				case a.Name.Space == "xmlns":
					scope[a.Name.Local] = a.Value
				case a.Name.Space == "" && a.Name.Local == "xmlns":
					scope[""] = a.Value
				}
			}
			scopes = append(scopes, scope)
			uri, ok := resolve(t.Name.Space)
			if !ok {
				return malformed("the XMP packet uses the undeclared prefix %q", t.Name.Space)
			}
			el := &xelem{uri: uri, local: t.Name.Local, prefix: t.Name.Space}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
					continue
				}
				au := ""
				if a.Name.Space != "" {
					if au, ok = resolve(a.Name.Space); !ok {
						return malformed("the XMP packet uses the undeclared prefix %q", a.Name.Space)
					}
				}
				el.attrs = append(el.attrs, xattr{uri: au, local: a.Name.Local, prefix: a.Name.Space, value: a.Value})
			}
			parent := stack[len(stack)-1]
			parent.kids = append(parent.kids, el)
			stack = append(stack, el)
		case xml.EndElement:
			if len(stack) < 2 {
				return malformed("the XMP packet closes an element it did not open")
			}
			top := stack[len(stack)-1]
			if top.prefix != t.Name.Space || top.local != t.Name.Local {
				return malformed("the XMP packet closes <%s> with </%s>", top.local, t.Name.Local)
			}
			stack = stack[:len(stack)-1]
			scopes = scopes[:len(scopes)-1]
		case xml.CharData:
			if top := stack[len(stack)-1]; top != &root && top.text.Len() < maxXMPBytes {
				top.text.Write(t)
			}
		}
	}
	if len(stack) != 1 {
		return malformed("the XMP packet ends inside an element")
	}
	rdf := findElem(&root, nsRDF, "RDF", 0)
	if rdf == nil {
		return malformed("the XMP packet has no rdf:RDF element")
	}
	info := &xmpInfo{ext: map[string]map[string]bool{}}
	for _, d := range rdf.kids {
		if d.uri != nsRDF || d.local != "Description" {
			continue
		}
		for _, a := range d.attrs {
			if a.uri == nsRDF || a.uri == nsXML || a.uri == "" {
				continue
			}
			info.props = append(info.props, xprop{uri: a.uri, local: a.local, prefix: a.prefix, value: strings.TrimSpace(a.value)})
		}
		for _, p := range d.kids {
			info.props = append(info.props, propOf(p))
		}
	}
	for i := range info.props {
		if slicesContains(info.props[i].langs, "x-default") {
			info.xDefault = true
		}
	}
	if p := info.get(nsExtension, "schemas"); p != nil && p.el != nil {
		for _, li := range arrayItems(p.el) {
			f := fields(li)
			ns := f[nsSchema+"namespaceURI"]
			if ns == nil {
				continue
			}
			names := info.ext[text(ns)]
			if names == nil {
				names = map[string]bool{}
				info.ext[text(ns)] = names
			}
			if prop := f[nsSchema+"property"]; prop != nil {
				for _, pli := range arrayItems(prop) {
					if n := fields(pli)[nsProperty+"name"]; n != nil {
						names[text(n)] = true
					}
				}
			}
		}
	}
	return info, true
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// hasPseudoAttr reports whether a processing instruction has name=.
func hasPseudoAttr(inst, name string) bool {
	for _, f := range strings.Fields(inst) {
		if k, _, ok := strings.Cut(f, "="); ok && k == name {
			return true
		}
	}
	return false
}

func findElem(e *xelem, uri, local string, depth int) *xelem {
	if e.uri == uri && e.local == local {
		return e
	}
	if depth > maxXMPDepth {
		return nil
	}
	for _, k := range e.kids {
		if f := findElem(k, uri, local, depth+1); f != nil {
			return f
		}
	}
	return nil
}

// propOf reads a property element: a simple value, or an rdf:Alt, Seq or
// Bag of items.
func propOf(p *xelem) xprop {
	xp := xprop{uri: p.uri, local: p.local, prefix: p.prefix, el: p, value: strings.TrimSpace(p.text.String())}
	for _, k := range p.kids {
		if k.uri != nsRDF || k.local != "Alt" && k.local != "Seq" && k.local != "Bag" {
			continue
		}
		for _, li := range k.kids {
			if li.uri != nsRDF || li.local != "li" {
				continue
			}
			lang := ""
			for _, a := range li.attrs {
				if a.uri == nsXML && a.local == "lang" {
					lang = a.value
				}
			}
			xp.items = append(xp.items, strings.TrimSpace(li.text.String()))
			xp.langs = append(xp.langs, lang)
		}
	}
	return xp
}

// arrayItems are the rdf:li of the array a property element holds.
func arrayItems(p *xelem) []*xelem {
	var out []*xelem
	for _, k := range p.kids {
		if k.uri != nsRDF || k.local != "Alt" && k.local != "Seq" && k.local != "Bag" {
			continue
		}
		for _, li := range k.kids {
			if li.uri == nsRDF && li.local == "li" {
				out = append(out, li)
			}
		}
	}
	return out
}

// fields are a structure's fields, in any of RDF's forms: child elements
// (rdf:parseType="Resource"), an rdf:Description child, or attributes.
// Attribute values come back as elements holding the text.
func fields(e *xelem) map[string]*xelem {
	out := map[string]*xelem{}
	var add func(e *xelem, depth int)
	add = func(e *xelem, depth int) {
		for _, a := range e.attrs {
			if a.uri != nsRDF && a.uri != nsXML && a.uri != "" {
				v := &xelem{uri: a.uri, local: a.local, prefix: a.prefix}
				v.text.WriteString(a.value)
				out[a.uri+a.local] = v
			}
		}
		for _, k := range e.kids {
			if k.uri == nsRDF && k.local == "Description" && depth < 2 {
				add(k, depth+1)
				continue
			}
			out[k.uri+k.local] = k
		}
	}
	add(e, 0)
	return out
}

func text(e *xelem) string { return strings.TrimSpace(e.text.String()) }

// checkPDFAID: 6.6.4-1…5, the identification agrees with the level
// checked.
func (c *checker) checkPDFAID(x *xmpInfo) {
	part, conf := x.get(nsPDFAID, "part"), x.get(nsPDFAID, "conformance")
	if part == nil || conf == nil {
		c.report("6.6.4-1", "XMP metadata", "the XMP metadata has no PDF/A identification (pdfaid:part and pdfaid:conformance)")
		return
	}
	if v := part.simple(); v != fmt.Sprint(c.part) {
		c.report("6.6.4-2", "XMP metadata", "pdfaid:part is %q, not %d", v, c.part)
	}
	if v := conf.simple(); v != c.conf {
		c.report("6.6.4-3", "XMP metadata", "pdfaid:conformance is %q, not %s", v, c.conf)
	}
	for i, p := range []*xprop{part, conf, x.get(nsPDFAID, "amd"), x.get(nsPDFAID, "corr")} {
		if p != nil && p.prefix != "pdfaid" {
			c.report(fmt.Sprintf("6.6.4-%d", 4+i), "XMP metadata", "pdfaid:%s is written with the prefix %q", p.local, p.prefix)
		}
	}
}

// checkPDFUAID: UA 5-1…5.
func (c *checker) checkPDFUAID(x *xmpInfo) {
	part := x.get(nsPDFUAID, "part")
	if part == nil {
		c.report("UA 5-1", "XMP metadata", "the XMP metadata has no PDF/UA identification (pdfuaid:part)")
		return
	}
	if v := part.simple(); v != "1" {
		c.report("UA 5-2", "XMP metadata", "pdfuaid:part is %q, not 1", v)
	}
	for i, p := range []*xprop{part, x.get(nsPDFUAID, "amd"), x.get(nsPDFUAID, "corr")} {
		if p != nil && p.prefix != "pdfuaid" {
			c.report(fmt.Sprintf("UA 5-%d", 3+i), "XMP metadata", "pdfuaid:%s is written with the prefix %q", p.local, p.prefix)
		}
	}
}

// checkExtensionSchemas: 6.6.2.3.1-1, every property is predefined or
// described by a pdfaExtension:schemas entry (pdfuaid and Factur-X's fx
// need one).
func (c *checker) checkExtensionSchemas(x *xmpInfo) {
	for _, p := range x.props {
		if p.uri == nsPDFAID {
			if !pdfaidProperties[p.local] {
				c.report("6.6.2.3.1-1", "XMP metadata", "pdfaid:%s is not a property of the PDF/A identification schema", p.local)
			}
			continue
		}
		if predefinedXMP[p.uri] {
			continue
		}
		if !x.ext[p.uri][p.local] {
			c.report("6.6.2.3.1-1", "XMP metadata", "the property %s:%s (%s) is neither predefined nor described by an extension schema", p.prefix, p.local, p.uri)
		}
	}
}

// checkInfoXMP: PDF/A-1's 6.7.3-1…8, which we keep for PDF/A-2 and -3
// (DESIGN §8): every document information entry agrees with its XMP
// property.
func (c *checker) checkInfoXMP() {
	if !c.pdfa() || c.xmp == nil || c.x.Info == nil {
		return
	}
	info, err := c.x.DereferenceDict(*c.x.Info)
	if err != nil || info == nil {
		return
	}
	x := c.xmp
	str := func(key string) (string, bool) {
		if info[key] == nil {
			return "", false
		}
		return c.text(info[key])
	}
	for _, r := range []struct {
		rule, key, what string
		prop            *xprop
		lang            bool
	}{
		{"6.7.3-2", "Title", "dc:title", x.get(nsDC, "title"), true},
		{"6.7.3-4", "Subject", "dc:description", x.get(nsDC, "description"), true},
		{"6.7.3-5", "Keywords", "pdf:Keywords", x.get(nsPDF, "Keywords"), false},
		{"6.7.3-6", "Creator", "xmp:CreatorTool", x.get(nsXMP, "CreatorTool"), false},
		{"6.7.3-7", "Producer", "pdf:Producer", x.get(nsPDF, "Producer"), false},
	} {
		v, ok := str(r.key)
		if !ok {
			continue
		}
		xv := r.prop.simple()
		if r.lang {
			xv = r.prop.langValue()
		}
		if r.prop == nil || xv != v {
			c.report(r.rule, "document information", "%s %q and %s %q differ", r.key, v, r.what, xv)
		}
	}
	if v, ok := str("Author"); ok {
		p := x.get(nsDC, "creator")
		switch {
		case p == nil:
			c.report("6.7.3-3", "document information", "Author %q has no dc:creator", v)
		case len(p.items) != 1:
			c.report("6.7.3-3", "document information", "dc:creator has %d entries, not exactly one", len(p.items))
		case p.items[0] != v:
			c.report("6.7.3-3", "document information", "Author %q and dc:creator %q differ", v, p.items[0])
		}
	}
	for _, r := range []struct{ rule, key, what, local string }{
		{"6.7.3-1", "CreationDate", "xmp:CreateDate", "CreateDate"},
		{"6.7.3-8", "ModDate", "xmp:ModifyDate", "ModifyDate"},
	} {
		v, ok := str(r.key)
		if !ok {
			continue
		}
		xv := x.get(nsXMP, r.local).simple()
		it, ok1 := types.DateTime(v, true)
		xt, ok2 := xmpDate(xv)
		if !ok1 || !ok2 || !it.Equal(xt) {
			c.report(r.rule, "document information", "%s %q and %s %q are not the same instant", r.key, v, r.what, xv)
		}
	}
}

// xmpDate parses an XMP date (ISO 8601 as the XMP specification allows).
func xmpDate(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
