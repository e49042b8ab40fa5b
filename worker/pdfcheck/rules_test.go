package pdfcheck

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/worker/pdfedit"
)

var (
	a2b   = Level{PDFA: "2b"}
	a2u   = Level{PDFA: "2u"}
	a3b   = Level{PDFA: "3b"}
	a2bUA = Level{PDFA: "2b", PDFUA: true}
	ua    = Level{PDFUA: true}
)

func name(s string) types.Name         { return types.Name(s) }
func str(s string) types.StringLiteral { return types.StringLiteral(s) }
func integer(i int) types.Integer      { return types.Integer(i) }
func setXMP(old, new string) func(*doc) {
	return func(d *doc) { d.xmp = strings.Replace(d.xmp, old, new, 1) }
}
func setContent(old, new string) func(*doc) {
	return func(d *doc) { d.content = strings.Replace(d.content, old, new, 1) }
}

// ruleCases: each document breaks exactly one rule.
var ruleCases = []struct {
	rule string
	lvl  Level
	mut  func(*doc)
	raw  func([]byte) []byte // edits of the written bytes
}{
	// File structure.
	{rule: "6.1.2-1", lvl: a2b, mut: func(d *doc) { d.header = "%PDF-1.7 \n%\xE2\xE3\xCF\xD3\n" }},
	{rule: "6.1.2-2", lvl: a2b, mut: func(d *doc) { d.header = "%PDF-1.7\n%abcd\n" }},
	{rule: "6.1.3-1", lvl: a2b, mut: func(d *doc) { d.noID = true }},
	{rule: "6.1.3-3", lvl: a2b, mut: func(d *doc) { d.tail = "\n\nGARBAGE" }},
	{rule: "6.1.4-2", lvl: a2b, mut: func(d *doc) { d.xrefKW = "xref \n" }},
	{rule: "6.1.7.1-1", lvl: a2b, mut: func(d *doc) { d.lengths[d.contentNr()] = len(d.content) - 1 }},
	{rule: "6.1.7.1-2", lvl: a2b, mut: func(d *doc) { d.streamK = "stream \n" }},
	{rule: "6.1.7.1-3", lvl: a2b, mut: func(d *doc) { d.cat["Junk"] = d.add(stream(types.Dict{"FDecodeParms": types.Dict{}}, []byte("x"))) }},
	{rule: "6.1.7.2-1", lvl: a2b, mut: func(d *doc) {
		d.cat["Junk"] = d.add(stream(types.Dict{"Filter": name("LZWDecode")}, []byte{0x80, 0x0b, 0x60, 0x50, 0x22, 0x0c, 0x0c, 0x85, 0x01}))
	}},
	// Limits.
	{rule: "6.1.13-3", lvl: a2b, mut: func(d *doc) { d.cat["Junk"] = str(strings.Repeat("x", 32768)) }},
	{rule: "6.1.13-4", lvl: a2b, mut: func(d *doc) { d.cat["Junk"] = name(strings.Repeat("n", 128)) }},
	{rule: "6.1.13-8", lvl: a2b, mut: setContent("/Artifact BMC\n", "/Artifact BMC\n"+strings.Repeat("q ", 29)+strings.Repeat("Q ", 29))},
	{rule: "6.1.13-11", lvl: a2b, mut: func(d *doc) { d.page["CropBox"] = types.Array{integer(0), integer(0), integer(2), integer(792)} }},
	{rule: "6.1.12-1", lvl: a2b, mut: func(d *doc) { d.cat["Perms"] = types.Dict{"Foo": types.Dict{}} }},
	// Colour.
	{rule: "6.2.3-1", lvl: a2b, mut: func(d *doc) {
		p := bytes.Clone(pdfedit.SRGBProfile)
		p[8] = 5
		d.cat["OutputIntents"].(types.Array)[0] = types.Dict{"Type": name("OutputIntent"), "S": name("GTS_PDFA1"),
			"DestOutputProfile": d.add(stream(types.Dict{"N": integer(3)}, p)), "OutputConditionIdentifier": str("sRGB")}
	}},
	{rule: "6.2.3-2", lvl: a2b, mut: func(d *doc) {
		d.cat["OutputIntents"] = append(d.cat["OutputIntents"].(types.Array), types.Dict{"Type": name("OutputIntent"), "S": name("GTS_PDFX"),
			"DestOutputProfile": d.add(stream(types.Dict{"N": integer(3)}, pdfedit.SRGBProfile)), "OutputConditionIdentifier": str("sRGB")})
	}},
	{rule: "6.2.4.3-2", lvl: a2b, mut: func(d *doc) {
		delete(d.cat, "OutputIntents")
		d.content = strings.Replace(d.content, "0.5 g", "", 1)
	}},
	{rule: "6.2.4.3-3", lvl: a2b, mut: setContent("0 0 0 rg", "0 0 0 1 k")},
	{rule: "6.2.4.3-4", lvl: a2b, mut: func(d *doc) {
		delete(d.cat, "OutputIntents")
		d.content = strings.Replace(d.content, "0 0 0 rg", "0 g", 1)
		d.image()["ColorSpace"] = name("DeviceGray")
	}},
	{rule: "6.2.5-1", lvl: a2b, mut: func(d *doc) {
		d.res["ExtGState"] = types.Dict{"GS1": types.Dict{"Type": name("ExtGState"), "TR": name("Identity")}}
	}},
	{rule: "6.2.5-3", lvl: a2b, mut: func(d *doc) { d.res["ExtGState"] = types.Dict{"GS1": types.Dict{"HTP": types.Array{}}} }},
	{rule: "6.2.10-1", lvl: a2b, mut: func(d *doc) { d.res["ExtGState"] = types.Dict{"GS1": types.Dict{"BM": name("Dodgy")}} }},
	{rule: "6.2.6-1", lvl: a2b, mut: setContent("BT", "/Vivid ri BT")},
	{rule: "6.2.8-1", lvl: a2b, mut: func(d *doc) { d.image()["Alternates"] = types.Array{} }},
	{rule: "6.2.8-2", lvl: a2b, mut: func(d *doc) { d.image()["OPI"] = types.Dict{} }},
	{rule: "6.2.8-3", lvl: a2b, mut: func(d *doc) { d.image()["Interpolate"] = types.Boolean(true) }},
	{rule: "6.2.8-4", lvl: a2b, mut: func(d *doc) { d.image()["BitsPerComponent"] = integer(3) }},
	{rule: "6.2.9-1", lvl: a2b, mut: func(d *doc) {
		d.cat["Junk"] = d.add(stream(types.Dict{"Subtype": name("Form"), "PS": d.add(stream(nil, []byte("x")))}, []byte("")))
	}},
	{rule: "6.2.9-2", lvl: a2b, mut: func(d *doc) {
		d.cat["Junk"] = d.add(stream(types.Dict{"Subtype": name("Form"), "Ref": types.Dict{}}, []byte("")))
	}},
	{rule: "6.2.9-3", lvl: a2b, mut: func(d *doc) { d.cat["Junk"] = d.add(stream(types.Dict{"Subtype": name("PS")}, []byte(""))) }},
	// Fonts.
	{rule: "6.2.11.2-1", lvl: a2b, mut: func(d *doc) { d.font["Type"] = name("Fnt") }},
	{rule: "6.2.11.3.2-1", lvl: a2b, mut: func(d *doc) { delete(d.cidFont, "CIDToGIDMap") }},
	{rule: "6.2.11.3.3-1", lvl: a2b, mut: func(d *doc) { d.font["Encoding"] = name("Custom-H") }},
	{rule: "6.2.11.4.1-1", lvl: a2b, mut: func(d *doc) { delete(d.fd, "FontFile2") }},
	{rule: "6.2.11.4.2-2", lvl: a2b, mut: func(d *doc) {
		d.font["BaseFont"] = name("ABCDEF+LiberationSans")
		d.fd["CIDSet"] = d.add(stream(nil, []byte{0xC0}))
	}},
	{rule: "6.2.11.7.2-1", lvl: a2u, mut: func(d *doc) { delete(d.font, "ToUnicode") }},
	{rule: "6.2.11.7.2-2", lvl: a2u, mut: func(d *doc) {
		d.font["ToUnicode"] = d.add(stream(nil, []byte("begincmap 1 beginbfchar <0024> <0000> endbfchar endcmap")))
	}},
	{rule: "6.2.11.8-1", lvl: a2b, mut: setContent("<00240025>", "<00240000>")},
	// Annotations and forms.
	{rule: "6.3.1-1", lvl: a2b, mut: func(d *doc) { d.addAnnot("Movie", "", nil) }},
	{rule: "6.3.2-1", lvl: a2b, mut: func(d *doc) { delete(d.addAnnot("Text", "", nil), "F") }},
	{rule: "6.3.2-2", lvl: a2b, mut: func(d *doc) { d.addAnnot("Text", "", types.Dict{"F": integer(6)}) }},
	{rule: "6.3.3-1", lvl: a2b, mut: func(d *doc) { delete(d.addAnnot("Text", "", nil), "AP") }},
	{rule: "6.3.3-2", lvl: a2b, mut: func(d *doc) {
		a := d.addAnnot("Text", "", nil)
		a["AP"].(types.Dict)["D"] = a["AP"].(types.Dict)["N"]
	}},
	{rule: "6.3.3-4", lvl: a2b, mut: func(d *doc) {
		a := d.addAnnot("Text", "", nil)
		a["AP"] = types.Dict{"N": types.Dict{"On": a["AP"].(types.Dict)["N"]}}
	}},
	{rule: "6.4.1-1", lvl: a2b, mut: func(d *doc) {
		d.addAnnot("Widget", "", types.Dict{"FT": name("Tx"), "T": str("f"), "A": types.Dict{"S": name("URI"), "URI": str("https://example.com")}})
	}},
	{rule: "6.4.1-2", lvl: a2b, mut: func(d *doc) {
		d.cat["AcroForm"] = types.Dict{"Fields": types.Array{d.add(types.Dict{"FT": name("Tx"), "T": str("f"),
			"AA": types.Dict{"K": types.Dict{"S": name("URI"), "URI": str("https://example.com")}}})}}
	}},
	{rule: "6.4.1-3", lvl: a2b, mut: func(d *doc) {
		d.cat["AcroForm"] = types.Dict{"Fields": types.Array{}, "NeedAppearances": types.Boolean(true)}
	}},
	{rule: "6.4.2-1", lvl: a2b, mut: func(d *doc) { d.cat["AcroForm"] = types.Dict{"Fields": types.Array{}, "XFA": types.Array{}} }},
	{rule: "6.4.2-2", lvl: a2b, mut: func(d *doc) { d.cat["NeedsRendering"] = types.Boolean(true) }},
	{rule: "6.4.3-1", lvl: a2b, mut: func(d *doc) {
		sig := types.Dict{"Type": name("Sig"), "Filter": name("Adobe.PPKLite"), "SubFilter": name("adbe.x509.rsa_sha1"),
			"ByteRange": types.Array{integer(0), integer(10), integer(20), integer(30)}, "Contents": types.HexLiteral("0000")}
		d.cat["AcroForm"] = types.Dict{"SigFlags": integer(3), "Fields": types.Array{d.add(types.Dict{"FT": name("Sig"), "T": str("s"), "V": d.add(sig)})}}
	}},
	{rule: "6.4.3-2", lvl: a2b, mut: func(d *doc) {
		sig := types.Dict{"Type": name("Sig"), "Filter": name("Adobe.PPKLite"), "SubFilter": name("ETSI.CAdES.detached"),
			"ByteRange": types.Array{integer(0), integer(1e9), integer(1e9), integer(1e9)}, "Contents": types.HexLiteral("3000")}
		d.cat["AcroForm"] = types.Dict{"SigFlags": integer(3), "Fields": types.Array{d.add(types.Dict{"FT": name("Sig"), "T": str("s"), "V": d.add(sig)})}}
	}, raw: fixByteRange},
	// Actions.
	{rule: "6.5.1-1", lvl: a2b, mut: func(d *doc) { d.cat["OpenAction"] = types.Dict{"S": name("JavaScript"), "JS": str("app.alert(1)")} }},
	{rule: "6.5.1-2", lvl: a2b, mut: func(d *doc) { d.cat["OpenAction"] = types.Dict{"S": name("Named"), "N": name("Print")} }},
	{rule: "6.5.2-1", lvl: a2b, mut: func(d *doc) { d.cat["AA"] = types.Dict{} }},
	{rule: "6.5.2-2", lvl: a2b, mut: func(d *doc) { d.page["AA"] = types.Dict{} }},
	// XMP.
	{rule: "6.6.2.1-1", lvl: a2b, mut: func(d *doc) { delete(d.cat, "Metadata") }},
	{rule: "6.6.2.1-2", lvl: a2b, mut: func(d *doc) { d.xo.header = ` bytes="1234"`; d.xmp = xmpPacket(d.xo) }},
	{rule: "6.6.2.1-3", lvl: a2b, mut: func(d *doc) { d.xo.header = ` encoding="UTF-8"`; d.xmp = xmpPacket(d.xo) }},
	{rule: "6.6.2.1-4", lvl: a2b, mut: setXMP("</dc:title>", "</dc:titel>")},
	{rule: "6.6.2.1-4", lvl: a2b, mut: setXMP("<x:xmpmeta", `<!DOCTYPE x [<!ENTITY a "aaaa">]><x:xmpmeta`)},
	{rule: "6.6.2.1-5", lvl: a2b, mut: setXMP(title, "Quarterly \xE9")},
	{rule: "6.6.2.3.1-1", lvl: a2bUA, mut: func(d *doc) { d.xo.uaExt = false; d.xmp = xmpPacket(d.xo) }},
	{rule: "6.6.2.3.1-1", lvl: a2b, mut: setXMP("</rdf:Description>", `<fx:DocumentType xmlns:fx="urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#">INVOICE</fx:DocumentType></rdf:Description>`)},
	{rule: "6.6.4-1", lvl: a2b, mut: func(d *doc) { d.xo.part = ""; d.xmp = xmpPacket(d.xo) }},
	{rule: "6.6.4-2", lvl: a2b, mut: setXMP("<pdfaid:part>2<", "<pdfaid:part>3<")},
	{rule: "6.6.4-3", lvl: a2b, mut: setXMP("<pdfaid:conformance>B<", "<pdfaid:conformance>U<")},
	{rule: "6.6.4-4", lvl: a2b, mut: setXMP("<pdfaid:part>2</pdfaid:part>", `<id:part xmlns:id="http://www.aiim.org/pdfa/ns/id/">2</id:part>`)},
	// Info ↔ XMP (PDF/A-1's rules, kept).
	{rule: "6.7.3-1", lvl: a2b, mut: func(d *doc) { d.info["CreationDate"] = str("D:20250102030405Z") }},
	{rule: "6.7.3-2", lvl: a2b, mut: func(d *doc) { d.info["Title"] = str("Another title") }},
	{rule: "6.7.3-3", lvl: a2b, mut: setXMP("<rdf:li>"+author+"</rdf:li>", "<rdf:li>"+author+"</rdf:li><rdf:li>Bob</rdf:li>")},
	{rule: "6.7.3-4", lvl: a2b, mut: func(d *doc) { d.info["Subject"] = str("Other") }},
	{rule: "6.7.3-5", lvl: a2b, mut: func(d *doc) { d.info["Keywords"] = str("other") }},
	{rule: "6.7.3-6", lvl: a2b, mut: func(d *doc) { d.info["Creator"] = str("other") }},
	{rule: "6.7.3-7", lvl: a2b, mut: func(d *doc) { d.info["Producer"] = str("pdfcpu v0.16.0") }},
	{rule: "6.7.3-8", lvl: a2b, mut: func(d *doc) { d.info["ModDate"] = str("D:20250102020406Z") }},
	// Embedded files.
	{rule: "6.8-5", lvl: a2b, mut: func(d *doc) { d.addFile() }},
	{rule: "6.8-1", lvl: a3b, mut: func(d *doc) { d.fileStream(d.addFile())["Subtype"] = name("text") }},
	{rule: "6.8-2", lvl: a3b, mut: func(d *doc) { delete(d.addFile(), "UF") }},
	{rule: "6.8-3", lvl: a3b, mut: func(d *doc) { delete(d.addFile(), "AFRelationship") }},
	{rule: "6.8-4", lvl: a3b, mut: func(d *doc) { d.addFile(); delete(d.cat, "AF") }},
	// The rest.
	{rule: "6.9-1", lvl: a2b, mut: func(d *doc) {
		d.cat["OCProperties"] = types.Dict{"OCGs": types.Array{}, "D": types.Dict{"Order": types.Array{}}}
	}},
	{rule: "6.9-4", lvl: a2b, mut: func(d *doc) {
		d.cat["OCProperties"] = types.Dict{"OCGs": types.Array{}, "D": types.Dict{"Name": str("d"), "AS": types.Array{}}}
	}},
	{rule: "6.9-3", lvl: a2b, mut: func(d *doc) {
		ocg := d.add(types.Dict{"Type": name("OCG"), "Name": str("layer")})
		d.cat["OCProperties"] = types.Dict{"OCGs": types.Array{ocg}, "D": types.Dict{"Name": str("d"), "Order": types.Array{}}}
	}},
	{rule: "6.10-1", lvl: a2b, mut: func(d *doc) { d.cat["Names"] = types.Dict{"AlternatePresentations": types.Dict{}} }},
	{rule: "6.10-2", lvl: a2b, mut: func(d *doc) { d.page["PresSteps"] = types.Dict{} }},
	{rule: "6.11-1", lvl: a2b, mut: func(d *doc) { d.cat["Requirements"] = types.Array{} }},

	// PDF/UA-1.
	{rule: "UA 5-1", lvl: ua, mut: func(d *doc) { d.xo.ua = false; d.xmp = xmpPacket(d.xo) }},
	{rule: "UA 5-2", lvl: ua, mut: setXMP("<pdfuaid:part>1<", "<pdfuaid:part>2<")},
	{rule: "UA 5-3", lvl: ua, mut: setXMP("<pdfuaid:part>1</pdfuaid:part>", `<ua:part xmlns:ua="http://www.aiim.org/pdfua/ns/id/">1</ua:part>`)},
	{rule: "UA 6.1-1", lvl: ua, mut: func(d *doc) { d.header = "%PDF-2.0\n%\xE2\xE3\xCF\xD3\n" }},
	{rule: "UA 6.2-1", lvl: ua, mut: func(d *doc) { delete(d.cat, "MarkInfo") }},
	{rule: "UA 7.1-3", lvl: ua, mut: setContent("/Artifact BMC\n", "BT /F1 12 Tf 72 400 Td <0024> Tj ET\n/Artifact BMC\n")},
	{rule: "UA 7.1-3", lvl: ua, mut: setContent("/Figure <</MCID 1>> BDC\nq 10 0 0 10 72 600 cm /Im1 Do Q\nEMC\n", "q 10 0 0 10 72 600 cm /Im1 Do Q\n")},
	{rule: "UA 7.1-4", lvl: ua, mut: func(d *doc) {
		d.cat["MarkInfo"] = types.Dict{"Marked": types.Boolean(true), "Suspects": types.Boolean(true)}
	}},
	{rule: "UA 7.1-5", lvl: ua, mut: func(d *doc) { d.pElem["S"] = name("Para") }},
	{rule: "UA 7.1-6", lvl: ua, mut: func(d *doc) { d.structRoot()["RoleMap"] = types.Dict{"Para": name("Text"), "Text": name("Para")} }},
	{rule: "UA 7.1-7", lvl: ua, mut: func(d *doc) { d.structRoot()["RoleMap"] = types.Dict{"P": name("Span")} }},
	{rule: "UA 7.1-8", lvl: ua, mut: func(d *doc) { delete(d.cat, "Metadata") }},
	{rule: "UA 7.1-9", lvl: ua, mut: setXMP(`<dc:title><rdf:Alt><rdf:li xml:lang="x-default">`+title+`</rdf:li></rdf:Alt></dc:title>`, "")},
	{rule: "UA 7.1-10", lvl: ua, mut: func(d *doc) { delete(d.cat, "ViewerPreferences") }},
	{rule: "UA 7.1-11", lvl: ua, mut: func(d *doc) { delete(d.cat, "StructTreeRoot") }},
	{rule: "UA 7.1-12", lvl: ua, mut: func(d *doc) { delete(d.pElem, "P") }},
	{rule: "UA 7.2-29", lvl: ua, mut: func(d *doc) { d.cat["Lang"] = str("en_US") }},
	{rule: "UA 7.2-29", lvl: ua, mut: func(d *doc) { d.pElem["Lang"] = str("") }},
	{rule: "UA 7.2-33", lvl: ua, mut: func(d *doc) {
		delete(d.cat, "Lang")
		d.content = strings.Replace(d.content, "<00240025> Tj", "", 1)
	}},
	{rule: "UA 7.2-34", lvl: ua, mut: func(d *doc) {
		delete(d.cat, "Lang")
		d.xmp = strings.ReplaceAll(d.xmp, `xml:lang="x-default"`, `xml:lang="en"`)
	}},
	{rule: "UA 7.3-1", lvl: ua, mut: func(d *doc) { delete(d.figElem, "Alt") }},
	{rule: "UA 7.10-1", lvl: ua, mut: func(d *doc) { d.cat["OCProperties"] = types.Dict{"OCGs": types.Array{}, "D": types.Dict{}} }},
	{rule: "UA 7.10-2", lvl: ua, mut: func(d *doc) {
		d.cat["OCProperties"] = types.Dict{"OCGs": types.Array{}, "D": types.Dict{"Name": str("d"), "AS": types.Array{}}}
	}},
	{rule: "UA 7.11-1", lvl: ua, mut: func(d *doc) { d.addFile()["F"] = str("") }},
	{rule: "UA 7.18.1-1", lvl: ua, mut: func(d *doc) { d.addAnnot("Text", "Span", nil) }},
	{rule: "UA 7.18.1-2", lvl: ua, mut: func(d *doc) { delete(d.addAnnot("Text", "Annot", nil), "Contents") }},
	{rule: "UA 7.18.1-3", lvl: ua, mut: func(d *doc) { d.addAnnot("Widget", "Form", types.Dict{"FT": name("Tx"), "T": str("f")}) }},
	{rule: "UA 7.18.3-1", lvl: ua, mut: func(d *doc) { d.addAnnot("Text", "Annot", nil); delete(d.page, "Tabs") }},
	{rule: "UA 7.18.4-1", lvl: ua, mut: func(d *doc) {
		d.addAnnot("Widget", "Span", types.Dict{"FT": name("Tx"), "T": str("f"), "TU": str("name")})
	}},
	{rule: "UA 7.18.5-1", lvl: ua, mut: func(d *doc) {
		d.addAnnot("Link", "", types.Dict{"A": types.Dict{"S": name("URI"), "URI": str("https://example.com")}})
	}},
	{rule: "UA 7.18.5-2", lvl: ua, mut: func(d *doc) {
		delete(d.addAnnot("Link", "Link", types.Dict{"A": types.Dict{"S": name("URI"), "URI": str("https://example.com")}}), "Contents")
	}},
	{rule: "UA 7.21.3.2-1", lvl: ua, mut: func(d *doc) { delete(d.cidFont, "CIDToGIDMap") }},
	{rule: "UA 7.21.3.3-1", lvl: ua, mut: func(d *doc) { d.font["Encoding"] = name("Custom-H") }},
	{rule: "UA 7.21.4.1-1", lvl: ua, mut: func(d *doc) { delete(d.fd, "FontFile2") }},
	{rule: "UA 7.21.4.2-2", lvl: ua, mut: func(d *doc) {
		d.font["BaseFont"] = name("ABCDEF+LiberationSans")
		d.fd["CIDSet"] = d.add(stream(nil, []byte{0xC0}))
	}},
	{rule: "UA 7.21.7-1", lvl: ua, mut: func(d *doc) { delete(d.font, "ToUnicode") }},
	{rule: "UA 7.21.7-2", lvl: ua, mut: func(d *doc) {
		d.font["ToUnicode"] = d.add(stream(nil, []byte("begincmap 1 beginbfrange <0024> <0025> <FFFE> endbfrange endcmap")))
	}},
	{rule: "UA 7.21.8-1", lvl: ua, mut: setContent("<00240025>", "<00000025>")},
}

// TestRules: each crafted document breaks exactly its rule.
func TestRules(t *testing.T) {
	for _, tc := range ruleCases {
		t.Run(tc.rule, func(t *testing.T) {
			d := baseline(t, tc.lvl)
			if tc.mut != nil {
				tc.mut(d)
			}
			pdf := d.write()
			if tc.raw != nil {
				pdf = tc.raw(pdf)
			}
			vs, err := Check(pdf, tc.lvl)
			if err != nil {
				t.Fatal(err)
			}
			if got := rules(vs); len(got) != 1 || got[0] != tc.rule {
				t.Errorf("%+v: got %q, want exactly %s", tc.lvl, got, tc.rule)
				for _, v := range vs {
					t.Log(v)
				}
			}
		})
	}
}

func (d *doc) image() types.Dict {
	ref := d.res["XObject"].(types.Dict)["Im1"].(types.IndirectRef)
	return d.objs[ref.ObjectNumber.Value()].(types.StreamDict).Dict
}

func (d *doc) fileStream(fs types.Dict) types.Dict {
	ref := fs["EF"].(types.Dict)["F"].(types.IndirectRef)
	return d.objs[ref.ObjectNumber.Value()].(types.StreamDict).Dict
}

// fixByteRange makes a signature's ByteRange cover the whole file but its
// Contents, so that only the CMS itself is wrong.
func fixByteRange(pdf []byte) []byte {
	i := bytes.Index(pdf, []byte("/ByteRange"))
	j := bytes.IndexByte(pdf[i:], ']') + i
	c := bytes.Index(pdf, []byte("/Contents<"))
	if c < 0 {
		c = bytes.Index(pdf, []byte("/Contents <"))
	}
	lt := bytes.IndexByte(pdf[c:], '<') + c
	gt := bytes.IndexByte(pdf[lt:], '>') + lt
	width := j - i - len("/ByteRange[")
	br := []byte(strings.Join([]string{"0", itoa(lt), itoa(gt + 1), itoa(len(pdf) - gt - 1)}, " "))
	if len(br) > width {
		return pdf
	}
	out := bytes.Clone(pdf)
	copy(out[i+len("/ByteRange["):j], bytes.Repeat([]byte(" "), width))
	copy(out[i+len("/ByteRange["):], br)
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
