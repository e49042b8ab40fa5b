package pdfcheck

import (
	"regexp"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// langTag is UA 7.2-29's pattern for a Lang value.
var langTag = regexp.MustCompile(`^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$`)

// standardStructTypes are the standard structure types of ISO 32000-1
// 14.8.4.
var standardStructTypes = map[string]bool{}

func init() {
	for _, s := range []string{"Document", "Part", "Art", "Sect", "Div", "BlockQuote", "Caption", "TOC", "TOCI",
		"Index", "NonStruct", "Private", "P", "H", "H1", "H2", "H3", "H4", "H5", "H6", "L", "LI", "Lbl", "LBody",
		"Table", "TR", "TH", "TD", "THead", "TBody", "TFoot", "Span", "Quote", "Note", "Reference", "BibEntry",
		"Code", "Link", "Annot", "Ruby", "RB", "RT", "RP", "Warichu", "WT", "WP", "Figure", "Formula", "Form"} {
		standardStructTypes[s] = true
	}
}

// uaState is the PDF/UA checks' view of the structure tree.
type uaState struct {
	root       types.Dict
	roleMap    types.Dict
	parentTree map[int]types.Object // built on first use
	built      bool
}

// checkUACatalog: 6.2-1, 7.1-4, 7.1-10, 7.1-11, 7.2-29 (catalog), and the
// structure tree (7.1-5/6/7, 7.1-12, 7.2-29, 7.3-1).
func (c *checker) checkUACatalog() {
	cat := c.catalog
	mi, _ := c.x.DereferenceDict(cat["MarkInfo"])
	if mi == nil || !c.boolean(mi["Marked"]) {
		c.report("UA 6.2-1", "catalog", "the catalog has no MarkInfo with Marked true")
	}
	if mi != nil && c.boolean(mi["Suspects"]) {
		c.report("UA 7.1-4", "catalog", "MarkInfo has Suspects true")
	}
	vp, _ := c.x.DereferenceDict(cat["ViewerPreferences"])
	if vp == nil || !c.boolean(vp["DisplayDocTitle"]) {
		c.report("UA 7.1-10", "catalog", "ViewerPreferences has no DisplayDocTitle true")
	}
	if cat["Lang"] != nil {
		if l, _ := c.text(cat["Lang"]); !langTag.MatchString(l) {
			c.report("UA 7.2-29", "catalog", "the Lang %q is not a language tag", l)
		}
	}
	if !c.pdfa() {
		c.checkOptionalContent()
	}
	root, _ := c.x.DereferenceDict(cat["StructTreeRoot"])
	if root == nil {
		c.report("UA 7.1-11", "catalog", "the catalog has no StructTreeRoot")
		return
	}
	c.ua.root = root
	c.ua.roleMap, _ = c.x.DereferenceDict(root["RoleMap"])
	c.checkRoleMap()
	c.walkStructTree(root)
}

// checkUALang: UA 7.2-33/34, without a catalog Lang the language of the
// metadata (an x-default item) and of the page text is not determined.
func (c *checker) checkUALang() {
	if !c.lvl.PDFUA || c.catalog["Lang"] != nil {
		return
	}
	if c.xmp != nil && c.xmp.xDefault {
		c.report("UA 7.2-33", "catalog", "the catalog has no Lang, so the language of the metadata's x-default text is not determined")
	}
	if c.hasText {
		c.report("UA 7.2-34", "catalog", "the catalog has no Lang, so the language of the page text is not determined")
	}
}

// checkUAEncryption: UA 7.16-1, bit 10 of P is set.
func (c *checker) checkUAEncryption() {
	var enc types.Dict
	if c.x.Encrypt != nil {
		enc, _ = c.x.DereferenceDict(*c.x.Encrypt)
	}
	if enc == nil {
		if c.x.E != nil && c.x.E.P&512 == 0 {
			c.report("UA 7.16-1", "encryption", "the permissions (P) do not set bit 10 (content extraction for accessibility)")
		}
		return
	}
	p, ok := c.integer(enc["P"])
	if !ok || p&512 == 0 {
		c.report("UA 7.16-1", "encryption", "the permissions (P) do not set bit 10 (content extraction for accessibility)")
	}
}

// checkRoleMap: UA 7.1-5 (non-standard types map to standard ones),
// 7.1-6 (no circular mapping), 7.1-7 (standard types are not remapped).
func (c *checker) checkRoleMap() {
	for k := range c.ua.roleMap {
		obj := "role map /" + k
		if standardStructTypes[k] {
			c.report("UA 7.1-7", obj, "the standard structure type %s is remapped", k)
			continue
		}
		if _, circular := c.stdType(k); circular {
			c.report("UA 7.1-6", obj, "the role mapping of %s is circular", k)
		}
	}
}

// stdType resolves a structure type through the role map: the standard
// type it ends at ("" when none), and whether the mapping loops.
func (c *checker) stdType(s string) (string, bool) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		if standardStructTypes[s] {
			return s, false
		}
		if seen[s] {
			return "", true
		}
		seen[s] = true
		next := c.name(c.ua.roleMap[s])
		if next == "" {
			return "", false
		}
		s = next
	}
	return "", true
}

// walkStructTree visits the structure elements (visited set, depth and
// count bounds): UA 7.1-5, 7.1-12, 7.2-29, 7.3-1.
func (c *checker) walkStructTree(root types.Dict) {
	seen := map[int]bool{}
	count := 0
	var walk func(o types.Object, depth int, parentRef bool)
	walk = func(o types.Object, depth int, _ bool) {
		if ref, ok := o.(types.IndirectRef); ok {
			if seen[ref.ObjectNumber.Value()] {
				return
			}
			seen[ref.ObjectNumber.Value()] = true
		}
		count++
		if depth > maxDepth*4 || count > maxTreeNodes {
			c.limit("structTree", "structure tree", "the structure tree is deeper or larger than the checker's bounds; the rest is not checked")
			return
		}
		o, _ = c.x.Dereference(o)
		switch v := o.(type) {
		case types.Array:
			for _, k := range v {
				walk(k, depth+1, false)
			}
			return
		case types.Dict:
			t := c.name(v["Type"])
			if t == "MCR" || t == "OBJR" || v["S"] == nil {
				return
			}
			c.checkStructElem(v)
			walk(v["K"], depth+1, false)
		}
	}
	walk(root["K"], 0, false)
}

func (c *checker) checkStructElem(e types.Dict) {
	s := c.name(e["S"])
	obj := "structure element " + s
	std, circular := c.stdType(s)
	if std == "" && !circular && !standardStructTypes[s] {
		c.report("UA 7.1-5", obj, "the structure type %s is not mapped to a standard type", s)
	}
	if e["P"] == nil {
		c.report("UA 7.1-12", obj, "the structure element has no parent (P)")
	}
	if e["Lang"] != nil {
		if l, _ := c.text(e["Lang"]); !langTag.MatchString(l) {
			c.report("UA 7.2-29", obj, "the Lang %q is not a language tag", l)
		}
	}
	if std == "Figure" {
		alt, _ := c.text(e["Alt"])
		if alt == "" && e["ActualText"] == nil {
			c.report("UA 7.3-1", obj, "a Figure has neither Alt nor ActualText")
		}
	}
}

// structParentOf is the structure element an annotation's StructParent
// names in the parent tree, and its standard type.
func (c *checker) structParentOf(d types.Dict) (types.Dict, string) {
	key, ok := c.integer(d["StructParent"])
	if !ok || c.ua.root == nil {
		return nil, ""
	}
	if !c.ua.built {
		c.ua.built = true
		c.ua.parentTree = c.numberTree(c.ua.root["ParentTree"])
	}
	e, _ := c.x.DereferenceDict(c.ua.parentTree[int(key)])
	if e == nil {
		return nil, ""
	}
	std, _ := c.stdType(c.name(e["S"]))
	return e, std
}

// numberTree flattens a number tree (visited set, bounds).
func (c *checker) numberTree(o types.Object) map[int]types.Object {
	out := map[int]types.Object{}
	seen := map[int]bool{}
	var walk func(o types.Object, depth int)
	walk = func(o types.Object, depth int) {
		if ref, ok := o.(types.IndirectRef); ok {
			if seen[ref.ObjectNumber.Value()] {
				return
			}
			seen[ref.ObjectNumber.Value()] = true
		}
		if depth > maxDepth || len(out) > maxTreeNodes || len(seen) > maxTreeNodes {
			c.limit("numberTree", "parent tree", "the parent tree is deeper or larger than the checker's bounds")
			return
		}
		d, _ := c.x.DereferenceDict(o)
		if d == nil {
			return
		}
		nums, _ := c.x.DereferenceArray(d["Nums"])
		for i := 0; i+1 < len(nums); i += 2 {
			if k, ok := c.integer(nums[i]); ok {
				out[int(k)] = nums[i+1]
			}
		}
		kids, _ := c.x.DereferenceArray(d["Kids"])
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	walk(o, 0)
	return out
}
