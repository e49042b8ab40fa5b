package pdfcheck

import (
	"bytes"
	"encoding/binary"
	"regexp"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// fontInfo is what the content scan needs of a checked font.
type fontInfo struct {
	name         string
	cid0IsNotdef bool // a Type0 font with an Identity CMap whose CID 0 is glyph 0
}

// standard14 are the standard Type 1 fonts (6.2.11.2-4…6 exempt them;
// 6.2.11.4.1-1 does not).
var standard14 = map[string]bool{"Times-Roman": true, "Times-Bold": true, "Times-Italic": true,
	"Times-BoldItalic": true, "Helvetica": true, "Helvetica-Bold": true, "Helvetica-Oblique": true,
	"Helvetica-BoldOblique": true, "Courier": true, "Courier-Bold": true, "Courier-Oblique": true,
	"Courier-BoldOblique": true, "Symbol": true, "ZapfDingbats": true}

// predefinedCMaps are the CMaps of ISO 32000-1 Table 118 (6.2.11.3.3-1).
var predefinedCMaps = map[string]bool{}

func init() {
	for _, n := range []string{"Identity-H", "Identity-V", "GB-EUC-H", "GB-EUC-V", "GBpc-EUC-H", "GBpc-EUC-V",
		"GBK-EUC-H", "GBK-EUC-V", "GBKp-EUC-H", "GBKp-EUC-V", "GBK2K-H", "GBK2K-V", "UniGB-UCS2-H", "UniGB-UCS2-V",
		"UniGB-UTF16-H", "UniGB-UTF16-V", "B5pc-H", "B5pc-V", "HKscs-B5-H", "HKscs-B5-V", "ETen-B5-H", "ETen-B5-V",
		"ETenms-B5-H", "ETenms-B5-V", "CNS-EUC-H", "CNS-EUC-V", "UniCNS-UCS2-H", "UniCNS-UCS2-V", "UniCNS-UTF16-H",
		"UniCNS-UTF16-V", "83pv-RKSJ-H", "90ms-RKSJ-H", "90ms-RKSJ-V", "90msp-RKSJ-H", "90msp-RKSJ-V", "90pv-RKSJ-H",
		"Add-RKSJ-H", "Add-RKSJ-V", "EUC-H", "EUC-V", "Ext-RKSJ-H", "Ext-RKSJ-V", "H", "V", "UniJIS-UCS2-H",
		"UniJIS-UCS2-V", "UniJIS-UCS2-HW-H", "UniJIS-UCS2-HW-V", "UniJIS-UTF16-H", "UniJIS-UTF16-V", "KSC-EUC-H",
		"KSC-EUC-V", "KSCms-UHC-H", "KSCms-UHC-V", "KSCms-UHC-HW-H", "KSCms-UHC-HW-V", "KSCpc-EUC-H", "UniKS-UCS2-H",
		"UniKS-UCS2-V", "UniKS-UTF16-H", "UniKS-UTF16-V"} {
		predefinedCMaps[n] = true
	}
}

var subsetTag = regexp.MustCompile(`^[A-Z]{6}\+`)

// fontByName is the checked font res names name, nil if none.
func (r *resourceWalk) fontByName(res types.Dict, name string) *fontInfo {
	if res == nil {
		return nil
	}
	fonts, err := r.c.x.DereferenceDict(res["Font"])
	if err != nil || fonts == nil || fonts[name] == nil {
		return nil
	}
	return r.font(fonts[name], "font "+name)
}

// font checks a font dictionary once (by object number) and returns what
// the content scan needs of it.
func (r *resourceWalk) font(o types.Object, obj string) *fontInfo {
	c := r.c
	nr := -1
	if ref, ok := o.(types.IndirectRef); ok {
		nr = ref.ObjectNumber.Value()
		if fi := r.fonts[nr]; fi != nil {
			return fi
		}
	} else if r.direct++; r.direct > 10000 {
		return nil
	}
	fi := &fontInfo{}
	if nr >= 0 {
		r.fonts[nr] = fi
	}
	d, err := c.x.DereferenceDict(o)
	if err != nil || d == nil {
		return fi
	}
	sub := c.name(d["Subtype"])
	fi.name = c.name(d["BaseFont"])
	if fi.name == "" {
		fi.name = "(unnamed)"
	}
	r.checkFontDict(d, sub, obj)
	if sub != "Type0" {
		r.checkEmbedded(d, sub, fi.name, obj)
		r.checkToUnicode(d, sub, obj)
		return fi
	}
	enc, _ := c.x.Dereference(d["Encoding"])
	cmap := ""
	if n, ok := enc.(types.Name); ok {
		cmap = string(n)
		if !predefinedCMaps[cmap] {
			if c.pdfa() {
				c.report("6.2.11.3.3-1", obj, "the CMap %s is neither predefined nor embedded", cmap)
			}
			if c.lvl.PDFUA {
				c.report("UA 7.21.3.3-1", obj, "the CMap %s is neither predefined nor embedded", cmap)
			}
		}
	}
	desc, _ := c.x.DereferenceArray(d["DescendantFonts"])
	if len(desc) == 0 {
		return fi
	}
	dd, err := c.x.DereferenceDict(desc[0])
	if err != nil || dd == nil {
		return fi
	}
	dsub := c.name(dd["Subtype"])
	r.checkFontDict(dd, dsub, obj)
	embedded := r.checkEmbedded(dd, dsub, fi.name, obj)
	if dsub == "CIDFontType2" && embedded && dd["CIDToGIDMap"] == nil {
		if c.pdfa() {
			c.report("6.2.11.3.2-1", obj, "the embedded CIDFontType2 font %s has no CIDToGIDMap", fi.name)
		}
		if c.lvl.PDFUA {
			c.report("UA 7.21.3.2-1", obj, "the embedded CIDFontType2 font %s has no CIDToGIDMap", fi.name)
		}
	}
	r.checkToUnicode(d, "Type0", obj)
	if cmap == "Identity-H" || cmap == "Identity-V" {
		m := c.name(dd["CIDToGIDMap"])
		fi.cid0IsNotdef = dsub == "CIDFontType0" || m == "Identity" || dd["CIDToGIDMap"] == nil
	}
	return fi
}

// checkFontDict: 6.2.11.2-1…7.
func (r *resourceWalk) checkFontDict(d types.Dict, sub, obj string) {
	c := r.c
	if !c.pdfa() {
		return
	}
	if c.name(d["Type"]) != "Font" {
		c.report("6.2.11.2-1", obj, "a font dictionary's Type is not Font")
	}
	switch sub {
	case "Type1", "MMType1", "TrueType", "Type3", "Type0", "CIDFontType0", "CIDFontType2":
	default:
		c.report("6.2.11.2-2", obj, "the font Subtype %q is not one of ISO 32000-1", sub)
	}
	base := c.name(d["BaseFont"])
	if sub != "Type3" && base == "" {
		c.report("6.2.11.2-3", obj, "the font has no BaseFont")
	}
	switch sub {
	case "Type1", "MMType1", "TrueType", "Type3":
		if standard14[base] && d["FontDescriptor"] == nil {
			break
		}
		first, ok1 := c.integer(d["FirstChar"])
		last, ok2 := c.integer(d["LastChar"])
		if !ok1 {
			c.report("6.2.11.2-4", obj, "the simple font has no FirstChar")
		}
		if !ok2 {
			c.report("6.2.11.2-5", obj, "the simple font has no LastChar")
		}
		w, _ := c.x.DereferenceArray(d["Widths"])
		if ok1 && ok2 && (w == nil || int64(len(w)) != last-first+1) {
			c.report("6.2.11.2-6", obj, "the font's Widths do not have LastChar − FirstChar + 1 entries")
		}
	}
}

// checkEmbedded: 6.2.11.4.1-1 / UA 7.21.4.1-1 (a font program), 6.2.11.2-7
// (FontFile3 Subtype), 6.2.11.4.2-2 / UA 7.21.4.2-2 (CIDSet complete).
func (r *resourceWalk) checkEmbedded(d types.Dict, sub, name, obj string) bool {
	c := r.c
	if sub == "Type3" {
		return true
	}
	fd, _ := c.x.DereferenceDict(d["FontDescriptor"])
	var file types.Object
	key := ""
	for _, k := range []string{"FontFile", "FontFile2", "FontFile3"} {
		if fd != nil && fd[k] != nil {
			file, key = fd[k], k
			break
		}
	}
	if file == nil {
		if c.pdfa() {
			c.report("6.2.11.4.1-1", obj, "font %s is not embedded", name)
		}
		if c.lvl.PDFUA {
			c.report("UA 7.21.4.1-1", obj, "font %s is not embedded", name)
		}
		return false
	}
	sd, _, _ := c.x.DereferenceStreamDict(file)
	if key == "FontFile3" && sd != nil && c.pdfa() {
		if st := c.name(sd.Dict["Subtype"]); st != "" && st != "Type1C" && st != "CIDFontType0C" && st != "OpenType" {
			c.report("6.2.11.2-7", obj, "the font program's Subtype %s is not Type1C, CIDFontType0C or OpenType", st)
		}
	}
	if fd["CIDSet"] != nil && subsetTag.MatchString(name) && (sub == "CIDFontType0" || sub == "CIDFontType2") {
		if !r.cidSetComplete(d, fd, key, sd, obj) {
			if c.pdfa() {
				c.report("6.2.11.4.2-2", obj, "the CIDSet of font %s does not list every glyph of its program", name)
			}
			if c.lvl.PDFUA {
				c.report("UA 7.21.4.2-2", obj, "the CIDSet of font %s does not list every glyph of its program", name)
			}
		}
	}
	return true
}

// cidSetComplete: with a TrueType program and an Identity CIDToGIDMap,
// every glyph the program defines (a non-empty loca entry, and glyph 0)
// has its bit set. Any other CIDSet counts as incomplete: the checker
// cannot verify it, and the pipeline removes CIDSets.
func (r *resourceWalk) cidSetComplete(d, fd types.Dict, key string, prog *types.StreamDict, obj string) bool {
	c := r.c
	if key != "FontFile2" || prog == nil || c.name(d["CIDToGIDMap"]) != "Identity" && d["CIDToGIDMap"] != nil {
		return false
	}
	setSD, _, _ := c.x.DereferenceStreamDict(fd["CIDSet"])
	if setSD == nil {
		return false
	}
	set, ok := c.decode(setSD, 1<<20, obj+" CIDSet")
	if !ok {
		return false
	}
	ttf, ok := c.decode(prog, maxStreamBytes, obj+" font program")
	if !ok {
		return false
	}
	present, ok := trueTypeGlyphs(ttf)
	if !ok {
		return false
	}
	for gid, p := range present {
		if !p {
			continue
		}
		if gid/8 >= len(set) || set[gid/8]&(0x80>>(gid%8)) == 0 {
			return false
		}
	}
	return true
}

// trueTypeGlyphs reads a TrueType program's glyphs: present[gid] when
// the glyph has an outline (loca[gid] < loca[gid+1]), and glyph 0.
func trueTypeGlyphs(ttf []byte) ([]bool, bool) {
	if len(ttf) < 12 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint16(ttf[4:]))
	tables := map[string][]byte{}
	for i := 0; i < n; i++ {
		rec := 12 + 16*i
		if rec+16 > len(ttf) {
			return nil, false
		}
		tag := string(ttf[rec : rec+4])
		off, ln := binary.BigEndian.Uint32(ttf[rec+8:]), binary.BigEndian.Uint32(ttf[rec+12:])
		if uint64(off)+uint64(ln) > uint64(len(ttf)) {
			return nil, false
		}
		tables[tag] = ttf[off : off+ln]
	}
	head, maxp, loca := tables["head"], tables["maxp"], tables["loca"]
	if len(head) < 54 || len(maxp) < 6 {
		return nil, false
	}
	num := int(binary.BigEndian.Uint16(maxp[4:]))
	long := binary.BigEndian.Uint16(head[50:]) == 1
	present := make([]bool, num)
	at := func(i int) (uint32, bool) {
		if long {
			if 4*i+4 > len(loca) {
				return 0, false
			}
			return binary.BigEndian.Uint32(loca[4*i:]), true
		}
		if 2*i+2 > len(loca) {
			return 0, false
		}
		return 2 * uint32(binary.BigEndian.Uint16(loca[2*i:])), true
	}
	for g := 0; g < num; g++ {
		a, ok1 := at(g)
		b, ok2 := at(g + 1)
		if !ok1 || !ok2 {
			return nil, false
		}
		present[g] = b > a || g == 0
	}
	return present, true
}

// checkToUnicode: for U levels 6.2.11.7.2-1/2 and for PDF/UA 7.21.7-1/2:
// every font maps its codes to Unicode (a ToUnicode CMap, or a simple
// non-symbolic font with a standard encoding), and no ToUnicode value is
// U+0000, U+FEFF or U+FFFE.
func (r *resourceWalk) checkToUnicode(d types.Dict, sub, obj string) {
	c := r.c
	a, ua := c.u(), c.lvl.PDFUA
	if !a && !ua {
		return
	}
	rep := func(aRule, uaRule, format string, args ...any) {
		if a {
			c.report(aRule, obj, format, args...)
		}
		if ua {
			c.report(uaRule, obj, format, args...)
		}
	}
	if d["ToUnicode"] == nil {
		if !r.unicodeByEncoding(d, sub) {
			rep("6.2.11.7.2-1", "UA 7.21.7-1", "font %s has no ToUnicode map", c.name(d["BaseFont"]))
		}
		return
	}
	sd, _, _ := c.x.DereferenceStreamDict(d["ToUnicode"])
	if sd == nil {
		if c.name(d["ToUnicode"]) != "Identity-H" {
			rep("6.2.11.7.2-1", "UA 7.21.7-1", "font %s has no ToUnicode map", c.name(d["BaseFont"]))
		}
		return
	}
	cm, ok := c.decode(sd, maxStreamBytes, obj+" ToUnicode")
	if !ok {
		return
	}
	if u := badUnicode(cm); u != "" {
		rep("6.2.11.7.2-2", "UA 7.21.7-2", "the ToUnicode map of font %s maps to %s", c.name(d["BaseFont"]), u)
	}
}

// unicodeByEncoding: a simple non-symbolic font with a standard encoding
// (or Differences, whose glyph names the checker takes for Adobe Glyph
// List names) maps to Unicode without a ToUnicode map.
func (r *resourceWalk) unicodeByEncoding(d types.Dict, sub string) bool {
	c := r.c
	if sub != "Type1" && sub != "MMType1" && sub != "TrueType" && sub != "Type3" {
		return false
	}
	if fd, _ := c.x.DereferenceDict(d["FontDescriptor"]); fd != nil {
		if flags, ok := c.integer(fd["Flags"]); ok && flags&4 != 0 {
			return false
		}
	}
	enc, _ := c.x.Dereference(d["Encoding"])
	switch e := enc.(type) {
	case types.Name:
		return e == "WinAnsiEncoding" || e == "MacRomanEncoding" || e == "StandardEncoding" || e == "MacExpertEncoding"
	case types.Dict:
		return true
	}
	return standard14[c.name(d["BaseFont"])] && sub == "Type1"
}

// badUnicode finds a destination value U+0000, U+FEFF or U+FFFE in a
// ToUnicode CMap's bfchar and bfrange sections.
func badUnicode(cm []byte) string {
	lx := lexer{b: cm}
	section := ""
	var args []token
	for n := 0; n < 10_000_000; n++ {
		t := lx.next()
		if t.kind == tEOF {
			return ""
		}
		if t.kind == tOp {
			switch s := string(t.v); s {
			case "beginbfchar", "beginbfrange":
				section = s
			case "endbfchar", "endbfrange":
				section = ""
			}
			args = args[:0]
			continue
		}
		if section == "" {
			continue
		}
		args = append(args, t)
		switch {
		case section == "beginbfchar" && len(args) == 2:
			if u := badUnit(args[1]); u != "" {
				return u
			}
			args = args[:0]
		case section == "beginbfrange" && len(args) >= 3:
			if args[2].kind == tArrOpen {
				if t.kind != tArrClose {
					continue
				}
				for _, x := range args[3:] {
					if u := badUnit(x); u != "" {
						return u
					}
				}
			} else if u := badUnit(args[2]); u != "" {
				return u
			}
			args = args[:0]
		}
	}
	return ""
}

func badUnit(t token) string {
	if t.kind != tHex {
		return ""
	}
	b := t.str()
	for i := 0; i+1 < len(b); i += 2 {
		switch {
		case b[i] == 0 && b[i+1] == 0:
			return "U+0000"
		case bytes.Equal(b[i:i+2], []byte{0xFE, 0xFF}):
			return "U+FEFF"
		case bytes.Equal(b[i:i+2], []byte{0xFF, 0xFE}):
			return "U+FFFE"
		}
	}
	return ""
}
