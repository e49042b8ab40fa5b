package pdfcheck

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// page is one page of the page tree, with its inherited attributes.
type page struct {
	n         int // 1-based
	nr        int // object number, 0 when direct
	d         types.Dict
	resources types.Dict
	mediaBox  types.Object
}

// checkModel runs every rule on the parsed model.
func (c *checker) checkModel() {
	cat := c.x.RootDict
	if c.x.Root != nil {
		if d, err := c.x.DereferenceDict(*c.x.Root); err == nil && d != nil {
			cat = d
		}
	}
	if cat == nil {
		c.report(RuleLimit, "catalog", "the file has no catalog; nothing else is checked")
		return
	}
	c.catalog = cat
	c.collectPages()
	if c.pdfa() {
		c.checkOutputIntents()
	}
	w := c.walkObjects()
	c.checkXMP()
	c.checkInfoXMP()
	if c.pdfa() {
		c.checkCatalogPDFA()
	}
	c.checkFiles(w.files)
	c.checkSignatures(w.sigs)
	if c.x.Encrypt != nil || c.x.E != nil {
		if c.pdfa() {
			c.report("6.1.3-2", "trailer", "the file is encrypted (Encrypt in the trailer)")
		}
		if c.lvl.PDFUA {
			c.checkUAEncryption()
		}
	}
	if c.lvl.PDFUA {
		c.checkUACatalog()
	}
	c.res = newResourceWalk(c)
	for i := range c.pages {
		c.checkPage(&c.pages[i])
	}
	c.checkUALang()
}

// collectPages walks the page tree (visited set, depth and count bounds).
func (c *checker) collectPages() {
	seen := map[int]bool{}
	var walk func(o types.Object, res types.Dict, mb types.Object, depth int)
	walk = func(o types.Object, res types.Dict, mb types.Object, depth int) {
		nr := 0
		if ref, ok := o.(types.IndirectRef); ok {
			nr = ref.ObjectNumber.Value()
			if seen[nr] {
				return
			}
			seen[nr] = true
		}
		if depth > maxDepth || len(c.pages) >= maxTreeNodes {
			c.limit("pages", "page tree", "the page tree is deeper or larger than the checker's bounds")
			return
		}
		d, err := c.x.DereferenceDict(o)
		if err != nil || d == nil {
			return
		}
		if r, err := c.x.DereferenceDict(d["Resources"]); err == nil && r != nil {
			res = r
		}
		if d["MediaBox"] != nil {
			mb = d["MediaBox"]
		}
		if kids := d.ArrayEntry("Kids"); kids != nil || d.NameEntry("Type") != nil && *d.NameEntry("Type") == "Pages" {
			if kids == nil {
				if a, err := c.x.DereferenceArray(d["Kids"]); err == nil {
					kids = a
				}
			}
			for _, k := range kids {
				walk(k, res, mb, depth+1)
			}
			return
		}
		c.pages = append(c.pages, page{n: len(c.pages) + 1, nr: nr, d: d, resources: res, mediaBox: mb})
	}
	walk(c.catalog["Pages"], nil, nil, 0)
}

// decode returns a stream's decoded bytes, at most limit; over the limit
// or undecodable it reports RuleLimit and returns false.
func (c *checker) decode(sd *types.StreamDict, limit int64, object string) ([]byte, bool) {
	if sd.Content != nil {
		if int64(len(sd.Content)) > limit {
			c.limit("stream:"+object, object, "%s is larger than the checker's bound (%d bytes)", object, limit)
			return nil, false
		}
		return sd.Content, true
	}
	cp := *sd
	b, err := cp.DecodeLengthWithLimit(-1, limit)
	if err != nil {
		c.limit("stream:"+object, object, "%s cannot be decoded within the checker's bound: %v", object, truncate(err.Error()))
		return nil, false
	}
	return b, true
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// checkOutputIntents: 6.2.3-1/2/3 and the output colour space the
// DeviceRGB/CMYK/Gray rules depend on (veraPDF's gOutputCS, from the
// GTS_PDFA1 intent only).
func (c *checker) checkOutputIntents() {
	arr, err := c.x.DereferenceArray(c.catalog["OutputIntents"])
	if err != nil || arr == nil {
		return
	}
	profileNr := -1
	for i, o := range arr {
		if i >= 100 {
			break
		}
		d, err := c.x.DereferenceDict(o)
		if err != nil || d == nil {
			continue
		}
		obj := fmt.Sprintf("output intent %d", i+1)
		s := c.name(d["S"])
		if s == "GTS_PDFX" && d["DestOutputProfileRef"] != nil {
			c.report("6.2.3-3", obj, "a PDF/X output intent has DestOutputProfileRef")
		}
		ref, isRef := d["DestOutputProfile"].(types.IndirectRef)
		if d["DestOutputProfile"] != nil {
			nr := -2
			if isRef {
				nr = ref.ObjectNumber.Value()
			}
			if profileNr == -1 {
				profileNr = nr
			} else if profileNr != nr || nr == -2 {
				c.report("6.2.3-2", obj, "the output intents do not share one DestOutputProfile object")
			}
		}
		if s != "GTS_PDFA1" {
			continue
		}
		sd, _, err := c.x.DereferenceStreamDict(d["DestOutputProfile"])
		if err != nil || sd == nil {
			continue
		}
		icc, ok := c.decode(sd, maxStreamBytes, obj+" profile")
		if !ok {
			continue
		}
		if len(icc) < 128 {
			c.report("6.2.3-1", obj, "the DestOutputProfile is not an ICC profile (%d bytes)", len(icc))
			continue
		}
		class, space, major := string(icc[12:16]), string(icc[16:20]), icc[8]
		if c.outCS == "" {
			c.outCS = space
		}
		if class != "mntr" && class != "prtr" || space != "RGB " && space != "CMYK" && space != "GRAY" || major >= 5 {
			c.report("6.2.3-1", obj, "the DestOutputProfile is a %q profile in %q, version %d (want mntr or prtr; RGB, CMYK or GRAY; version below 5)", class, space, major)
		}
	}
}

// checkCatalogPDFA: the catalog's rules.
func (c *checker) checkCatalogPDFA() {
	cat := c.catalog
	if cat["AA"] != nil {
		c.report("6.5.2-1", "catalog", "the catalog has an additional-actions (AA) dictionary")
	}
	if c.boolean(cat["NeedsRendering"]) {
		c.report("6.4.2-2", "catalog", "the catalog has NeedsRendering true")
	}
	if cat["Requirements"] != nil {
		c.report("6.11-1", "catalog", "the catalog has a Requirements key")
	}
	if names, err := c.x.DereferenceDict(cat["Names"]); err == nil && names != nil && names["AlternatePresentations"] != nil {
		c.report("6.10-1", "catalog", "the name dictionary has AlternatePresentations")
	}
	if perms, err := c.x.DereferenceDict(cat["Perms"]); err == nil && perms != nil {
		for k := range perms {
			if k != "UR3" && k != "DocMDP" {
				c.report("6.1.12-1", "catalog", "the permissions dictionary has %s (only UR3 and DocMDP are allowed)", k)
			}
		}
	}
	if form, err := c.x.DereferenceDict(cat["AcroForm"]); err == nil && form != nil {
		if c.boolean(form["NeedAppearances"]) {
			c.report("6.4.1-3", "interactive form", "NeedAppearances is true")
		}
		if form["XFA"] != nil {
			c.report("6.4.2-1", "interactive form", "the interactive form has XFA")
		}
		c.checkFields(form)
	}
	c.checkOptionalContent()
}

// checkOptionalContent: 6.9-1…4 for PDF/A, UA 7.10-1/2 for PDF/UA: every
// optional content configuration has a unique Name, an Order listing
// every OCG, and no AS.
func (c *checker) checkOptionalContent() {
	oc, err := c.x.DereferenceDict(c.catalog["OCProperties"])
	if err != nil || oc == nil {
		return
	}
	a, ua := c.pdfa(), c.lvl.PDFUA
	ocgs := map[int]bool{}
	if all, err := c.x.DereferenceArray(oc["OCGs"]); err == nil {
		for _, o := range all {
			if ref, ok := o.(types.IndirectRef); ok {
				ocgs[ref.ObjectNumber.Value()] = true
			}
		}
	}
	configs := []types.Object{oc["D"]}
	if arr, err := c.x.DereferenceArray(oc["Configs"]); err == nil {
		configs = append(configs, arr...)
	}
	names := map[string]bool{}
	for i, o := range configs {
		if i > 1000 {
			break
		}
		d, err := c.x.DereferenceDict(o)
		if err != nil || d == nil {
			continue
		}
		obj := fmt.Sprintf("optional content configuration %d", i+1)
		n, _ := c.text(d["Name"])
		switch {
		case n == "":
			if a {
				c.report("6.9-1", obj, "an optional content configuration has no Name")
			}
			if ua {
				c.report("UA 7.10-1", obj, "an optional content configuration has no Name")
			}
		case names[n] && a:
			c.report("6.9-2", obj, "the optional content configuration name %q is not unique", n)
		}
		names[n] = true
		if d["Order"] != nil && a {
			listed := map[int]bool{}
			c.collectRefs(d["Order"], listed, 0)
			for nr := range ocgs {
				if !listed[nr] {
					c.report("6.9-3", obj, "the Order array does not list every optional content group")
					break
				}
			}
		}
		if d["AS"] != nil {
			if a {
				c.report("6.9-4", obj, "an optional content configuration has AS")
			}
			if ua {
				c.report("UA 7.10-2", obj, "an optional content configuration has AS")
			}
		}
	}
}

// collectRefs gathers the object numbers referenced in nested arrays.
func (c *checker) collectRefs(o types.Object, into map[int]bool, depth int) {
	if depth > maxDepth || len(into) > maxTreeNodes {
		return
	}
	if ref, ok := o.(types.IndirectRef); ok {
		into[ref.ObjectNumber.Value()] = true
		o, _ = c.x.Dereference(o)
	}
	if arr, ok := o.(types.Array); ok {
		for _, x := range arr {
			c.collectRefs(x, into, depth+1)
		}
	}
}

// checkFields: 6.4.1-2, no field has AA (walks the field tree).
func (c *checker) checkFields(form types.Dict) {
	seen := map[int]bool{}
	count := 0
	var walk func(o types.Object, depth int)
	walk = func(o types.Object, depth int) {
		if ref, ok := o.(types.IndirectRef); ok {
			if seen[ref.ObjectNumber.Value()] {
				return
			}
			seen[ref.ObjectNumber.Value()] = true
		}
		count++
		if depth > maxDepth || count > maxTreeNodes {
			return
		}
		d, err := c.x.DereferenceDict(o)
		if err != nil || d == nil {
			return
		}
		if d["AA"] != nil && d.NameEntry("Subtype") == nil {
			name, _ := c.text(d["T"])
			c.report("6.4.1-2", "form field "+strconv.Quote(name), "a form field has an additional-actions (AA) dictionary")
		}
		kids, _ := c.x.DereferenceArray(d["Kids"])
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	fields, _ := c.x.DereferenceArray(form["Fields"])
	for _, f := range fields {
		walk(f, 0)
	}
}

// checkFiles: embedded files. 6.8-2 (F and UF), for part 2 6.8-5 (any
// embedded file is refused: the checker does not validate embedded PDFs),
// for part 3 6.8-1 (MIME type), 6.8-3 (AFRelationship), 6.8-4 (listed in
// an AF array); UA 7.11-1 (F and UF non-empty).
func (c *checker) checkFiles(files []fileSpec) {
	for _, fs := range files {
		d := fs.d
		name, _ := c.text(d["UF"])
		if name == "" {
			name, _ = c.text(d["F"])
		}
		obj := "embedded file " + strconv.Quote(name)
		if c.pdfa() {
			if d["F"] == nil || d["UF"] == nil {
				c.report("6.8-2", obj, "the file specification lacks F or UF")
			}
		}
		if c.part == 2 {
			c.report("6.8-5", obj, "PDF/A-%d allows only embedded PDF/A files, which the checker does not verify: no embedded files", c.part)
		}
		if c.part == 3 {
			ef, _ := c.x.DereferenceDict(d["EF"])
			var sd *types.StreamDict
			for _, k := range []string{"F", "UF"} {
				if ef != nil && sd == nil {
					sd, _, _ = c.x.DereferenceStreamDict(ef[k])
				}
			}
			mime := ""
			if sd != nil {
				mime = c.name(sd.Dict["Subtype"])
			}
			if !mimeType.MatchString(mime) {
				c.report("6.8-1", obj, "the embedded file's MIME type (Subtype) %q is missing or malformed", mime)
			}
			if d["AFRelationship"] == nil {
				c.report("6.8-3", obj, "the file specification has no AFRelationship")
			}
			if !fs.inAF && !(fs.nr != 0 && c.af[fs.nr]) {
				c.report("6.8-4", obj, "the file is not an associated file (listed in no AF array)")
			}
		}
		if c.lvl.PDFUA {
			f, _ := c.text(d["F"])
			uf, _ := c.text(d["UF"])
			if f == "" || uf == "" {
				c.report("UA 7.11-1", obj, "the file specification lacks a non-empty F or UF")
			}
		}
	}
}

// checkSignatures: 6.4.3-1, the byte range covers the whole file but the
// signature's Contents (needs the bytes); 6.4.3-2/3 in cms.go.
func (c *checker) checkSignatures(sigs []sigDict) {
	if !c.pdfa() {
		return
	}
	for _, s := range sigs {
		if c.pdf != nil {
			br, _ := c.x.DereferenceArray(s.d["ByteRange"])
			if !c.byteRangeCovers(br) {
				c.report("6.4.3-1", "signature ("+s.object+")", "the signature's ByteRange does not cover the whole file but its Contents")
			}
		}
		c.checkSignatureCMS(s)
	}
}

func (c *checker) byteRangeCovers(br types.Array) bool {
	if len(br) != 4 {
		return false
	}
	var v [4]int64
	for i, o := range br {
		n, ok := c.integer(o)
		if !ok || n < 0 {
			return false
		}
		v[i] = n
	}
	size := int64(len(c.pdf))
	if v[0] != 0 || v[1] <= 0 || v[2] < v[1]+2 || v[2]+v[3] < v[2] || v[2]+v[3] > size {
		return false
	}
	if rest := c.pdf[v[2]+v[3]:]; eolLen(rest) != len(rest) {
		return false
	}
	return c.pdf[v[1]] == '<' && c.pdf[v[2]-1] == '>'
}

// boxes are the page boundaries of 6.1.13-11.
var boxes = []string{"MediaBox", "CropBox", "BleedBox", "TrimBox", "ArtBox"}

// checkPage runs the per-page rules and the page's resources, content
// and annotations.
func (c *checker) checkPage(p *page) {
	obj := fmt.Sprintf("page %d", p.n)
	if c.pdfa() {
		if p.d["AA"] != nil {
			c.report("6.5.2-2", obj, "the page has an additional-actions (AA) dictionary")
		}
		if p.d["PresSteps"] != nil {
			c.report("6.10-2", obj, "the page has PresSteps")
		}
		for _, k := range boxes {
			o := p.d[k]
			if k == "MediaBox" {
				o = p.mediaBox
			}
			if o == nil {
				continue
			}
			r, err := c.rect(o)
			if err != nil {
				continue
			}
			w, h := math.Abs(r[2]-r[0]), math.Abs(r[3]-r[1])
			if w < 3 || h < 3 || w > 14400 || h > 14400 {
				c.report("6.1.13-11", obj, "the %s is %g × %g units (3…14400 allowed)", k, w, h)
			}
		}
	}
	c.res.page(p)
	c.checkAnnots(p)
}

func (c *checker) rect(o types.Object) ([4]float64, error) {
	var r [4]float64
	a, err := c.x.DereferenceArray(o)
	if err != nil || len(a) != 4 {
		return r, errors.New("not a rectangle")
	}
	for i, x := range a {
		f, ok := c.number(x)
		if !ok {
			return r, errors.New("not a rectangle")
		}
		r[i] = f
	}
	return r, nil
}
