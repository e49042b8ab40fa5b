package pdfopts

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/invalid"
)

const cii = `<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"><rsm:ExchangedDocument/></rsm:CrossIndustryInvoice>`

func TestRecordOptions(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"fileName":"a","content":""},`, MaxAttachments+1), ",") + "]"
	for _, tc := range []struct {
		name, json string
		field      string // "" = valid
		check      func(t *testing.T, o PrintOptions)
	}{
		{name: "none", json: `{}`, check: func(t *testing.T, o PrintOptions) {
			if o.Record != nil {
				t.Errorf("record %v, want nil", o.Record)
			}
		}},
		{name: "pdfa normalised", json: `{"pdfa":" 2B "}`, check: func(t *testing.T, o PrintOptions) {
			if o.Record.Pdfa != "2b" {
				t.Errorf("pdfa %q", o.Record.Pdfa)
			}
		}},
		{name: "pdfa 1b", json: `{"pdfa":"1b"}`, field: "pdfa"},
		{name: "pdfa number", json: `{"pdfa":2}`, field: "pdfa"},
		{name: "lang", json: `{"lang":"de-DE","pdfua":true}`},
		{name: "lang bad", json: `{"lang":"de_DE"}`, field: "lang"},
		{name: "lang too long", json: `{"lang":"` + strings.Repeat("a-", 40) + `a"}`, field: "lang"},
		{name: "pdfua untagged", json: `{"pdfua":true,"tagged":false}`, field: "tagged"},
		{name: "relationship", json: `{"attachmentRelationship":"source"}`, check: func(t *testing.T, o PrintOptions) {
			if o.Record.AttachmentRelationship != "Source" {
				t.Errorf("relationship %q", o.Record.AttachmentRelationship)
			}
		}},
		{name: "relationship bad", json: `{"attachmentRelationship":"Owner"}`, field: "attachmentRelationship"},
		{name: "attachment", json: `{"pdfa":"3b","attachments":[{"fileName":"data.csv","content":"` + b64([]byte("a,b")) + `"}]}`,
			check: func(t *testing.T, o PrintOptions) {
				a := o.Record.Attachments[0]
				if a.FileName != "data.csv" || a.MimeType != "text/csv" || string(a.Data) != "a,b" || a.Size != 3 {
					t.Errorf("attachment %v", a)
				}
			}},
		{name: "attachment path name", json: `{"attachments":[{"fileName":"../../etc/passwd","content":""}]}`,
			check: func(t *testing.T, o PrintOptions) {
				if n := o.Record.Attachments[0].FileName; strings.Contains(n, "/") {
					t.Errorf("name %q keeps a path", n)
				}
			}},
		{name: "attachment no name", json: `{"attachments":[{"content":""}]}`, field: "attachments[0].fileName"},
		{name: "attachment dot name", json: `{"attachments":[{"fileName":" .. ","content":""}]}`, field: "attachments[0].fileName"},
		{name: "attachment no content", json: `{"attachments":[{"fileName":"a"}]}`, field: "attachments[0].content"},
		{name: "attachment not base64", json: `{"attachments":[{"fileName":"a","content":"%%%"}]}`, field: "attachments[0].content"},
		{name: "attachment bad mime", json: `{"attachments":[{"fileName":"a","content":"","mimeType":"text"}]}`, field: "attachments[0].mimeType"},
		{name: "attachment mime params", json: `{"attachments":[{"fileName":"a","content":"","mimeType":"Text/Plain; charset=utf-8"}]}`,
			check: func(t *testing.T, o PrintOptions) {
				if m := o.Record.Attachments[0].MimeType; m != "text/plain" {
					t.Errorf("mime %q", m)
				}
			}},
		{name: "attachments too many", json: `{"attachments":` + many + `}`, field: "attachments"},
		{name: "attachments twice", json: `{"attachments":[{"fileName":"a","content":""},{"fileName":"A","content":""}]}`, field: "attachments[1].fileName"},
		{name: "attachments not array", json: `{"attachments":{"fileName":"a"}}`, field: "attachments"},
		{name: "attachments on pdfa-2", json: `{"pdfa":"2u","attachments":[{"fileName":"a","content":""}]}`, field: "attachments"},
		{name: "einvoice implies 3b", json: `{"einvoice":{"profile":"en16931","xml":` + jsonString(cii) + `}}`,
			check: func(t *testing.T, o PrintOptions) {
				if o.Record.Pdfa != "3b" || o.Record.Einvoice.Profile != "EN 16931" || len(o.Record.Einvoice.Xml) == 0 {
					t.Errorf("record %v", o.Record)
				}
			}},
		{name: "einvoice keeps 3u", json: `{"pdfa":"3u","einvoice":{"profile":"basic wl"}}`, check: func(t *testing.T, o PrintOptions) {
			if o.Record.Pdfa != "3u" || o.Record.Einvoice.Profile != "BASIC WL" {
				t.Errorf("record %v", o.Record)
			}
		}},
		{name: "einvoice on pdfa-2", json: `{"pdfa":"2b","einvoice":{"profile":"BASIC"}}`, field: "pdfa"},
		{name: "einvoice no profile", json: `{"einvoice":{}}`, field: "einvoice.profile"},
		{name: "einvoice bad profile", json: `{"einvoice":{"profile":"GOLD"}}`, field: "einvoice.profile"},
		{name: "einvoice clashes with attachment", json: `{"einvoice":{"profile":"BASIC"},"attachments":[{"fileName":"factur-x.xml","content":""}]}`, field: "attachments[0].fileName"},
		{name: "einvoice bad xml", json: `{"einvoice":{"profile":"BASIC","xml":"<a>"}}`, field: "einvoice.xml"},
		{name: "sign", json: `{"sign":{"identity":"acme","level":"b-t","reason":"approved","visible":{"page":2,"x":10,"y":20,"width":200,"height":50}}}`,
			check: func(t *testing.T, o PrintOptions) {
				s := o.Record.Sign
				if s.Identity != "acme" || !s.Timestamp || s.Reason != "approved" || s.Visible.Page != 2 || s.Visible.Width != 200 {
					t.Errorf("sign %v", s)
				}
			}},
		{name: "sign no identity", json: `{"sign":{}}`, field: "sign.identity"},
		{name: "sign path identity", json: `{"sign":{"identity":"../acme"}}`, field: "sign.identity"},
		{name: "sign level", json: `{"sign":{"identity":"a","level":"B-LTA"}}`, field: "sign.level"},
		{name: "sign box no width", json: `{"sign":{"identity":"a","visible":{"x":1,"y":1,"height":5}}}`, field: "sign.visible.width"},
		{name: "sign box negative", json: `{"sign":{"identity":"a","visible":{"x":-1,"y":1,"width":5,"height":5}}}`, field: "sign.visible.x"},
		{name: "sign box huge", json: `{"sign":{"identity":"a","visible":{"x":1,"y":1e308,"width":5,"height":5}}}`, field: "sign.visible.y"},
		{name: "sign box page 0", json: `{"sign":{"identity":"a","visible":{"page":0,"x":1,"y":1,"width":5,"height":5}}}`, field: "sign.visible.page"},
		{name: "sign and encryption", json: `{"sign":{"identity":"a"},"encryption":{"ownerPassword":"x"}}`, field: "sign"},
		{name: "pdfa and encryption", json: `{"pdfa":"2b","encryption":{"ownerPassword":"x"}}`, field: "encryption"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseJSON(tc.json, "document", 0)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if tc.check != nil {
					tc.check(t, o.PrintOptions)
				}
				return
			}
			var bad *invalid.Error
			if !errors.As(err, &bad) || bad.Field != tc.field {
				t.Fatalf("error %v, want one naming %s", err, tc.field)
			}
		})
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestCheckEInvoiceXML(t *testing.T) {
	for _, tc := range []struct {
		name, xml string
		ok        bool
	}{
		{"cii", cii, true},
		{"empty", "", false},
		{"not xml", "invoice", false},
		{"unclosed", `<rsm:CrossIndustryInvoice xmlns:rsm="` + ciiNamespace + `">`, false},
		{"doctype", `<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "y">]><rsm:CrossIndustryInvoice xmlns:rsm="` + ciiNamespace + `"/>`, false},
		{"wrong root", `<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"/>`, false},
		{"right name wrong namespace", `<CrossIndustryInvoice/>`, false},
		{"two roots", `<rsm:CrossIndustryInvoice xmlns:rsm="` + ciiNamespace + `"/><x/>`, false},
		{"latin-1", `<?xml version="1.0" encoding="ISO-8859-1"?><rsm:CrossIndustryInvoice xmlns:rsm="` + ciiNamespace + `"/>`, false},
		{"not utf-8", "<a>\xff</a>", false},
		{"deep", `<rsm:CrossIndustryInvoice xmlns:rsm="` + ciiNamespace + `">` + strings.Repeat("<a>", 300) + strings.Repeat("</a>", 300) + `</rsm:CrossIndustryInvoice>`, false},
		{"too big", `<rsm:CrossIndustryInvoice xmlns:rsm="` + ciiNamespace + `">` + strings.Repeat(" ", MaxEInvoiceBytes) + `</rsm:CrossIndustryInvoice>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckEInvoiceXML([]byte(tc.xml))
			var bad *invalid.Error
			switch {
			case tc.ok && err != nil:
				t.Fatalf("error %v", err)
			case !tc.ok && (!errors.As(err, &bad) || bad.Field != "einvoice.xml"):
				t.Fatalf("error %v, want one naming einvoice.xml", err)
			}
		})
	}
}

func TestBatchDocumentKeepsTheBatchsRecord(t *testing.T) {
	var base, own PrintRaw
	if err := Decode([]byte(`{"pdfa":"3b","lang":"de"}`), &base); err != nil {
		t.Fatal(err)
	}
	if err := Decode([]byte(`{"pdfua":true}`), &own); err != nil {
		t.Fatal(err)
	}
	o, err := own.Over(base).Validate(0)
	if err != nil {
		t.Fatal(err)
	}
	if r := o.Record; r.Pdfa != "3b" || !r.Pdfua || r.Lang != "de" {
		t.Fatalf("record %v, want the batch's pdfa and lang with the document's pdfua", r)
	}
}
