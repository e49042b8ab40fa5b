package pdfedit_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfcheck"
	"github.com/docrender/docrender/worker/pdfedit"
)

// TestFinishMakesEachLevel: Chromium's own PDF, finished for every PDF/A
// level with and without PDF/UA, an e-invoice and an attachment, passes
// the checker with no violation, and says in its XMP what it is.
func TestFinishMakesEachLevel(t *testing.T) {
	in, err := os.ReadFile("testdata/chromium.pdf")
	if err != nil {
		t.Fatal(err)
	}
	info := &jobspb.DocInfo{Title: "Invoice", Author: "ACME", Keywords: []string{"a", "b"}}
	for _, tc := range []struct {
		name string
		rec  *jobspb.Record
	}{
		{"2b", &jobspb.Record{Pdfa: "2b"}},
		{"2u", &jobspb.Record{Pdfa: "2u"}},
		{"3b", &jobspb.Record{Pdfa: "3b"}},
		{"3u", &jobspb.Record{Pdfa: "3u"}},
		{"ua", &jobspb.Record{Pdfua: true, Lang: "de"}},
		{"2u+ua", &jobspb.Record{Pdfa: "2u", Pdfua: true}},
		{"3b einvoice", &jobspb.Record{Pdfa: "3b", Einvoice: &jobspb.EInvoice{Profile: "BASIC WL", Xml: []byte("<x/>")}}},
		{"3u+ua attachments", &jobspb.Record{Pdfa: "3u", Pdfua: true, AttachmentRelationship: "Source",
			Attachments: []*jobspb.Attachment{{FileName: "data.csv", MimeType: "text/csv", Data: []byte("a,b")}, {FileName: "Łódź.txt", MimeType: "text/plain", Description: "ünïcode"}},
			Einvoice:    &jobspb.EInvoice{Profile: "XRECHNUNG", Xml: []byte("<x/>")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := pdfedit.Finish(context.Background(), in, pdfedit.RecordSpec{Info: info, Record: tc.rec})
			if err != nil {
				t.Fatal(err)
			}
			vs, err := pdfcheck.Check(out, pdfcheck.Level{PDFA: tc.rec.Pdfa, PDFUA: tc.rec.Pdfua})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				t.Errorf("violation %s", v)
			}
			x := string(out)
			if tc.rec.Pdfa != "" && !strings.Contains(x, "<pdfaid:part>"+tc.rec.Pdfa[:1]+"</pdfaid:part>") {
				t.Error("no pdfaid:part in the XMP")
			}
			if tc.rec.Pdfua != strings.Contains(x, "<pdfuaid:part>1</pdfuaid:part>") {
				t.Errorf("pdfuaid claim %v, want %v", !tc.rec.Pdfua, tc.rec.Pdfua)
			}
			if e := tc.rec.Einvoice; e != nil && !strings.Contains(x, "<fx:ConformanceLevel>"+e.Profile+"</fx:ConformanceLevel>") {
				t.Error("no fx:ConformanceLevel in the XMP")
			}
		})
	}
}

// TestFinishCleansInfoForXMP: a title with spaces around and control
// characters (as a page's <title> may have) is the same in Info and XMP.
func TestFinishCleansInfoForXMP(t *testing.T) {
	in, err := os.ReadFile("testdata/chromium.pdf")
	if err != nil {
		t.Fatal(err)
	}
	// SetInfo writes the value as given (Finish's own metadata is trimmed).
	var withTabs bytes.Buffer
	if err := pdfedit.SetInfo(context.Background(), bytes.NewReader(in), &withTabs, &jobspb.DocInfo{Author: "A\u0007B"}); err != nil {
		t.Fatal(err)
	}
	out, err := pdfedit.Finish(context.Background(), withTabs.Bytes(), pdfedit.RecordSpec{Record: &jobspb.Record{Pdfa: "2b"}})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := pdfcheck.Check(out, pdfcheck.Level{PDFA: "2b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("violation %s", v)
	}
}

// TestFinishNeedsATitleForPDFUA: a PDF/UA without a title is the client's
// to fix, named.
func TestFinishNeedsATitleForPDFUA(t *testing.T) {
	_, err := pdfedit.Finish(context.Background(), untitled, pdfedit.RecordSpec{Info: &jobspb.DocInfo{Title: " "}, Record: &jobspb.Record{Pdfua: true}})
	var opt *pdfedit.OptionError
	if !errors.As(err, &opt) || opt.Field != "metadata.title" {
		t.Fatalf("error %v, want one naming metadata.title", err)
	}
}

// TestFinishWithNothingToDo returns the input itself.
func TestFinishWithNothingToDo(t *testing.T) {
	in := []byte("%PDF-1.4 not even read")
	out, err := pdfedit.Finish(context.Background(), in, pdfedit.RecordSpec{})
	if err != nil || &out[0] != &in[0] {
		t.Fatalf("Finish with nothing to do: %v", err)
	}
}

// untitled is a one-page PDF without an Info dictionary.
var untitled = []byte("%PDF-1.4\n" +
	"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n" +
	"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n" +
	"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\n" +
	"trailer\n<< /Size 4 /Root 1 0 R >>\n%%EOF\n")
