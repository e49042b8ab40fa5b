package pdfedit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// producer is what pdfcpu writes as Info's Producer; the XMP says the same.
func producer() string { return "pdfcpu " + model.VersionStr }

// setXMP puts the document's XMP metadata packet in the catalog: the Info
// dictionary's entries as XMP says them (Info and XMP agree: PDF/A-1
// 6.7.3, which we keep for -2 and -3 too), the PDF/A and PDF/UA claims,
// the Factur-X fields, and the extension schemas that describe every
// property PDF/A does not predefine (6.6.2.3.1). Uncompressed, without the
// packet's bytes and encoding attributes (6.6.2.1).
func setXMP(pc *model.Context, rec *jobspb.Record, now time.Time) error {
	root, err := pc.Catalog()
	if err != nil {
		return &BadInputError{Reason: "no document catalog", cause: err}
	}
	packet := buildXMP(xmpFields{
		Title: infoString(pc, "Title"), Author: infoString(pc, "Author"), Subject: infoString(pc, "Subject"),
		Keywords: infoString(pc, "Keywords"), Creator: infoString(pc, "Creator"), Producer: producer(), Date: now,
		PDFA: rec.GetPdfa(), PDFUA: rec.GetPdfua(), EInvoice: rec.GetEinvoice().GetProfile(),
	})
	sd, err := pc.NewStreamDictForBuf(packet)
	if err != nil {
		return err
	}
	sd.Dict = types.NewDict()
	sd.FilterPipeline = nil
	sd.InsertName("Type", "Metadata")
	sd.InsertName("Subtype", "XML")
	if err := sd.Encode(); err != nil {
		return fmt.Errorf("pdfedit: XMP: %w", err)
	}
	ref, err := pc.IndRefForNewObject(*sd)
	if err != nil {
		return err
	}
	root["Metadata"] = *ref
	return nil
}

// xmpFields is what one XMP packet says.
type xmpFields struct {
	Title, Author, Subject, Keywords, Creator, Producer string
	Date                                                time.Time
	// PDFA is "2b" … "3u" or ""; EInvoice the Factur-X profile or "".
	PDFA     string
	PDFUA    bool
	EInvoice string
}

// The extension schemas PDF/A needs for pdfuaid and Factur-X's fx: their
// text is the one the standards publish (ISO 14289-1 Annex; Factur-X 1.0
// "Factur-X_extension_schema.xmp").
const (
	pdfuaSchema = `<rdf:li rdf:parseType="Resource"><pdfaSchema:schema>PDF/UA Universal Accessibility Schema</pdfaSchema:schema><pdfaSchema:namespaceURI>http://www.aiim.org/pdfua/ns/id/</pdfaSchema:namespaceURI><pdfaSchema:prefix>pdfuaid</pdfaSchema:prefix><pdfaSchema:property><rdf:Seq><rdf:li rdf:parseType="Resource"><pdfaProperty:name>part</pdfaProperty:name><pdfaProperty:valueType>Integer</pdfaProperty:valueType><pdfaProperty:category>internal</pdfaProperty:category><pdfaProperty:description>Indicates, which part of ISO 14289 standard is followed</pdfaProperty:description></rdf:li></rdf:Seq></pdfaSchema:property></rdf:li>`
	fxSchema    = `<rdf:li rdf:parseType="Resource"><pdfaSchema:schema>Factur-X PDFA Extension Schema</pdfaSchema:schema><pdfaSchema:namespaceURI>urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#</pdfaSchema:namespaceURI><pdfaSchema:prefix>fx</pdfaSchema:prefix><pdfaSchema:property><rdf:Seq>` +
		`<rdf:li rdf:parseType="Resource"><pdfaProperty:name>DocumentFileName</pdfaProperty:name><pdfaProperty:valueType>Text</pdfaProperty:valueType><pdfaProperty:category>external</pdfaProperty:category><pdfaProperty:description>The name of the embedded XML document</pdfaProperty:description></rdf:li>` +
		`<rdf:li rdf:parseType="Resource"><pdfaProperty:name>DocumentType</pdfaProperty:name><pdfaProperty:valueType>Text</pdfaProperty:valueType><pdfaProperty:category>external</pdfaProperty:category><pdfaProperty:description>The type of the hybrid document in capital letters, e.g. INVOICE or ORDER</pdfaProperty:description></rdf:li>` +
		`<rdf:li rdf:parseType="Resource"><pdfaProperty:name>Version</pdfaProperty:name><pdfaProperty:valueType>Text</pdfaProperty:valueType><pdfaProperty:category>external</pdfaProperty:category><pdfaProperty:description>The actual version of the standard applying to the embedded XML document</pdfaProperty:description></rdf:li>` +
		`<rdf:li rdf:parseType="Resource"><pdfaProperty:name>ConformanceLevel</pdfaProperty:name><pdfaProperty:valueType>Text</pdfaProperty:valueType><pdfaProperty:category>external</pdfaProperty:category><pdfaProperty:description>The conformance level of the embedded XML document</pdfaProperty:description></rdf:li>` +
		`</rdf:Seq></pdfaSchema:property></rdf:li>`
)

// buildXMP writes the packet for f.
func buildXMP(f xmpFields) []byte {
	var b bytes.Buffer
	esc := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	date := f.Date.Format("2006-01-02T15:04:05-07:00")
	b.WriteString("<?xpacket begin=\"\uFEFF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n")
	b.WriteString(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` + "\n")
	b.WriteString(`<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:pdf="http://ns.adobe.com/pdf/1.3/" xmlns:xmp="http://ns.adobe.com/xap/1.0/">`)
	b.WriteString(`<dc:format>application/pdf</dc:format>`)
	if f.Title != "" {
		b.WriteString(`<dc:title><rdf:Alt><rdf:li xml:lang="x-default">` + esc(f.Title) + `</rdf:li></rdf:Alt></dc:title>`)
	}
	if f.Author != "" {
		b.WriteString(`<dc:creator><rdf:Seq><rdf:li>` + esc(f.Author) + `</rdf:li></rdf:Seq></dc:creator>`)
	}
	if f.Subject != "" {
		b.WriteString(`<dc:description><rdf:Alt><rdf:li xml:lang="x-default">` + esc(f.Subject) + `</rdf:li></rdf:Alt></dc:description>`)
	}
	if f.Keywords != "" {
		b.WriteString(`<pdf:Keywords>` + esc(f.Keywords) + `</pdf:Keywords>`)
	}
	b.WriteString(`<pdf:Producer>` + esc(f.Producer) + `</pdf:Producer>`)
	if f.Creator != "" {
		b.WriteString(`<xmp:CreatorTool>` + esc(f.Creator) + `</xmp:CreatorTool>`)
	}
	b.WriteString(`<xmp:CreateDate>` + date + `</xmp:CreateDate><xmp:ModifyDate>` + date + `</xmp:ModifyDate><xmp:MetadataDate>` + date + `</xmp:MetadataDate>`)
	b.WriteString("</rdf:Description>\n")
	if f.PDFA != "" {
		b.WriteString(`<rdf:Description rdf:about="" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/">`)
		fmt.Fprintf(&b, `<pdfaid:part>%s</pdfaid:part><pdfaid:conformance>%s</pdfaid:conformance>`, f.PDFA[:1], strings.ToUpper(f.PDFA[1:]))
		b.WriteString("</rdf:Description>\n")
	}
	if f.PDFUA {
		b.WriteString(`<rdf:Description rdf:about="" xmlns:pdfuaid="http://www.aiim.org/pdfua/ns/id/"><pdfuaid:part>1</pdfuaid:part></rdf:Description>` + "\n")
	}
	if f.EInvoice != "" {
		b.WriteString(`<rdf:Description rdf:about="" xmlns:fx="urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#">`)
		fmt.Fprintf(&b, `<fx:DocumentType>INVOICE</fx:DocumentType><fx:DocumentFileName>%s</fx:DocumentFileName><fx:Version>1.0</fx:Version><fx:ConformanceLevel>%s</fx:ConformanceLevel>`,
			pdfopts.EInvoiceFileName(f.EInvoice), esc(f.EInvoice))
		b.WriteString("</rdf:Description>\n")
	}
	if f.PDFA != "" && (f.PDFUA || f.EInvoice != "") {
		b.WriteString(`<rdf:Description rdf:about="" xmlns:pdfaExtension="http://www.aiim.org/pdfa/ns/extension/" xmlns:pdfaSchema="http://www.aiim.org/pdfa/ns/schema#" xmlns:pdfaProperty="http://www.aiim.org/pdfa/ns/property#"><pdfaExtension:schemas><rdf:Bag>`)
		if f.PDFUA {
			b.WriteString(pdfuaSchema)
		}
		if f.EInvoice != "" {
			b.WriteString(fxSchema)
		}
		b.WriteString("</rdf:Bag></pdfaExtension:schemas></rdf:Description>\n")
	}
	b.WriteString("</rdf:RDF></x:xmpmeta>\n")
	// Room for in-place edits by other tools, as XMP writers leave.
	b.WriteString(strings.Repeat(strings.Repeat(" ", 99)+"\n", 20))
	b.WriteString(`<?xpacket end="w"?>`)
	return b.Bytes()
}
