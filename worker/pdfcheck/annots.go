package pdfcheck

import (
	"fmt"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// allowedAnnots are the annotation types 6.3.1-1 permits.
var allowedAnnots = map[string]bool{"Text": true, "Link": true, "FreeText": true, "Line": true, "Square": true,
	"Circle": true, "Polygon": true, "PolyLine": true, "Highlight": true, "Underline": true, "Squiggly": true,
	"StrikeOut": true, "Stamp": true, "Caret": true, "Ink": true, "Popup": true, "FileAttachment": true,
	"Widget": true, "PrinterMark": true, "TrapNet": true, "Watermark": true, "Redact": true}

// maxAnnots bounds the annotations checked per page.
const maxAnnots = 10_000

// checkAnnots runs the annotation rules of a page: 6.3.1-1, 6.3.2-1/2,
// 6.3.3-1…4, 6.4.1-1, the appearance streams' fonts and content; for
// PDF/UA 7.18.1-1/2/3, 7.18.2-1, 7.18.3-1, 7.18.4-1, 7.18.5-1/2.
func (c *checker) checkAnnots(p *page) {
	annots, _ := c.x.DereferenceArray(p.d["Annots"])
	if len(annots) == 0 {
		return
	}
	if c.lvl.PDFUA && c.name(p.d["Tabs"]) != "S" {
		c.report("UA 7.18.3-1", fmt.Sprintf("page %d", p.n), "the page has annotations but no /Tabs /S")
	}
	for i, o := range annots {
		if i >= maxAnnots {
			c.limit("annots", fmt.Sprintf("page %d", p.n), "more than %d annotations on a page; the rest are not checked", maxAnnots)
			break
		}
		d, err := c.x.DereferenceDict(o)
		if err != nil || d == nil {
			continue
		}
		sub := c.name(d["Subtype"])
		obj := fmt.Sprintf("page %d annotation %d (%s)", p.n, i+1, sub)
		flags, hasF := c.integer(d["F"])
		if c.pdfa() {
			c.checkAnnotPDFA(d, sub, flags, hasF, obj)
		}
		c.annotAppearances(d, obj)
		if c.lvl.PDFUA && flags&2 == 0 {
			c.checkAnnotUA(d, sub, obj)
		}
	}
}

func (c *checker) checkAnnotPDFA(d types.Dict, sub string, flags int64, hasF bool, obj string) {
	if !allowedAnnots[sub] {
		c.report("6.3.1-1", obj, "the annotation type %q is not permitted", sub)
	}
	if !hasF && sub != "Popup" {
		c.report("6.3.2-1", obj, "the annotation has no F (flags) key")
	}
	if hasF && (flags&4 == 0 || flags&(1|2|32|256) != 0) {
		c.report("6.3.2-2", obj, "the annotation flags %d do not set Print or set Invisible, Hidden, ToggleNoView or NoView", flags)
	}
	zero := false
	if r, err := c.rect(d["Rect"]); err == nil {
		zero = r[0] == r[2] && r[1] == r[3]
	}
	ap, _ := c.x.DereferenceDict(d["AP"])
	if ap == nil {
		if !zero && sub != "Popup" && sub != "Link" {
			c.report("6.3.3-1", obj, "the annotation has no appearance dictionary")
		}
	} else {
		for k := range ap {
			if k != "N" {
				c.report("6.3.3-2", obj, "the appearance dictionary has %s (only N is allowed)", k)
				break
			}
		}
		n, _ := c.x.Dereference(ap["N"])
		_, isStream := n.(types.StreamDict)
		_, isDict := n.(types.Dict)
		if n != nil {
			if sub == "Widget" && c.fieldType(d) == "Btn" {
				if !isDict {
					c.report("6.3.3-3", obj, "a button widget's normal appearance is not an appearance subdictionary")
				}
			} else if !isStream {
				c.report("6.3.3-4", obj, "the normal appearance is not an appearance stream")
			}
		}
	}
	if sub == "Widget" && (d["A"] != nil || d["AA"] != nil) {
		c.report("6.4.1-1", obj, "a widget annotation has an A or AA key")
	}
}

// fieldType is a widget's field type, inherited through Parent.
func (c *checker) fieldType(d types.Dict) string {
	for i := 0; d != nil && i < maxDepth; i++ {
		if ft := c.name(d["FT"]); ft != "" {
			return ft
		}
		d, _ = c.x.DereferenceDict(d["Parent"])
	}
	return ""
}

// annotAppearances checks every appearance stream of an annotation.
func (c *checker) annotAppearances(d types.Dict, obj string) {
	ap, _ := c.x.DereferenceDict(d["AP"])
	for _, k := range []string{"N", "R", "D"} {
		if ap == nil || ap[k] == nil {
			continue
		}
		o := ap[k]
		var streams []types.Object
		if sd, _, err := c.x.DereferenceStreamDict(o); err == nil && sd != nil {
			streams = append(streams, o)
		} else if sub, err := c.x.DereferenceDict(o); err == nil && sub != nil {
			for _, s := range sub {
				streams = append(streams, s)
			}
		}
		for i, s := range streams {
			if i > 100 {
				break
			}
			sd, _, err := c.x.DereferenceStreamDict(s)
			if err != nil || sd == nil {
				continue
			}
			nr := -1
			if ref, ok := s.(types.IndirectRef); ok {
				nr = ref.ObjectNumber.Value()
			}
			c.res.appearance(sd, nr, obj+" appearance")
		}
	}
}

// checkAnnotUA: the PDF/UA rules of a visible annotation. Popups belong
// to their markup annotation and are not checked on their own; a Link
// without Contents is 7.18.5-2 (not also 7.18.1-2).
func (c *checker) checkAnnotUA(d types.Dict, sub, obj string) {
	elem, typ := c.structParentOf(d)
	contents, _ := c.text(d["Contents"])
	alt := ""
	if elem != nil {
		alt, _ = c.text(elem["Alt"])
	}
	switch sub {
	case "Popup", "PrinterMark":
	case "TrapNet":
		c.report("UA 7.18.2-1", obj, "a TrapNet annotation")
	case "Widget":
		if typ != "Form" {
			c.report("UA 7.18.4-1", obj, "the widget annotation is not nested in a Form structure element")
		}
		if tu := c.fieldTU(d); tu == "" && alt == "" {
			c.report("UA 7.18.1-3", obj, "the form field has no TU and its structure element no Alt")
		}
	case "Link":
		if typ != "Link" {
			c.report("UA 7.18.5-1", obj, "the link annotation is not nested in a Link structure element")
		}
		if contents == "" {
			c.report("UA 7.18.5-2", obj, "the link annotation has no Contents")
		}
	default:
		if typ != "Annot" {
			c.report("UA 7.18.1-1", obj, "the annotation is not nested in an Annot structure element")
		}
		if contents == "" && alt == "" {
			c.report("UA 7.18.1-2", obj, "the annotation has neither Contents nor an Alt in its structure element")
		}
	}
}

// fieldTU is a widget's field's TU, through Parent.
func (c *checker) fieldTU(d types.Dict) string {
	for i := 0; d != nil && i < maxDepth; i++ {
		if tu, _ := c.text(d["TU"]); tu != "" {
			return tu
		}
		d, _ = c.x.DereferenceDict(d["Parent"])
	}
	return ""
}
