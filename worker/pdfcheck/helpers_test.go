package pdfcheck

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/worker/pdfedit"
)

// doc is a PDF built object by object from pdfcpu's types and written by
// write (classic xref, one revision), so that a test controls every byte.
type doc struct {
	objs    map[int]types.Object
	next    int
	header  string
	tail    string // after %%EOF
	noID    bool
	xrefKW  string // "xref\n"
	streamK string // the stream keyword and its EOL: "stream\n"
	lengths map[int]int

	cat, info, page, font, cidFont, fd, res types.Dict
	catRef, pageRef, docElemRef             types.IndirectRef
	docElem, pElem, figElem                 types.Dict
	parentNums                              types.Array
	content                                 string
	xmp                                     string
	xo                                      xmpOpts
	lvl                                     Level
}

func (d *doc) add(o types.Object) types.IndirectRef {
	d.next++
	d.objs[d.next] = o
	return *types.NewIndirectRef(d.next, 0)
}

func stream(dict types.Dict, data []byte) types.StreamDict {
	if dict == nil {
		dict = types.Dict{}
	}
	return types.StreamDict{Dict: dict, Raw: data}
}

// write serialises the document.
func (d *doc) write() []byte {
	var b bytes.Buffer
	b.WriteString(d.header)
	offsets := map[int]int{}
	d.objs[d.xmpNr()] = stream(types.Dict{"Type": types.Name("Metadata"), "Subtype": types.Name("XML")}, []byte(d.xmp))
	d.objs[d.contentNr()] = stream(nil, []byte(d.content))
	for nr := 1; nr <= d.next; nr++ {
		o, ok := d.objs[nr]
		if !ok || o == nil {
			continue
		}
		offsets[nr] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n", nr)
		if sd, ok := o.(types.StreamDict); ok {
			dict := types.Dict{}
			for k, v := range sd.Dict {
				dict[k] = v
			}
			n := len(sd.Raw)
			if l, ok := d.lengths[nr]; ok {
				n = l
			}
			dict["Length"] = types.Integer(n)
			b.WriteString(dict.PDFString())
			b.WriteString("\n" + d.streamK)
			b.Write(sd.Raw)
			b.WriteString("\nendstream")
		} else {
			b.WriteString(o.PDFString())
		}
		b.WriteString("\nendobj\n")
	}
	xref := b.Len()
	b.WriteString(d.xrefKW)
	fmt.Fprintf(&b, "0 %d\n0000000000 65535 f\r\n", d.next+1)
	for nr := 1; nr <= d.next; nr++ {
		if off, ok := offsets[nr]; ok {
			fmt.Fprintf(&b, "%010d 00000 n\r\n", off)
		} else {
			b.WriteString("0000000000 65535 f\r\n")
		}
	}
	tr := types.Dict{"Size": types.Integer(d.next + 1), "Root": d.catRef}
	if d.info != nil {
		tr["Info"] = *types.NewIndirectRef(d.infoNr(), 0)
	}
	if !d.noID {
		id := types.HexLiteral("0123456789abcdef0123456789abcdef")
		tr["ID"] = types.Array{id, id}
	}
	fmt.Fprintf(&b, "trailer\n%s\nstartxref\n%d\n%%%%EOF%s", tr.PDFString(), xref, d.tail)
	return b.Bytes()
}

// Fixed object numbers of the baseline.
func (d *doc) infoNr() int    { return 2 }
func (d *doc) xmpNr() int     { return 3 }
func (d *doc) contentNr() int { return 4 }

// xmpOpts are the XMP packet's properties.
type xmpOpts struct {
	part, conf string // pdfaid, "" for none
	ua         bool   // pdfuaid:part 1
	uaExt      bool   // the pdfuaid extension schema
	header     string // xpacket begin's attributes
}

const (
	title    = "Quarterly Report"
	author   = "Ada Lovelace"
	subject  = "Numbers"
	keywords = "report, numbers"
	creator  = "docrender"
	producer = "pdfcpu v0.15.0"
)

func xmpPacket(o xmpOpts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<?xpacket begin=\"\uFEFF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"%s?>\n", o.header)
	b.WriteString(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` + "\n")
	b.WriteString(`<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:pdf="http://ns.adobe.com/pdf/1.3/" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/" xmlns:pdfuaid="http://www.aiim.org/pdfua/ns/id/" xmlns:pdfaExtension="http://www.aiim.org/pdfa/ns/extension/" xmlns:pdfaSchema="http://www.aiim.org/pdfa/ns/schema#" xmlns:pdfaProperty="http://www.aiim.org/pdfa/ns/property#">` + "\n")
	fmt.Fprintf(&b, `<dc:title><rdf:Alt><rdf:li xml:lang="x-default">%s</rdf:li></rdf:Alt></dc:title>`+"\n", title)
	fmt.Fprintf(&b, `<dc:creator><rdf:Seq><rdf:li>%s</rdf:li></rdf:Seq></dc:creator>`+"\n", author)
	fmt.Fprintf(&b, `<dc:description><rdf:Alt><rdf:li xml:lang="x-default">%s</rdf:li></rdf:Alt></dc:description>`+"\n", subject)
	fmt.Fprintf(&b, "<pdf:Keywords>%s</pdf:Keywords>\n<pdf:Producer>%s</pdf:Producer>\n<xmp:CreatorTool>%s</xmp:CreatorTool>\n", keywords, producer, creator)
	b.WriteString("<xmp:CreateDate>2025-01-02T02:04:05Z</xmp:CreateDate>\n<xmp:ModifyDate>2025-01-02T03:04:05+01:00</xmp:ModifyDate>\n")
	if o.part != "" {
		fmt.Fprintf(&b, "<pdfaid:part>%s</pdfaid:part>\n<pdfaid:conformance>%s</pdfaid:conformance>\n", o.part, o.conf)
	}
	if o.ua {
		b.WriteString("<pdfuaid:part>1</pdfuaid:part>\n")
	}
	if o.uaExt {
		b.WriteString(`<pdfaExtension:schemas><rdf:Bag><rdf:li rdf:parseType="Resource">
<pdfaSchema:schema>PDF/UA Universal Accessibility Schema</pdfaSchema:schema>
<pdfaSchema:namespaceURI>http://www.aiim.org/pdfua/ns/id/</pdfaSchema:namespaceURI>
<pdfaSchema:prefix>pdfuaid</pdfaSchema:prefix>
<pdfaSchema:property><rdf:Seq><rdf:li rdf:parseType="Resource">
<pdfaProperty:name>part</pdfaProperty:name><pdfaProperty:valueType>Integer</pdfaProperty:valueType>
<pdfaProperty:category>internal</pdfaProperty:category><pdfaProperty:description>Indicates, which part of ISO 14289 standard is followed</pdfaProperty:description>
</rdf:li></rdf:Seq></pdfaSchema:property>
</rdf:li></rdf:Bag></pdfaExtension:schemas>` + "\n")
	}
	b.WriteString("</rdf:Description>\n</rdf:RDF></x:xmpmeta>\n<?xpacket end=\"w\"?>")
	return b.String()
}

var fontProgram []byte

func loadFont(t testing.TB) []byte {
	t.Helper()
	if fontProgram == nil {
		var err error
		for _, p := range []string{"/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
			"/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf"} {
			if fontProgram, err = os.ReadFile(p); err == nil {
				break
			}
		}
		if err != nil {
			t.Skip("Liberation Sans is not installed (scripts/setup installs fonts-liberation2):", err)
		}
	}
	return fontProgram
}

const baseContent = "/P <</MCID 0>> BDC\nBT /F1 12 Tf 0 0 0 rg 72 720 Td <00240025> Tj ET\nEMC\n" +
	"/Figure <</MCID 1>> BDC\nq 10 0 0 10 72 600 cm /Im1 Do Q\nEMC\n" +
	"/Artifact BMC\n0.5 g 72 500 100 1 re f\nEMC\n"

// baseline is a document conformant to lvl: a page of embedded-font text
// and an image, tagged, with XMP, an sRGB output intent and a trailer ID.
func baseline(t testing.TB, lvl Level) *doc {
	ttf := loadFont(t)
	d := &doc{objs: map[int]types.Object{}, header: "%PDF-1.7\n%\xE2\xE3\xCF\xD3\n", tail: "\n",
		xrefKW: "xref\n", streamK: "stream\n", lengths: map[int]int{}, lvl: lvl, content: baseContent}
	d.catRef = d.add(nil) // 1
	d.add(nil)            // 2 Info
	d.add(nil)            // 3 XMP
	d.add(nil)            // 4 content
	d.info = types.Dict{"Title": types.StringLiteral(title), "Author": types.StringLiteral(author),
		"Subject": types.StringLiteral(subject), "Keywords": types.StringLiteral(keywords),
		"Creator": types.StringLiteral(creator), "Producer": types.StringLiteral(producer),
		"CreationDate": types.StringLiteral("D:20250102030405+01'00'"),
		"ModDate":      types.StringLiteral("D:20250102020405Z")}
	d.objs[2] = d.info
	d.xo = xmpOpts{ua: lvl.PDFUA, uaExt: lvl.PDFUA && lvl.PDFA != ""}
	if lvl.PDFA != "" {
		d.xo.part, d.xo.conf = lvl.PDFA[:1], strings.ToUpper(lvl.PDFA[1:])
	}
	d.xmp = xmpPacket(d.xo)

	toUni := "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Adobe-Identity-UCS def " +
		"1 begincodespacerange <0000> <FFFF> endcodespacerange 2 beginbfchar <0024> <0041> <0025> <0042> endbfchar " +
		"endcmap CMapName currentdict /CMap defineresource pop end end"
	d.fd = types.Dict{"Type": types.Name("FontDescriptor"), "FontName": types.Name("LiberationSans"),
		"Flags": types.Integer(32), "FontBBox": types.Array{types.Integer(-544), types.Integer(-303), types.Integer(1302), types.Integer(980)},
		"ItalicAngle": types.Integer(0), "Ascent": types.Integer(905), "Descent": types.Integer(-212),
		"CapHeight": types.Integer(729), "StemV": types.Integer(80),
		"FontFile2": d.add(stream(types.Dict{"Length1": types.Integer(len(ttf))}, ttf))}
	d.cidFont = types.Dict{"Type": types.Name("Font"), "Subtype": types.Name("CIDFontType2"),
		"BaseFont": types.Name("LiberationSans"), "CIDToGIDMap": types.Name("Identity"),
		"CIDSystemInfo":  types.Dict{"Registry": types.StringLiteral("Adobe"), "Ordering": types.StringLiteral("Identity"), "Supplement": types.Integer(0)},
		"FontDescriptor": d.add(d.fd), "DW": types.Integer(600)}
	d.font = types.Dict{"Type": types.Name("Font"), "Subtype": types.Name("Type0"), "BaseFont": types.Name("LiberationSans"),
		"Encoding": types.Name("Identity-H"), "DescendantFonts": types.Array{d.add(d.cidFont)},
		"ToUnicode": d.add(stream(nil, []byte(toUni)))}
	img := stream(types.Dict{"Type": types.Name("XObject"), "Subtype": types.Name("Image"), "Width": types.Integer(1),
		"Height": types.Integer(1), "ColorSpace": types.Name("DeviceRGB"), "BitsPerComponent": types.Integer(8)}, []byte{255, 0, 0})
	d.res = types.Dict{"Font": types.Dict{"F1": d.add(d.font)}, "XObject": types.Dict{"Im1": d.add(img)}}
	pagesRef := d.add(nil)
	d.page = types.Dict{"Type": types.Name("Page"), "Parent": pagesRef, "MediaBox": types.Array{types.Integer(0), types.Integer(0), types.Integer(612), types.Integer(792)},
		"Resources": d.res, "Contents": *types.NewIndirectRef(d.contentNr(), 0), "StructParents": types.Integer(0), "Tabs": types.Name("S")}
	d.pageRef = d.add(d.page)
	d.objs[pagesRef.ObjectNumber.Value()] = types.Dict{"Type": types.Name("Pages"), "Kids": types.Array{d.pageRef}, "Count": types.Integer(1)}

	rootRef := d.add(nil)
	d.docElem = types.Dict{"Type": types.Name("StructElem"), "S": types.Name("Document"), "P": rootRef}
	d.docElemRef = d.add(d.docElem)
	d.pElem = types.Dict{"Type": types.Name("StructElem"), "S": types.Name("P"), "P": d.docElemRef, "Pg": d.pageRef, "K": types.Integer(0)}
	d.figElem = types.Dict{"Type": types.Name("StructElem"), "S": types.Name("Figure"), "P": d.docElemRef, "Pg": d.pageRef, "K": types.Integer(1),
		"Alt": types.StringLiteral("a red square")}
	pRef, figRef := d.add(d.pElem), d.add(d.figElem)
	d.docElem["K"] = types.Array{pRef, figRef}
	d.parentNums = types.Array{types.Integer(0), types.Array{pRef, figRef}}
	parentTree := types.Dict{"Nums": d.parentNums}
	root := types.Dict{"Type": types.Name("StructTreeRoot"), "K": d.docElemRef, "ParentTree": parentTree, "ParentTreeNextKey": types.Integer(1)}
	d.objs[rootRef.ObjectNumber.Value()] = root

	profile := d.add(stream(types.Dict{"N": types.Integer(3)}, pdfedit.SRGBProfile))
	intent := types.Dict{"Type": types.Name("OutputIntent"), "S": types.Name("GTS_PDFA1"), "DestOutputProfile": profile,
		"OutputConditionIdentifier": types.StringLiteral("sRGB IEC61966-2.1"), "RegistryName": types.StringLiteral("http://www.color.org")}
	d.cat = types.Dict{"Type": types.Name("Catalog"), "Pages": pagesRef, "Metadata": *types.NewIndirectRef(d.xmpNr(), 0),
		"OutputIntents": types.Array{d.add(intent)}, "MarkInfo": types.Dict{"Marked": types.Boolean(true)},
		"Lang": types.StringLiteral("en-US"), "ViewerPreferences": types.Dict{"DisplayDocTitle": types.Boolean(true)},
		"StructTreeRoot": rootRef}
	d.objs[1] = d.cat
	return d
}

// structRoot is the baseline's StructTreeRoot.
func (d *doc) structRoot() types.Dict {
	return d.objs[d.cat["StructTreeRoot"].(types.IndirectRef).ObjectNumber.Value()].(types.Dict)
}

// addAnnot adds an annotation to the page: printable, with an appearance
// stream, tagged in a structure element of type tag (none if "") under
// the Document element.
func (d *doc) addAnnot(sub, tag string, extra types.Dict) types.Dict {
	ap := d.add(stream(types.Dict{"Type": types.Name("XObject"), "Subtype": types.Name("Form"),
		"BBox": types.Array{types.Integer(0), types.Integer(0), types.Integer(10), types.Integer(10)}}, []byte("0 0 10 10 re S")))
	a := types.Dict{"Type": types.Name("Annot"), "Subtype": types.Name(sub), "F": types.Integer(4),
		"Rect": types.Array{types.Integer(72), types.Integer(72), types.Integer(82), types.Integer(82)},
		"AP":   types.Dict{"N": ap}, "Contents": types.StringLiteral("a note"), "P": d.pageRef}
	for k, v := range extra {
		a[k] = v
	}
	ref := d.add(a)
	annots, _ := d.page["Annots"].(types.Array)
	d.page["Annots"] = append(annots, ref)
	if tag != "" {
		key := 1 + len(d.parentNums)/2
		a["StructParent"] = types.Integer(key)
		e := types.Dict{"Type": types.Name("StructElem"), "S": types.Name(tag), "P": d.docElemRef, "Pg": d.pageRef,
			"K": types.Dict{"Type": types.Name("OBJR"), "Obj": ref, "Pg": d.pageRef}}
		eRef := d.add(e)
		d.docElem["K"] = append(d.docElem["K"].(types.Array), eRef)
		d.parentNums = append(d.parentNums, types.Integer(key), eRef)
		d.structRoot()["ParentTree"].(types.Dict)["Nums"] = d.parentNums
		d.structRoot()["ParentTreeNextKey"] = types.Integer(key + 1)
	}
	return a
}

// addFile embeds a file as PDF/A-3 wants it: F, UF, MIME type,
// AFRelationship, listed in the catalog's AF.
func (d *doc) addFile() types.Dict {
	ef := d.add(stream(types.Dict{"Type": types.Name("EmbeddedFile"), "Subtype": types.Name("text/xml"),
		"Params": types.Dict{"Size": types.Integer(7)}}, []byte("<a/>\n\n\n")))
	fs := types.Dict{"Type": types.Name("Filespec"), "F": types.StringLiteral("data.xml"), "UF": types.StringLiteral("data.xml"),
		"EF": types.Dict{"F": ef, "UF": ef}, "AFRelationship": types.Name("Data"), "Desc": types.StringLiteral("data")}
	ref := d.add(fs)
	d.cat["AF"] = types.Array{ref}
	d.cat["Names"] = types.Dict{"EmbeddedFiles": types.Dict{"Names": types.Array{types.StringLiteral("data.xml"), ref}}}
	return fs
}

// rules is the sorted, de-duplicated rule IDs of vs.
func rules(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, v.Rule) {
			out = append(out, v.Rule)
		}
	}
	slices.Sort(out)
	return out
}
