package e2e

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Batch documents carrying PDFs (DESIGN §11, issue 25 item 1): `pdf:
// {content, fileName?, tool?}` instead of htmlContent: the output of a
// PDF tool (flatten, optimize, pages, metadata) or the PDF as sent, then
// the batch's watermark and steps, on a worker of the pdf kind beside the
// batch's rendered documents.

func pdfDoc(fileName string, data []byte, tool map[string]any) map[string]any {
	p := map[string]any{"content": base64.StdEncoding.EncodeToString(data)}
	if tool != nil {
		p["tool"] = tool
	}
	d := map[string]any{"pdf": p}
	if fileName != "" {
		d["fileName"] = fileName
	}
	return d
}

// TestBatchPDF: a page, a form flattened, a PDF's pages reordered, one
// with its metadata rewritten and one as sent, in one batch: a ZIP of
// five PDFs, each what its tool made, each with the batch's watermark and
// metadata steps; five conversions.
func TestBatchPDF(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	three := c.generatePDF(threePages, nil)
	used := c.usage()
	named := pdfDoc("", three, nil)
	named["pdf"].(map[string]any)["fileName"] = "scan.pdf"
	ds := []map[string]any{
		{"fileName": "page", "htmlContent": docHTML("MARK-0")},
		pdfDoc("form", formPDF(), map[string]any{"op": "flatten"}),
		pdfDoc("picked", three, map[string]any{"op": "pages", "select": "3,1"}),
		pdfDoc("titled", three, map[string]any{"op": "metadata", "metadata": map[string]any{"title": "From The Tool"}}),
		// Unnamed: named after its file.
		named,
	}
	opts := map[string]any{"stages": []map[string]any{{"op": "watermark", "text": "BATCHMARK", "rotation": 0}, {"op": "metadata", "author": "Batch Author"}}}
	resp := c.batch(map[string]any{"documents": ds, "options": opts})
	mustStatus(t, resp, http.StatusOK)
	names, entries := unzip(t, readAll(t, resp))
	if strings.Join(names, " ") != "page.pdf form.pdf picked.pdf titled.pdf scan.pdf" {
		t.Fatalf("ZIP entries %q", names)
	}
	want := map[string][]string{
		"page.pdf":   {"MARK-0"},
		"form.pdf":   {"FORMPAGE"},
		"picked.pdf": {"PAGETHREE", "PAGEONE"},
		"titled.pdf": {"PAGEONE", "PAGETWO", "PAGETHREE"},
		"scan.pdf":   {"PAGEONE", "PAGETWO", "PAGETHREE"},
	}
	for name, tokens := range want {
		pdf := entries[name]
		checkPDF(t, pdf, tokens...)
		if !strings.Contains(pageText(t, pdf, 1), "BATCHMARK") {
			t.Errorf("%s: no watermark on page 1: %q", name, pageText(t, pdf, 1))
		}
		if author := pdfInfoFields(t, pdf, "")["Author"]; author != "Batch Author" {
			t.Errorf("%s: author %q", name, author)
		}
	}
	if !strings.Contains(text(t, entries["form.pdf"]), "FILLEDVALUE") {
		t.Error("form.pdf: the field's value is not in the page text")
	}
	if doc := run(t, "qpdf", "--qdf", "--object-streams=disable", writeTemp(t, entries["form.pdf"], ".pdf"), "-"); strings.Contains(doc, "/AcroForm") {
		t.Error("form.pdf: the form is still there")
	}
	// As sent: the document keeps what a rewrite of its pages would drop.
	if pdfInfoFields(t, three, "")["Tagged"] != "yes" || pdfInfoFields(t, entries["scan.pdf"], "")["Tagged"] != "yes" {
		t.Errorf("scan.pdf lost its structure tree: %v", pdfInfoFields(t, entries["scan.pdf"], ""))
	}
	if title := pdfInfoFields(t, entries["titled.pdf"], "")["Title"]; title != "From The Tool" {
		t.Errorf("titled.pdf: title %q", title)
	}
	if n := c.usage(); n != used+5 {
		t.Errorf("conversions used %d, want %d", n, used+5)
	}
}

// TestBatchPDFRefused: what the gateway can tell of a batch's PDF is a 400
// naming the field, nothing counted; a PDF only the worker finds corrupt
// fails the batch naming the document.
func TestBatchPDFRefused(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	three := c.generatePDF(threePages, nil)
	used := c.usage()
	page := map[string]any{"fileName": "page", "htmlContent": docHTML("MARK-0")}
	for _, tc := range []struct {
		name  string
		doc   map[string]any
		field string
	}{
		{"not a PDF", pdfDoc("a", []byte("hello, world"), nil), "documents[1].pdf.content"},
		{"not base64", map[string]any{"fileName": "a", "pdf": map[string]any{"content": "not base64!"}}, "documents[1].pdf.content"},
		{"no content", map[string]any{"fileName": "a", "pdf": map[string]any{}}, "documents[1].pdf.content"},
		{"no name", pdfDoc("", three, nil), "documents[1].fileName"},
		{"split makes several", pdfDoc("a", three, map[string]any{"op": "split", "every": 1}), "documents[1].pdf.tool.op"},
		{"text makes no PDF", pdfDoc("a", three, map[string]any{"op": "text"}), "documents[1].pdf.tool.op"},
		{"no op", pdfDoc("a", three, map[string]any{"select": "1"}), "documents[1].pdf.tool.op"},
		{"a tool's bad option", pdfDoc("a", three, map[string]any{"op": "optimize", "imageQuality": 0}), "documents[1].pdf.tool.imageQuality"},
		{"an unknown option", pdfDoc("a", three, map[string]any{"op": "flatten", "dpi": 72}), "documents[1].pdf.tool.dpi"},
		{"the batch's option", pdfDoc("a", three, map[string]any{"op": "flatten", "host": true}), "documents[1].pdf.tool.host"},
		{"beside htmlContent", map[string]any{"fileName": "a", "htmlContent": "<p>x", "pdf": map[string]any{"content": "JVBERi0="}}, "documents[1].pdf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := expectError(t, c.batch(map[string]any{"documents": []map[string]any{page, tc.doc}}), http.StatusBadRequest, "BAD_REQUEST")
			if e.Field != tc.field || !strings.Contains(e.Message, tc.field) {
				t.Errorf("field %q, message %q; want %s named", e.Field, e.Message, tc.field)
			}
		})
	}
	if n := c.usage(); n != used {
		t.Errorf("refused batches counted: %d, want %d", n, used)
	}

	// Corrupt past the header, and a page the PDF does not have: the
	// batch fails naming the document, the service serves the next one.
	for _, tc := range []struct {
		doc  map[string]any
		want string
	}{
		{pdfDoc("broken", three[:len(three)/3], map[string]any{"op": "flatten"}), "documents[1]"},
		{pdfDoc("short", three, map[string]any{"op": "pages", "select": "7"}), "pdf.tool.select"},
	} {
		id := c.startStream(map[string]any{"documents": []map[string]any{page, tc.doc}})
		p, _ := c.waitBatch(id, 2, 2*time.Minute)
		if p.Status != "error" || !strings.Contains(p.Message, "documents[1]") || !strings.Contains(p.Message, tc.want) {
			t.Errorf("progress %+v, want an error naming documents[1] and %s", p, tc.want)
		}
	}
	resp := c.batch(map[string]any{"documents": []map[string]any{pdfDoc("ok", three, map[string]any{"op": "pages", "select": "2"})}})
	mustStatus(t, resp, http.StatusOK)
	if _, entries := unzip(t, readAll(t, resp)); len(entries) != 1 {
		t.Errorf("the next batch: %d entries", len(entries))
	}
}
