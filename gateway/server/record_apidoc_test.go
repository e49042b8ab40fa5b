package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// recordForm is a generate or merge body with DESIGN §8's parts: files
// under "files", attachments under "attachments", and the e-invoice's XML
// as the part "factur-x.xml".
func recordForm(t *testing.T, options string, files [][2]string, attachments [][3]string, xml string) *form2 {
	t.Helper()
	f := &form2{}
	f.w = multipart.NewWriter(&f.buf)
	part := func(field, name, ctype, data string) {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+field+`"; filename="`+name+`"`)
		h.Set("Content-Type", ctype)
		w, err := f.w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(data))
	}
	for _, file := range files {
		part("files", file[0], "application/octet-stream", file[1])
	}
	for _, a := range attachments {
		part("attachments", a[0], a[1], a[2])
	}
	if xml != "" {
		part("factur-x.xml", "factur-x.xml", "text/xml", xml)
	}
	if options != "" {
		_ = f.w.WriteField("options", options)
	}
	if err := f.w.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

const ciiXML = `<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"><rsm:ExchangedDocument/></rsm:CrossIndustryInvoice>`

// TestRecordAnswersMatchDocument: generate, merge and batch with DESIGN
// §8's options (as the OpenAPI document describes them: options fields,
// the attachments and factur-x.xml parts, JSON attachments in a batch) are
// accepted, and their refusals (the 400s that join fields, the 403 of an
// identity not granted) are the answers the document describes. A batch's
// JSON request is checked against the document too.
func TestRecordAnswersMatchDocument(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_SIGNING_DIR": signingDir(t)})
	raw := g.do(req{method: "GET", path: "/openapi.json", key: "-"})
	doc, err := libopenapi.NewDocument(raw.body)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	key := map[string]string{"X-API-Key": g.key}
	csv := [][3]string{{"lines.csv", "text/csv", "a,b\n"}}
	b64 := base64.StdEncoding.EncodeToString([]byte("a,b\n"))
	notGranted := map[string]any{"identity": "acme", "level": "B-B", "visible": map[string]any{"page": 1, "x": 50, "y": 50, "width": 200, "height": 50}}
	batch := func(options map[string]any, doc map[string]any) map[string]any {
		d := map[string]any{"fileName": "a", "htmlContent": "<title>a</title><p>a</p>"}
		for k, v := range doc {
			d[k] = v
		}
		return map[string]any{"stream": true, "options": options, "documents": []any{d}}
	}
	for _, tc := range []struct {
		c     call
		field string
	}{
		{call{"generate pdfa pdfua lang", "POST", "/pdf/generate", recordForm(t, `{"pdfa":"2u","pdfua":true,"lang":"en-GB"}`, [][2]string{page}, nil, ""), key, 200}, ""},
		{call{"generate attachments and e-invoice parts", "POST", "/pdf/generate",
			recordForm(t, `{"einvoice":{"profile":"EN 16931"},"attachmentRelationship":"Supplement"}`, [][2]string{page}, csv, ciiXML), key, 200}, ""},
		{call{"merge pdfa with an attachment", "POST", "/pdf/merge",
			recordForm(t, `{"pdfa":"3b","metadata":{"title":"Merged"}}`, [][2]string{{"a.pdf", fakePDF}}, csv, ""), key, 200}, ""},
		{call{"batch JSON attachments and e-invoice", "POST", "/pdf/generate-batch",
			batch(map[string]any{"pdfa": "3u", "attachments": []any{map[string]any{"fileName": "data.csv", "content": b64, "description": "lines"}}},
				map[string]any{"einvoice": map[string]any{"profile": "BASIC", "xml": ciiXML}}), key, 200}, ""},

		{call{"generate pdfa with encryption", "POST", "/pdf/generate", recordForm(t, `{"pdfa":"2b","encryption":{"ownerPassword":"o"}}`, [][2]string{page}, nil, ""), key, 400}, "encryption"},
		{call{"generate sign with encryption", "POST", "/pdf/generate", recordForm(t, `{"sign":{"identity":"acme"},"encryption":{"ownerPassword":"o"}}`, [][2]string{page}, nil, ""), key, 400}, "sign"},
		{call{"generate attachment on pdfa-2", "POST", "/pdf/generate", recordForm(t, `{"pdfa":"2b"}`, [][2]string{page}, csv, ""), key, 400}, "attachments"},
		{call{"generate e-invoice on pdfa-2", "POST", "/pdf/generate", recordForm(t, `{"pdfa":"2u","einvoice":{"profile":"BASIC"}}`, [][2]string{page}, nil, ciiXML), key, 400}, "pdfa"},
		{call{"generate pdfua untagged", "POST", "/pdf/generate", recordForm(t, `{"pdfua":true,"tagged":false}`, [][2]string{page}, nil, ""), key, 400}, "tagged"},
		{call{"generate bad e-invoice XML", "POST", "/pdf/generate", recordForm(t, `{"einvoice":{"profile":"BASIC"}}`, [][2]string{page}, nil, "<x/>"), key, 400}, "einvoice.xml"},
		{call{"generate XML without a profile", "POST", "/pdf/generate", recordForm(t, "", [][2]string{page}, nil, ciiXML), key, 400}, "einvoice.profile"},
		{call{"batch bad pdfa", "POST", "/pdf/generate-batch", batch(map[string]any{"pdfa": "1b"}, nil), key, 400}, "pdfa"},

		{call{"generate sign not granted", "POST", "/pdf/generate", recordForm(t, `{"sign":{"identity":"acme"}}`, [][2]string{page}, nil, ""), key, 403}, ""},
		{call{"merge sign not granted", "POST", "/pdf/merge", recordForm(t, `{"sign":{"identity":"beta","level":"B-B"}}`, [][2]string{{"a.pdf", fakePDF}}, nil, ""), key, 403}, ""},
		{call{"batch sign not granted", "POST", "/pdf/generate-batch", batch(map[string]any{"sign": notGranted}, nil), key, 403}, ""},
	} {
		t.Run(tc.c.name, func(t *testing.T) {
			hreq, resp := g.send(tc.c)
			body, _ := io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(body))
			if resp.StatusCode != tc.c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.c.status, body)
			}
			if tc.field != "" && !bytes.Contains(body, []byte(`"field":"`+tc.field+`"`)) {
				t.Errorf("answer names no field %s: %s", tc.field, body)
			}
			if ok, verrs := v.ValidateHttpResponse(hreq, resp); !ok {
				for _, e := range verrs {
					t.Errorf("%s: %s", e.Message, e.Reason)
					for _, se := range e.SchemaValidationErrors {
						t.Errorf("  at %s: %s", se.FieldPath, se.Reason)
					}
				}
			}
			if tc.c.method == "POST" && tc.c.path == "/pdf/generate-batch" && tc.c.status != 400 {
				// The request itself is one the document describes.
				hreq.Body = io.NopCloser(bytes.NewReader(jsonOf(t, tc.c.body)))
				if ok, verrs := v.ValidateHttpRequest(hreq); !ok {
					for _, e := range verrs {
						t.Errorf("request: %s: %s", e.Message, e.Reason)
						for _, se := range e.SchemaValidationErrors {
							t.Errorf("  at %s: %s", se.FieldPath, se.Reason)
						}
					}
				}
			}
		})
	}
	// The document's validator refuses a batch request it does not describe.
	bad, _ := http.NewRequest("POST", g.url+"/pdf/generate-batch", bytes.NewReader(jsonOf(t, batch(map[string]any{"pdfa": "1b", "sign": map[string]any{"level": "B-LTA"}}, nil))))
	bad.Header.Set("Content-Type", "application/json")
	bad.Header.Set("X-API-Key", g.key)
	if ok, _ := v.ValidateHttpRequest(bad); ok {
		t.Error("a batch with pdfa 1b and a sign without identity passed the document's validation")
	}
}

func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
