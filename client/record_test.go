package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// part is one multipart part as the service reads it.
type part struct {
	field, name, ctype, data string
}

// recorder answers every request with a PDF (the first failing ones with
// 503) and keeps what each request sent: its multipart parts, or its
// JSON body.
type recorder struct {
	mu    sync.Mutex
	fail  int
	forms [][]part
	jsons []map[string]any
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var parts []part
	var body map[string]any
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			b, _ := io.ReadAll(p)
			parts = append(parts, part{p.FormName(), p.FileName(), p.Header.Get("Content-Type"), string(b)})
		}
	} else {
		json.NewDecoder(r.Body).Decode(&body)
	}
	rec.mu.Lock()
	rec.forms = append(rec.forms, parts)
	rec.jsons = append(rec.jsons, body)
	failing := rec.fail > 0
	rec.fail--
	rec.mu.Unlock()
	if failing {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"statusCode":503,"code":"SERVICE_UNAVAILABLE","message":"busy"}`))
		return
	}
	w.Header().Set("Content-Type", "application/pdf")
	w.Write([]byte("%PDF-1.7 ok"))
}

// options is the "options" part's JSON, "" without one; the other parts
// as field, name, type and content.
func splitForm(t *testing.T, parts []part) (string, []string) {
	t.Helper()
	var opts string
	var rest []string
	for _, p := range parts {
		if p.field == "options" {
			opts = p.data
			continue
		}
		rest = append(rest, fmt.Sprintf("%s %s %s %q", p.field, p.name, p.ctype, p.data))
	}
	return opts, rest
}

func canonical(t *testing.T, js string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

const invoiceXML = `<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"/>`

// Generate and Merge send DESIGN §8's options in options, each attachment
// as a part named "attachments" (its name, and its type or
// application/octet-stream for the service to choose), and the
// e-invoice's XML as the part "factur-x.xml"; a retried request sends them
// all again.
func TestRecordOptionsAndParts(t *testing.T) {
	rec := &recorder{fail: 1}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	c.sleep = func(context.Context, time.Duration) error { return nil }
	ctx := context.Background()

	d, err := c.Generate(ctx, GenerateRequest{
		Files: []Upload{UploadBytes("index.html", []byte("<title>t</title>"))},
		Options: &PDFOptions{PrintOptions: PrintOptions{RecordOptions: RecordOptions{
			PDFA: PDFA3U, PDFUA: true, Lang: "de-DE", AttachmentRelationship: "Source",
			EInvoice: &EInvoice{Profile: ProfileEN16931},
		}}},
		Attachments: []Upload{
			UploadBytes("lines.csv", []byte("a,b\n")),
			{Name: "notes.txt", ContentType: "text/plain", Open: UploadBytes("", []byte("hello")).Open},
		},
		EInvoiceXML: &Upload{Open: UploadBytes("", []byte(invoiceXML)).Open},
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Body.Close()
	if len(rec.forms) != 2 {
		t.Fatalf("%d requests, want 2 (one retried)", len(rec.forms))
	}
	wantParts := []string{
		`files index.html text/html; charset=utf-8 "<title>t</title>"`,
		`attachments lines.csv application/octet-stream "a,b\n"`,
		`attachments notes.txt text/plain "hello"`,
		`factur-x.xml factur-x.xml text/xml ` + fmt.Sprintf("%q", invoiceXML),
	}
	for i, form := range rec.forms {
		opts, rest := splitForm(t, form)
		if got, want := canonical(t, opts), `{"attachmentRelationship":"Source","einvoice":{"profile":"EN 16931"},"lang":"de-DE","pdfa":"3u","pdfua":true}`; got != want {
			t.Errorf("request %d: options\n got %s\nwant %s", i, got, want)
		}
		if strings.Join(rest, "\n") != strings.Join(wantParts, "\n") {
			t.Errorf("request %d: parts\n%s\nwant\n%s", i, strings.Join(rest, "\n"), strings.Join(wantParts, "\n"))
		}
	}

	// Merge: the same parts, and a signature in options.
	rec.forms = nil
	d, err = c.Merge(ctx, MergeRequest{
		Files: []Upload{UploadBytes("a.pdf", []byte("%PDF-a"))},
		Options: &MergeOptions{Metadata: &Metadata{Title: "Merged"}, RecordOptions: RecordOptions{PDFA: PDFA3B,
			Sign: &Signature{Identity: "acme", Level: SignLevelBT, Reason: "Approved", Visible: &SignatureBox{X: 0, Y: 10, Width: 200, Height: 50}}}},
		Attachments: []Upload{UploadBytes("data.json", []byte("{}"))},
		EInvoiceXML: &Upload{Name: "invoice.xml", ContentType: "application/xml", Open: UploadBytes("", []byte(invoiceXML)).Open},
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Body.Close()
	opts, rest := splitForm(t, rec.forms[0])
	if got, want := canonical(t, opts), `{"metadata":{"title":"Merged"},"pdfa":"3b","sign":{"identity":"acme","level":"B-T","reason":"Approved","visible":{"height":50,"width":200,"x":0,"y":10}}}`; got != want {
		t.Errorf("merge options\n got %s\nwant %s", got, want)
	}
	want := []string{`files a.pdf application/pdf "%PDF-a"`, `attachments data.json application/octet-stream "{}"`,
		`factur-x.xml invoice.xml application/xml ` + fmt.Sprintf("%q", invoiceXML)}
	if strings.Join(rest, "\n") != strings.Join(want, "\n") {
		t.Errorf("merge parts\n%s\nwant\n%s", strings.Join(rest, "\n"), strings.Join(want, "\n"))
	}

	// No §8 options: nothing of them is sent.
	rec.forms = nil
	d, err = c.Generate(ctx, GenerateRequest{Files: []Upload{UploadBytes("index.html", []byte("x"))}, Options: &PDFOptions{Format: "A4"}})
	if err != nil {
		t.Fatal(err)
	}
	d.Body.Close()
	if opts, rest := splitForm(t, rec.forms[0]); canonical(t, opts) != `{"format":"A4"}` || len(rest) != 1 {
		t.Errorf("plain generate: options %s, parts %v", opts, rest)
	}
}

// A batch carries attachments and the e-invoice in JSON (base64 content,
// the XML as text), in its options and a document's own.
func TestRecordOptionsInBatch(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	d, err := c.GenerateBatch(context.Background(), BatchRequest{
		Options: &PDFOptions{PrintOptions: PrintOptions{RecordOptions: RecordOptions{PDFA: PDFA3U,
			Attachments: []EmbeddedFile{{FileName: "data.csv", Content: []byte("a,b\n"), Description: "lines"}}}}},
		Documents: []BatchDocument{
			{FileName: "plain", HTMLContent: "<p>a</p>"},
			{FileName: "invoice", HTMLContent: "<p>b</p>", PrintOptions: &PrintOptions{RecordOptions: RecordOptions{
				EInvoice: &EInvoice{Profile: ProfileBasic, XML: invoiceXML}}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Body.Close()
	b, _ := json.Marshal(rec.jsons[0])
	want := `{"documents":[{"fileName":"plain","htmlContent":"<p>a</p>"},{"einvoice":{"profile":"BASIC","xml":` + mustJSON(invoiceXML) + `},"fileName":"invoice","htmlContent":"<p>b</p>"}],` +
		`"options":{"attachments":[{"content":"YSxiCg==","description":"lines","fileName":"data.csv"}],"pdfa":"3u"}}`
	if got := strings.ReplaceAll(strings.ReplaceAll(string(b), `\u003c`, "<"), `\u003e`, ">"); got != want {
		t.Errorf("batch\n got %s\nwant %s", got, want)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(strings.ReplaceAll(string(b), `\u003c`, "<"), `\u003e`, ">")
}

// Inspect reads the signatures of the answer.
func TestInspectSignatures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"success":true,"data":{"pages":1,"pageSizes":[],"pdfVersion":"1.7","tagged":true,"encrypted":false,` +
			`"pdfa":{"part":"2","conformance":"B"},"pdfua":null,"lang":"en","metadata":{},"fonts":[],"attachments":[],"signatures":[` +
			`{"signer":"ACME Signer","signedAt":"2026-03-01T10:00:00Z","level":"B-T","coversWholeDocument":true,"valid":true,"reason":"Approved"},` +
			`{"signer":"","signedAt":null,"level":null,"coversWholeDocument":false,"valid":false,"reason":""}]}}`))
	}))
	defer srv.Close()
	r, err := newTestClient(t, srv.URL).Inspect(context.Background(), UploadBytes("a.pdf", []byte("%PDF")))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Signatures) != 2 {
		t.Fatalf("signatures %+v", r.Signatures)
	}
	s := r.Signatures[0]
	if s.Signer != "ACME Signer" || s.Level != SignLevelBT || !s.Valid || !s.CoversWholeDocument || s.Reason != "Approved" ||
		s.SignedAt == nil || !s.SignedAt.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("signature %+v", s)
	}
	if s := r.Signatures[1]; s.SignedAt != nil || s.Level != "" || s.Valid {
		t.Errorf("unreadable signature %+v", s)
	}
}

func TestStagesEncode(t *testing.T) {
	o := PrintOptions{RecordOptions: RecordOptions{Stages: []Stage{
		NewStage(StagePages, map[string]any{"select": "2,1"}),
		NewStage(StageWatermark, map[string]any{"text": "DRAFT", "op": "ignored"}),
		NewStage(StagePDFA, map[string]any{"level": PDFA2B}),
	}}}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	want := `"stages":[{"op":"pages","select":"2,1"},{"op":"watermark","text":"DRAFT"},{"level":"2b","op":"pdfa"}]`
	if !strings.Contains(string(b), want) {
		t.Errorf("%s lacks %s", b, want)
	}
}
