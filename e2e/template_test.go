package e2e

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"
)

// invoiceTemplate is a stored template as a sender of invoices writes it.
const invoiceTemplate = `<!doctype html><html lang="de"><head><meta charset="utf-8"><title>Rechnung {{number}}</title>
<link rel="stylesheet" href="style.css"></head><body>
<h1>Rechnung {{number}}</h1>
<p class="customer">{{customer.name}}</p>
<table>{{#each items}}<tr><td>{{@index}}</td><td>{{name}}</td><td>{{formatCurrency price "EUR"}}</td></tr>{{/each}}</table>
<p>Datum: {{formatDate date "2 January 2006"}}</p>
<p><a href="{{link}}">Online ansehen</a></p>
</body></html>`

// uploadTemplate stores a template (POST /api/templates) and returns its ID.
func (c *client) uploadTemplate(name string, files map[string]string, sample string) (string, int) {
	c.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("name", name)
	for n, body := range files {
		p, _ := w.CreateFormFile("files", n)
		p.Write([]byte(body))
	}
	if sample != "" {
		p, _ := w.CreateFormFile("sampleData", "sample.json")
		p.Write([]byte(sample))
	}
	w.Close()
	resp := c.do("POST", "/api/templates", body{&buf, w.FormDataContentType()}, map[string]string{"X-API-Key": c.Key})
	mustStatus(c.t, resp, http.StatusCreated)
	var got struct {
		Data struct {
			ID      string `json:"id"`
			Version int    `json:"version"`
		} `json:"data"`
	}
	decode(c.t, resp, &got)
	return got.Data.ID, got.Data.Version
}

// generateTemplate posts a template render's JSON body.
func (c *client) generateTemplate(req map[string]any) *http.Response {
	c.t.Helper()
	return c.do("POST", "/pdf/generate", jsonBody(req), map[string]string{"X-API-Key": c.Key})
}

func pdfText(t testing.TB, pdf []byte) string {
	t.Helper()
	return run(t, "pdftotext", "-layout", writeTemp(t, pdf, ".pdf"), "-")
}

// TestTemplates: a template stored once, rendered by name with JSON data,
// its assets with it; data is escaped where it lands; a version is chosen
// by id; the caching ID covers the data; a batch fills it per document;
// the preview renders the sample data; a template error is a 422 naming
// the line and the data's path; another account cannot use it.
func TestTemplates(t *testing.T) {
	c := newClient(t, sharedService(t))
	id, v := c.uploadTemplate("invoice", map[string]string{"index.html": invoiceTemplate, "style.css": "h1 { color: #2a6 }"},
		`{"number":"S-1","customer":{"name":"Sample GmbH"},"items":[{"name":"Muster","price":1}],"date":"2026-01-05","link":"https://example.com"}`)
	if v != 1 {
		t.Fatalf("first upload is version %d", v)
	}
	data := map[string]any{
		"number":   "2026-042",
		"customer": map[string]any{"name": `<script>alert("x")</script> & Söhne`},
		"items":    []map[string]any{{"name": "Beratung", "price": 1234.5}, {"name": "Reise", "price": 99}},
		"date":     "2026-03-01",
		"link":     "javascript:alert(1)",
	}
	resp := c.generateTemplate(map[string]any{"template": "invoice", "data": data})
	mustStatus(t, resp, http.StatusOK)
	pdf := readAll(t, resp)
	text := pdfText(t, pdf)
	for _, want := range []string{"Rechnung 2026-042", `<script>alert("x")</script> & Söhne`, "Beratung", "1.234,50 €", "1 März 2026"} {
		if !strings.Contains(text, want) {
			t.Errorf("PDF text lacks %q:\n%s", want, text)
		}
	}
	if bytes.Contains(pdf, []byte("javascript")) {
		t.Error("a javascript: link made it into the PDF")
	}

	// §6 and §8 options apply to a template's render as to any other.
	resp = c.generateTemplate(map[string]any{"template": "invoice", "data": data,
		"options": map[string]any{"format": "A5", "pdfa": "2u", "metadata": map[string]any{"author": "Templates"}}})
	mustStatus(t, resp, http.StatusOK)
	a5 := readAll(t, resp)
	checkRecordPDF(t, a5, "2u", false)
	if pi := info(t, a5); !near(pi.Width, 419.5, 1) {
		t.Errorf("A5 width %v", pi.Width)
	}

	// header.html and footer.html are filled with the same data, in a
	// generate and in a batch, and get room on the page.
	c.uploadTemplate("headed", map[string]string{"index.html": `<html lang="en"><body><p>Body {{number}}</p></body></html>`,
		"header.html": `<div style="font-size:10px; width:100%; text-align:center">Head {{number}}</div>`,
		"footer.html": `<div style="font-size:10px; width:100%; text-align:center">Foot {{number}}</div>`}, "")
	resp = c.generateTemplate(map[string]any{"template": "headed", "data": map[string]any{"number": "H-1"}})
	mustStatus(t, resp, http.StatusOK)
	if text := pdfText(t, readAll(t, resp)); !strings.Contains(text, "Head H-1") || !strings.Contains(text, "Foot H-1") || !strings.Contains(text, "Body H-1") {
		t.Errorf("headed: %s", text)
	}
	resp = c.batch(map[string]any{"template": "headed", "documents": []map[string]any{{"data": map[string]any{"number": "H-2"}}}})
	mustStatus(t, resp, http.StatusOK)
	if _, files := unzip(t, readAll(t, resp)); len(files) != 1 {
		t.Errorf("headed batch: %d files", len(files))
	} else {
		for _, pdf := range files {
			if text := pdfText(t, pdf); !strings.Contains(text, "Head H-2") || !strings.Contains(text, "Foot H-2") {
				t.Errorf("headed batch: %s", text)
			}
		}
	}

	// Version 2 by name; version 1 still by id.
	if _, v2 := c.uploadTemplate("invoice", map[string]string{"index.html": strings.Replace(invoiceTemplate, "Rechnung", "Faktura", 2)}, ""); v2 != 2 {
		t.Fatalf("second upload is version %d", v2)
	}
	for _, tc := range []struct {
		ref  any
		want string
	}{{"invoice", "Faktura 2026-042"}, {map[string]any{"id": id, "version": 1}, "Rechnung 2026-042"}} {
		resp := c.generateTemplate(map[string]any{"template": tc.ref, "data": data})
		mustStatus(t, resp, http.StatusOK)
		if text := pdfText(t, readAll(t, resp)); !strings.Contains(text, tc.want) {
			t.Errorf("template %v: text lacks %q", tc.ref, tc.want)
		}
	}

	// The caching ID covers the data: the same data is a hit, other data a miss.
	for _, tc := range []struct {
		number, want string
	}{{"A-1", "MISS"}, {"A-1", "HIT"}, {"A-2", "MISS"}} {
		d := map[string]any{"number": tc.number, "items": []any{}}
		resp := c.generateTemplate(map[string]any{"template": "invoice", "data": d, "documentId": "inv-cache"})
		mustStatus(t, resp, http.StatusOK)
		if got := resp.Header.Get("X-Cache"); got != tc.want {
			t.Errorf("data %s: X-Cache %q, want %s", tc.number, got, tc.want)
		}
		resp.Body.Close()
	}

	// A batch fills the template per document.
	resp = c.batch(map[string]any{"template": map[string]any{"id": id, "version": 1}, "documents": []map[string]any{
		{"data": map[string]any{"number": "B-1", "items": []any{}}, "fileName": "b1"},
		{"data": map[string]any{"number": "B-2", "items": []any{}}},
	}})
	mustStatus(t, resp, http.StatusOK)
	zb := readAll(t, resp)
	zr, err := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 2 {
		t.Fatalf("ZIP has %d files", len(zr.File))
	}
	for i, f := range zr.File {
		rc, _ := f.Open()
		p, _ := io.ReadAll(rc)
		rc.Close()
		if text := pdfText(t, p); !strings.Contains(text, fmt.Sprintf("Rechnung B-%d", i+1)) {
			t.Errorf("%s: %s", f.Name, text)
		}
	}

	// A stream batch: progress, then its ZIP from the link.
	id2 := c.startStream(map[string]any{"template": "invoice", "documents": []map[string]any{
		{"data": map[string]any{"number": "S-1", "items": []any{}}}, {"data": map[string]any{"number": "S-2", "items": []any{}}},
		{"data": map[string]any{"number": "S-3", "items": []any{}}},
	}})
	p, _ := c.waitBatch(id2, 3, 2*time.Minute)
	if p.Status != "completed" {
		t.Fatalf("stream batch: %+v", p)
	}
	resp = c.withKey("GET", c.svc.local(t, strings.TrimPrefix(p.Message, "Download URL: ")), body{})
	mustStatus(t, resp, http.StatusOK)
	if names, _ := unzip(t, readAll(t, resp)); len(names) != 3 || names[0] != "invoice-1.pdf" {
		t.Errorf("stream batch ZIP %v", names)
	}

	// The preview renders the version's sample data, as a conversion.
	used := c.usage()
	resp = c.do("GET", "/api/templates/"+id+"/preview?version=1", body{}, map[string]string{"X-API-Key": c.Key})
	mustStatus(t, resp, http.StatusOK)
	if text := pdfText(t, readAll(t, resp)); !strings.Contains(text, "Sample GmbH") {
		t.Errorf("preview: %s", text)
	}
	if n := c.usage(); n != used+1 {
		t.Errorf("preview counted %d conversions", n-used)
	}

	// A value of the wrong type: 422 naming the line and the data's path.
	bad := map[string]any{"number": "X", "items": []map[string]any{{"name": "a", "price": 1}, {"name": "b", "price": "lots"}}}
	e := expectError(t, c.generateTemplate(map[string]any{"template": "invoice", "data": bad}), 422, "RENDER_CHECK_FAILED")
	details, _ := e.Raw["details"].([]any)
	if len(details) != 1 {
		t.Fatalf("details %v", details)
	}
	d, _ := details[0].(map[string]any)
	if d["kind"] != "template" || d["line"] != float64(5) || d["path"] != "items[1].price" {
		t.Errorf("detail %v, want kind template, line 5, path items[1].price", d)
	}

	// Bad requests, each a 4xx naming what is wrong.
	deep := map[string]any{}
	cur := deep
	for range 120 {
		next := map[string]any{}
		cur["a"] = next
		cur = next
	}
	for _, tc := range []struct {
		name   string
		req    map[string]any
		status int
		field  string
	}{
		{"no template", map[string]any{"data": data}, 400, ""},
		{"unknown template", map[string]any{"template": "nope", "data": data}, 404, ""},
		{"unknown version", map[string]any{"template": map[string]any{"id": id, "version": 9}}, 404, ""},
		{"data not an object", map[string]any{"template": "invoice", "data": []int{1}}, 400, "data"},
		{"data too deep", map[string]any{"template": "invoice", "data": deep}, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := map[int]string{400: "BAD_REQUEST", 404: "NOT_FOUND"}[tc.status]
			e := expectError(t, c.generateTemplate(tc.req), tc.status, code)
			if tc.field != "" && e.Field != tc.field {
				t.Errorf("field %q, want %q", e.Field, tc.field)
			}
		})
	}

	// Another account cannot see or use it.
	other := newClient(t, sharedService(t))
	expectError(t, other.generateTemplate(map[string]any{"template": "invoice", "data": data}), 404, "NOT_FOUND")
	expectError(t, other.generateTemplate(map[string]any{"template": map[string]any{"id": id}, "data": data}), 404, "NOT_FOUND")
	resp = other.do("GET", "/api/templates/"+id+"/preview", body{}, map[string]string{"X-API-Key": other.Key})
	expectError(t, resp, 404, "NOT_FOUND")
}
