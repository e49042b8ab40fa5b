package e2e

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/testenv/rawpdf"
	"github.com/docrender/docrender/worker/pdfcheck"
)

// recordPage is a page a PDF/UA can be made of: a title, a language, an
// image with its alternative text, a link.
const recordPage = `<!doctype html><html lang="en"><head><title>Invoice 2026-001</title></head><body>
<h1>Invoice 2026-001</h1><p>Total <b>1,234.00 EUR</b>. <a href="https://example.com/pay">Pay online</a>.</p>
<img alt="A red square" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC" width="20" height="20">
</body></html>`

// ciiInvoice is a minimal Factur-X (CII) invoice.
const ciiInvoice = `<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100" xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100">
<rsm:ExchangedDocument><ram:ID>2026-001</ram:ID></rsm:ExchangedDocument></rsm:CrossIndustryInvoice>`

// meta is pdfinfo -meta: the XMP packet as poppler reads it.
func meta(t testing.TB, pdf []byte) string {
	t.Helper()
	return run(t, "pdfinfo", "-meta", writeTemp(t, pdf, ".pdf"))
}

// checkRecordPDF checks what an independent reader says of a PDF/A and/or
// PDF/UA: the XMP claims, Info and XMP agreeing, every font embedded (and
// mapped to Unicode for U and UA), qpdf's structure check, an output
// intent.
func checkRecordPDF(t testing.TB, pdf []byte, pdfa string, pdfua bool) {
	t.Helper()
	x := meta(t, pdf)
	if pdfa != "" {
		part, conf := pdfa[:1], strings.ToUpper(pdfa[1:])
		if !strings.Contains(x, "<pdfaid:part>"+part+"</pdfaid:part>") || !strings.Contains(x, "<pdfaid:conformance>"+conf+"</pdfaid:conformance>") {
			t.Fatalf("XMP claims no PDF/A-%s:\n%s", pdfa, x)
		}
		if !bytes.Contains(pdf, []byte("/GTS_PDFA1")) {
			t.Error("no PDF/A output intent")
		}
	}
	if pdfua && !strings.Contains(x, "<pdfuaid:part>1</pdfuaid:part>") {
		t.Fatalf("XMP claims no PDF/UA-1:\n%s", x)
	}
	p := writeTemp(t, pdf, ".pdf")
	inf := run(t, "pdfinfo", p)
	for _, want := range []string{"Producer:", "ModDate:"} {
		if !strings.Contains(inf, want) {
			t.Errorf("pdfinfo has no %s", want)
		}
	}
	producer := field(inf, "Producer:")
	if !strings.Contains(x, "<pdf:Producer>"+producer+"</pdf:Producer>") {
		t.Errorf("Info Producer %q, XMP:\n%s", producer, x)
	}
	if title := field(inf, "Title:"); title != "" && !strings.Contains(x, ">"+title+"</rdf:li>") {
		t.Errorf("Info Title %q not in XMP", title)
	}
	if pdfua && !strings.Contains(inf, "Tagged:          yes") {
		t.Error("a PDF/UA that is not tagged")
	}
	unicode := pdfua || strings.HasSuffix(pdfa, "u")
	fonts := run(t, "pdffonts", p)
	for _, line := range strings.Split(fonts, "\n")[2:] {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// name type [type] encoding emb sub uni object ID: read from the right.
		emb, uni := f[len(f)-5], f[len(f)-3]
		if emb != "yes" || (unicode && uni != "yes") {
			t.Errorf("font not embedded or not mapped to Unicode: %s", line)
		}
	}
	run(t, "qpdf", "--check", p)
	// Our own checker on the bytes, its byte-level rules included (the
	// service checks the model it wrote; the tests check every file).
	vs, err := pdfcheck.Check(pdf, pdfcheck.Level{PDFA: pdfa, PDFUA: pdfua})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("pdfcheck: %s", v)
	}
}

func field(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, name) {
			return strings.TrimSpace(strings.TrimPrefix(line, name))
		}
	}
	return ""
}

// detach lists a PDF's embedded files with pdfdetach and returns each by name.
func detach(t testing.TB, pdf []byte) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(p, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	run(t, "pdfdetach", "-saveall", "-o", out, p)
	files := map[string][]byte{}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(out, e.Name()))
		files[e.Name()] = b
	}
	return files
}

// TestPDFA: every PDF/A level from generate, as poppler and qpdf read it,
// and as our inspect reports it.
func TestPDFA(t *testing.T) {
	c := newClient(t, sharedService(t))
	for _, lvl := range []string{"2b", "2u", "3b", "3u"} {
		t.Run(lvl, func(t *testing.T) {
			pdf := c.generatePDF(recordPage, map[string]any{"pdfa": lvl, "metadata": map[string]any{"author": "Docrender", "keywords": []string{"a", "b"}}})
			checkRecordPDF(t, pdf, lvl, false)
			r := c.inspectReport(pdf)
			var claim struct{ Part, Conformance string }
			if r.PDFA == nil || json.Unmarshal(*r.PDFA, &claim) != nil || claim.Part != lvl[:1] || !strings.EqualFold(claim.Conformance, lvl[1:]) {
				t.Errorf("inspect says pdfa %s", string(derefRaw(r.PDFA)))
			}
		})
	}
	// The rules that join fields are 400s naming one.
	for _, tc := range []struct {
		opts  map[string]any
		field string
	}{
		{map[string]any{"pdfa": "1b"}, "pdfa"},
		{map[string]any{"pdfa": "2b", "encryption": map[string]any{"ownerPassword": "o"}}, "encryption"},
		{map[string]any{"pdfa": "2b", "einvoice": map[string]any{"profile": "BASIC"}}, "pdfa"},
		{map[string]any{"pdfua": true, "tagged": false}, "tagged"},
		{map[string]any{"lang": "not a tag"}, "lang"},
	} {
		if e := expectError(t, c.generate([]file{htmlFile("index.html", recordPage)}, tc.opts), 400, "BAD_REQUEST"); e.Field != tc.field {
			t.Errorf("%v: field %q, want %q", tc.opts, e.Field, tc.field)
		}
	}
}

func derefRaw(r *json.RawMessage) []byte {
	if r == nil {
		return []byte("null")
	}
	return *r
}

func (c *client) inspectReport(pdf []byte) inspectReport {
	c.t.Helper()
	resp := c.inspect(pdfFile("doc.pdf", pdf))
	mustStatus(c.t, resp, http.StatusOK)
	var got struct {
		Data inspectReport `json:"data"`
	}
	decode(c.t, resp, &got)
	return got.Data
}

// TestPDFUA: a PDF/UA-1 from a page with a title and a language; without
// a title it is the client's 400, naming metadata.title.
func TestPDFUA(t *testing.T) {
	c := newClient(t, sharedService(t))
	pdf := c.generatePDF(recordPage, map[string]any{"pdfua": true, "pdfa": "2u"})
	checkRecordPDF(t, pdf, "2u", true)
	if r := c.inspectReport(pdf); r.Lang != "en" || r.PDFUA == nil || !r.Tagged {
		t.Errorf("inspect: lang %q pdfua %s tagged %v", r.Lang, derefRaw(r.PDFUA), r.Tagged)
	}
	// lang overrides <html lang>.
	de := c.generatePDF(recordPage, map[string]any{"pdfua": true, "lang": "de-DE"})
	checkRecordPDF(t, de, "", true)
	if r := c.inspectReport(de); r.Lang != "de-DE" {
		t.Errorf("lang %q, want de-DE", r.Lang)
	}
	untitled := `<html lang="en"><body><p>no title</p></body></html>`
	e := expectError(t, c.generate([]file{htmlFile("index.html", untitled)}, map[string]any{"pdfua": true}), 400, "BAD_REQUEST")
	if !strings.Contains(e.Message, "metadata.title") {
		t.Errorf("no title: %q does not name metadata.title", e.Message)
	}
	// A title given as metadata serves.
	pdf = c.generatePDF(untitled, map[string]any{"pdfua": true, "metadata": map[string]any{"title": "Given"}})
	checkRecordPDF(t, pdf, "", true)
	// A page without <html lang> gets Chromium's language (its locale,
	// en-US); lang says otherwise.
	nolang := `<html><head><title>t</title></head><body><p>keine Sprache</p></body></html>`
	if r := c.inspectReport(c.generatePDF(nolang, map[string]any{"pdfua": true, "lang": "de"})); r.Lang != "de" {
		t.Errorf("lang %q, want de", r.Lang)
	}
	// A merge of untagged input cannot be a PDF/UA: the client's 400.
	e = expectError(t, c.merge([]file{pdfFile("h.pdf", helveticaPDF())}, map[string]any{"pdfua": true, "metadata": map[string]any{"title": "t"}, "lang": "en"}), 400, "BAD_REQUEST")
	if !strings.Contains(e.Message, "pdfua") {
		t.Errorf("untagged merge: %q", e.Message)
	}
}

// TestEInvoiceAndAttachments: a Factur-X invoice and attachments from
// generate (parts), a batch (JSON) and merge, read back with pdfdetach and
// inspect; bad XML is a 400 naming einvoice.xml.
func TestEInvoiceAndAttachments(t *testing.T) {
	c := newClient(t, sharedService(t))
	csv := []byte("item,amount\nwidget,1234.00\n")
	resp := c.generate([]file{htmlFile("index.html", recordPage),
		{Field: "factur-x.xml", Name: "factur-x.xml", Type: "text/xml", Data: []byte(ciiInvoice)},
		{Field: "attachments", Name: "lines.csv", Type: "text/csv", Data: csv},
	}, map[string]any{"einvoice": map[string]any{"profile": "EN 16931"}, "attachmentRelationship": "Supplement"})
	mustStatus(t, resp, http.StatusOK)
	pdf := readAll(t, resp)
	checkRecordPDF(t, pdf, "3b", false)
	files := detach(t, pdf)
	if string(files["factur-x.xml"]) != ciiInvoice || !bytes.Equal(files["lines.csv"], csv) || len(files) != 2 {
		t.Fatalf("embedded files %v", keys(files))
	}
	x := meta(t, pdf)
	for _, want := range []string{"<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>", "<fx:DocumentType>INVOICE</fx:DocumentType>",
		"<fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>", "<pdfaSchema:prefix>fx</pdfaSchema:prefix>"} {
		if !strings.Contains(x, want) {
			t.Errorf("XMP lacks %s", want)
		}
	}
	rels := map[string]string{}
	for _, a := range c.inspectReport(pdf).Attachments {
		var at struct{ FileName, MimeType, Relationship string }
		json.Unmarshal(a, &at)
		rels[at.FileName] = at.MimeType + " " + at.Relationship
	}
	if rels["factur-x.xml"] != "text/xml Alternative" || rels["lines.csv"] != "text/csv Supplement" {
		t.Errorf("attachments %v", rels)
	}

	// XRECHNUNG's file is xrechnung.xml; MINIMUM's relationship is Data.
	for profile, want := range map[string]string{"XRECHNUNG": "xrechnung.xml Alternative", "MINIMUM": "factur-x.xml Data"} {
		resp := c.generate([]file{htmlFile("index.html", recordPage), {Field: "factur-x.xml", Name: "x.xml", Data: []byte(ciiInvoice)}},
			map[string]any{"einvoice": map[string]any{"profile": profile}})
		mustStatus(t, resp, http.StatusOK)
		var got []string
		for _, a := range c.inspectReport(readAll(t, resp)).Attachments {
			var at struct{ FileName, Relationship string }
			json.Unmarshal(a, &at)
			got = append(got, at.FileName+" "+at.Relationship)
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: attachments %v, want %s", profile, got, want)
		}
	}

	// Bad input: each a 400 naming its field.
	for _, tc := range []struct {
		name  string
		files []file
		opts  map[string]any
		field string
	}{
		{"not xml", []file{{Field: "factur-x.xml", Name: "f.xml", Data: []byte("not xml")}}, map[string]any{"einvoice": map[string]any{"profile": "BASIC"}}, "einvoice.xml"},
		{"doctype", []file{{Field: "factur-x.xml", Name: "f.xml", Data: []byte(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>`)}}, map[string]any{"einvoice": map[string]any{"profile": "BASIC"}}, "einvoice.xml"},
		{"ubl root", []file{{Field: "factur-x.xml", Name: "f.xml", Data: []byte(`<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"/>`)}}, map[string]any{"einvoice": map[string]any{"profile": "BASIC"}}, "einvoice.xml"},
		{"no xml", nil, map[string]any{"einvoice": map[string]any{"profile": "BASIC"}}, "einvoice.xml"},
		{"xml without profile", []file{{Field: "factur-x.xml", Name: "f.xml", Data: []byte(ciiInvoice)}}, nil, "einvoice.profile"},
		{"attachment on pdfa-2", []file{{Field: "attachments", Name: "a.txt", Data: []byte("a")}}, map[string]any{"pdfa": "2b"}, "attachments"},
		{"same name twice", []file{{Field: "attachments", Name: "a.txt", Data: []byte("a")}, {Field: "attachments", Name: "a.txt", Data: []byte("b")}}, nil, "attachments[1].fileName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := append([]file{htmlFile("index.html", recordPage)}, tc.files...)
			if e := expectError(t, c.generate(files, tc.opts), 400, "BAD_REQUEST"); e.Field != tc.field {
				t.Errorf("field %q, want %q (%s)", e.Field, tc.field, e.Message)
			}
		})
	}
	// 10,000 attachments: refused at the 101st, the service unharmed.
	many := []file{htmlFile("index.html", recordPage)}
	for i := range 10_000 {
		many = append(many, file{Field: "attachments", Name: "a" + strconv.Itoa(i) + ".txt", Data: []byte("x")})
	}
	if e := expectError(t, c.generate(many, nil), 400, "BAD_REQUEST"); e.Field != "attachments" {
		t.Errorf("10,000 attachments: field %q", e.Field)
	}
	// An attachment over the upload limit: 413 in shape A.
	expectError(t, c.generate([]file{htmlFile("index.html", recordPage), {Field: "attachments", Name: "big.bin", Data: make([]byte, 9<<20)}}, nil), 413, "PAYLOAD_TOO_LARGE")
	c.generatePDF("<p>still serving</p>", nil)
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRecordInBatchAndMerge: §8 options on a batch (options and one
// document's own e-invoice sent as JSON) and on a merge, whatever its
// inputs; a merged input with a font that is not embedded cannot become
// PDF/A: 422 naming the rule.
func TestRecordInBatchAndMerge(t *testing.T) {
	c := newClient(t, sharedService(t))
	csv := base64.StdEncoding.EncodeToString([]byte("a,b\n"))
	resp := c.batch(map[string]any{
		"options": map[string]any{"pdfa": "3u", "attachments": []map[string]any{{"fileName": "data.csv", "content": csv, "description": "lines"}}},
		"documents": []map[string]any{
			{"fileName": "plain", "htmlContent": recordPage},
			{"fileName": "invoice", "htmlContent": recordPage, "einvoice": map[string]any{"profile": "BASIC", "xml": ciiInvoice}},
		},
	})
	mustStatus(t, resp, http.StatusOK)
	zb := readAll(t, resp)
	zr, err := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		rc, _ := f.Open()
		pdf, _ := io.ReadAll(rc)
		rc.Close()
		checkRecordPDF(t, pdf, "3u", false)
		got := detach(t, pdf)
		want := 1
		if strings.HasPrefix(f.Name, "invoice") {
			want = 2
			if string(got["factur-x.xml"]) != ciiInvoice {
				t.Errorf("%s: no factur-x.xml", f.Name)
			}
		}
		if len(got) != want || string(got["data.csv"]) != "a,b\n" {
			t.Errorf("%s: embedded %v", f.Name, keys(got))
		}
	}
	// A document's own bad XML names the document.
	e := expectError(t, c.batch(map[string]any{"documents": []map[string]any{
		{"fileName": "a", "htmlContent": "<p>a</p>"},
		{"fileName": "b", "htmlContent": "<p>b</p>", "einvoice": map[string]any{"profile": "BASIC", "xml": "<x/>"}},
	}}), 400, "BAD_REQUEST")
	if e.Field != "documents[1].einvoice.xml" {
		t.Errorf("batch bad XML: field %q", e.Field)
	}

	a := c.generatePDF(recordPage, nil)
	b := c.generatePDF(`<html lang="en"><head><title>b</title></head><body><p>second</p></body></html>`, nil)
	resp = c.merge([]file{pdfFile("a.pdf", a), pdfFile("b.pdf", b)}, map[string]any{"pdfa": "2u", "metadata": map[string]any{"title": "Merged"}})
	mustStatus(t, resp, http.StatusOK)
	merged := readAll(t, resp)
	checkRecordPDF(t, merged, "2u", false)
	if pi := info(t, merged); pi.Pages != 2 {
		t.Errorf("merged pages %d", pi.Pages)
	}
	e = expectError(t, c.merge([]file{pdfFile("a.pdf", a), pdfFile("helvetica.pdf", helveticaPDF())}, map[string]any{"pdfa": "2b"}), 422, "RENDER_CHECK_FAILED")
	if !strings.Contains(e.Message, "6.2.11.4.1") {
		t.Errorf("unembedded font: %q names no rule", e.Message)
	}
	details, _ := e.Raw["details"].([]any)
	found := false
	for _, d := range details {
		if m, _ := d.(map[string]any); m["kind"] == "pdfa" && strings.HasPrefix(fmt.Sprint(m["message"]), "6.2.11.4.1-1") {
			found = true
		}
	}
	if !found {
		t.Errorf("details %v list no pdfa 6.2.11.4.1-1", details)
	}
}

// TestRecordBombs: a PDF carrying a 512 MiB flate bomb as an embedded
// file, given to inspect and to a PDF/A-3 merge: nothing decodes the
// attachment (the heap grows by far less than it would), the merge makes
// it an associated file, the service serves on.
func TestRecordBombs(t *testing.T) {
	c := newClient(t, sharedService(t))
	bomb := bombPDF(t, 512<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := c.inspectReport(bomb)
	if len(r.Attachments) != 1 || r.Pages != 1 {
		t.Errorf("inspect: %+v", r)
	}
	resp := c.merge([]file{pdfFile("bomb.pdf", bomb), pdfFile("b.pdf", c.generatePDF(recordPage, nil))}, map[string]any{"pdfa": "3b"})
	mustStatus(t, resp, http.StatusOK)
	merged := readAll(t, resp)
	runtime.ReadMemStats(&after)
	if grew := (after.TotalAlloc - before.TotalAlloc) >> 20; grew > 256 {
		t.Errorf("inspect and merge allocated %d MiB: the bomb was decoded", grew)
	}
	if x := meta(t, merged); !strings.Contains(x, "<pdfaid:part>3</pdfaid:part>") {
		t.Errorf("merged: no PDF/A-3 claim")
	}
	var rels []string
	for _, a := range c.inspectReport(merged).Attachments {
		var at struct{ FileName, MimeType, Relationship string }
		json.Unmarshal(a, &at)
		rels = append(rels, at.FileName+" "+at.MimeType+" "+at.Relationship)
	}
	if len(rels) != 1 || rels[0] != "bomb.bin application/octet-stream Unspecified" {
		t.Errorf("merged attachments %v", rels)
	}
	c.generatePDF("<p>still serving</p>", nil)
}

// bombPDF is a one-page PDF embedding a file of n zero bytes, flate
// compressed to about a thousandth of that.
func bombPDF(t testing.TB, n int) []byte {
	t.Helper()
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zero := make([]byte, 1<<20)
	for range n >> 20 {
		zw.Write(zero)
	}
	zw.Close()
	content := "BT /F1 24 Tf 72 720 Td (bomb) Tj ET"
	return rawpdf.Build(
		"<< /Type /Catalog /Pages 2 0 R /Names << /EmbeddedFiles << /Names [(bomb.bin) 6 0 R] >> >> >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		"<< /Length "+strconv.Itoa(len(content))+" >>\nstream\n"+content+"\nendstream",
		"<< /Type /EmbeddedFile /Filter /FlateDecode /Length "+strconv.Itoa(z.Len())+" >>\nstream\n"+z.String()+"\nendstream",
		"<< /Type /Filespec /F (bomb.bin) /UF (bomb.bin) /EF << /F 5 0 R >> >>",
	)
}

// helveticaPDF is a one-page PDF whose text is set in Helvetica, a font it
// does not embed (as many PDF writers do).
func helveticaPDF() []byte {
	content := "BT /F1 24 Tf 72 720 Td (Helvetica, not embedded) Tj ET"
	return rawpdf.Build(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		"<< /Length "+strconv.Itoa(len(content))+" >>\nstream\n"+content+"\nendstream",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	)
}
