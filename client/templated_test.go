package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A template render against a fake service: the JSON body it sends (the
// ref as a name or {id, version}, the data, the options, documentId,
// host), the Idempotency-Key, the retry after a 500, the hosted answer, a
// 422 with the template's line and the data's path, the preview's query
// and credentials, and a batch filling a template.
func TestTemplateRender(t *testing.T) {
	type sent struct {
		method, uri, key, auth, idem, ctype string
		body                                map[string]any
	}
	var (
		mu    sync.Mutex
		got   []sent
		fails int // answers to fail with a 500 first
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s := sent{r.Method, r.URL.RequestURI(), r.Header.Get("X-API-Key"), r.Header.Get("Authorization"),
			r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type"), nil}
		if len(b) > 0 {
			if err := json.Unmarshal(b, &s.body); err != nil {
				t.Errorf("body %q: %v", b, err)
			}
		}
		mu.Lock()
		got = append(got, s)
		fail := fails > 0
		fails--
		mu.Unlock()
		data, _ := s.body["data"].(map[string]any)
		switch {
		case fail:
			w.WriteHeader(500)
			w.Write([]byte(`{"statusCode":500,"code":"INTERNAL_SERVER_ERROR","message":"m"}`))
		case data["bad"] != nil:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(422)
			w.Write([]byte(`{"statusCode":422,"code":"RENDER_CHECK_FAILED","message":"The template could not be filled.","details":[{"kind":"template","line":5,"path":"items[1].price","message":"not a number"}]}`))
		case s.body["host"] == true:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"url":"http://x/pdf/download/p1","pdfId":"p1","expiresAt":"2030-01-02T03:04:05Z"}`))
		case strings.HasPrefix(r.URL.Path, "/pdf/generate-batch"):
			w.Header().Set("Content-Type", "application/zip")
			w.Header().Set("X-Batch-Id", "b1")
			w.Write([]byte("PK"))
		default:
			w.Header().Set("Content-Type", "application/pdf")
			w.Header().Set("Content-Disposition", `attachment; filename="invoice.pdf"`)
			w.Header().Set("Docrender-Render-Report", "pages=2, renderMs=40, blocked=0, failed=0, consoleErrors=0")
			w.Write([]byte("%PDF-1.7"))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := newTestClient(t, srv.URL)
	c.sleep = func(context.Context, time.Duration) error { return nil }

	// By name, data as a map, retried after a 500 with its key.
	fails = 1
	d, err := c.GenerateTemplate(ctx, TemplateRequest{Template: TemplateRef{Name: "invoice"},
		Data: map[string]any{"number": "2026-042"}, Options: &PDFOptions{Format: "A5"}, DocumentID: "inv-42", IdempotencyKey: "k-42"})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := d.Bytes(); string(b) != "%PDF-1.7" || d.Name != "invoice.pdf" || d.Report == nil || d.Report.Pages != 2 {
		t.Fatalf("download %+v %q", d, b)
	}
	if len(got) != 2 || got[0].idem != "k-42" || got[1].idem != "k-42" {
		t.Fatalf("sent %+v, want the request twice with its key", got)
	}
	want := `{"data":{"number":"2026-042"},"documentId":"inv-42","options":{"format":"A5"},"template":"invoice"}`
	if b, _ := json.Marshal(got[1].body); string(b) != want || got[1].ctype != "application/json" || got[1].key != "drk_test" || got[1].uri != "/pdf/generate" {
		t.Fatalf("sent %+v %s, want %s", got[1], b, want)
	}

	// By id and version, data as raw JSON, hosted.
	got = nil
	h, err := c.GenerateTemplateHosted(ctx, TemplateRequest{Template: TemplateRef{ID: "t1", Version: 2}, Data: []byte(`{"n":1}`)})
	if err != nil || h.PdfID != "p1" {
		t.Fatalf("hosted %+v %v", h, err)
	}
	if b, _ := json.Marshal(got[0].body); string(b) != `{"data":{"n":1},"host":true,"template":{"id":"t1","version":2}}` {
		t.Fatalf("hosted sent %s", b)
	}
	// A name with a version, and no data: {}.
	got = nil
	if d, err := c.GenerateTemplate(ctx, TemplateRequest{Template: TemplateRef{Name: "invoice", Version: 1}}); err != nil {
		t.Fatal(err)
	} else {
		d.Body.Close()
	}
	if b, _ := json.Marshal(got[0].body); string(b) != `{"data":{},"template":{"name":"invoice","version":1}}` {
		t.Fatalf("sent %s", b)
	}

	// A template error: the 422's line and path, not retried.
	got = nil
	_, err = c.GenerateTemplate(ctx, TemplateRequest{Template: TemplateRef{Name: "invoice"}, Data: map[string]any{"bad": true}})
	var ae *Error
	if !errors.As(err, &ae) || ae.StatusCode != 422 || len(ae.Details) != 1 || len(got) != 1 {
		t.Fatalf("422: %v (%d sends)", err, len(got))
	}
	if dt := ae.Details[0]; dt.Kind != "template" || dt.Line != 5 || dt.Path != "items[1].price" || dt.Message != "not a number" {
		t.Fatalf("detail %+v", dt)
	}

	// The preview: its version in the query, the session when there is no key.
	got = nil
	s := newTestClient(t, srv.URL)
	s.SetAPIKey("")
	for _, v := range []int{0, 3} {
		d, err := s.PreviewTemplate(ctx, "t/1", v)
		if err != nil {
			t.Fatal(err)
		}
		d.Body.Close()
	}
	if got[0].uri != "/api/templates/t%2F1/preview" || got[1].uri != "/api/templates/t%2F1/preview?version=3" ||
		got[0].auth != "Bearer sess" || got[0].key != "" || got[0].method != "GET" {
		t.Fatalf("previews sent %+v", got)
	}

	// A batch filling a template: the documents' data, unnamed ones too.
	got = nil
	z, err := c.GenerateBatch(ctx, BatchRequest{Template: &TemplateRef{Name: "invoice"}, Documents: []BatchDocument{
		{Data: map[string]any{"number": "B-1"}, FileName: "b1"},
		{Data: json.RawMessage(`{"number":"B-2"}`), PrintOptions: &PrintOptions{Scale: 0.5}},
		{},
	}})
	if err != nil || z.BatchID != "b1" {
		t.Fatalf("batch %+v %v", z, err)
	}
	z.Body.Close()
	want = `{"documents":[{"data":{"number":"B-1"},"fileName":"b1"},{"data":{"number":"B-2"},"scale":0.5},{"data":{}}],"template":"invoice"}`
	if b, _ := json.Marshal(got[0].body); string(b) != want {
		t.Fatalf("batch sent %s, want %s", b, want)
	}

	// Refused before sending.
	got = nil
	for i, call := range []func() error{
		func() error { _, err := c.GenerateTemplate(ctx, TemplateRequest{Data: map[string]any{}}); return err },
		func() error {
			_, err := c.GenerateTemplate(ctx, TemplateRequest{Template: TemplateRef{Name: "x"}, Data: []byte(`{"a":`)})
			return err
		},
		func() error {
			_, err := c.GenerateTemplate(ctx, TemplateRequest{Template: TemplateRef{Name: "x"}, Data: func() {}})
			return err
		},
		func() error { _, err := c.PreviewTemplate(ctx, "", 0); return err },
		func() error { _, err := c.PreviewTemplate(ctx, "t1", -1); return err },
		func() error {
			_, err := c.GenerateBatch(ctx, BatchRequest{Template: &TemplateRef{Name: "x"}, Documents: []BatchDocument{{HTMLContent: "<p>"}}})
			return err
		},
		func() error {
			_, err := c.GenerateBatch(ctx, BatchRequest{Documents: []BatchDocument{{FileName: "a", Data: map[string]any{}}}})
			return err
		},
	} {
		if err := call(); err == nil {
			t.Errorf("call %d: no error", i)
		}
	}
	if len(got) != 0 {
		t.Fatalf("refused calls sent %+v", got)
	}
}
