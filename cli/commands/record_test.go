package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recordServer answers generate and merge with a PDF, a batch with its
// start and completion, inspect with a report that has a signature, and
// keeps what each generate, merge or batch request sent.
type recordServer struct {
	mu sync.Mutex
	// options is the last options object (a batch's whole body);
	// parts the last form's other parts, as "field name type content".
	options map[string]any
	parts   []string
}

func (s *recordServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch p := r.URL.Path; {
	case p == "/pdf/generate" || p == "/pdf/merge":
		s.options, s.parts = nil, nil
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "multipart/form-data" {
			http.Error(w, "not multipart", 400)
			return
		}
		mr, _ := r.MultipartReader()
		for {
			part, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(part)
			if part.FormName() == "options" {
				json.Unmarshal(b, &s.options)
				continue
			}
			if part.FormName() != "files" {
				s.parts = append(s.parts, fmt.Sprintf("%s %s %s %s", part.FormName(), part.FileName(), part.Header.Get("Content-Type"), b))
			}
		}
		w.Write([]byte("%PDF ok"))
	case p == "/pdf/generate-batch":
		s.options, s.parts = nil, nil
		json.NewDecoder(r.Body).Decode(&s.options)
		json.NewEncoder(w).Encode(map[string]any{"batchId": "B1", "total": 1})
	case strings.HasSuffix(p, "/stream"):
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(progressEvent("complete", completed)))
	case strings.HasPrefix(p, "/pdf/download/"):
		w.Write([]byte("PK zip"))
	case p == "/pdf/inspect":
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"success":true,"data":{"pages":1,"pageSizes":[],"pdfVersion":"1.7","tagged":true,"encrypted":false,"pdfa":{"part":"2","conformance":"B"},` +
			`"pdfua":null,"lang":"en","metadata":{},"fonts":[],"attachments":[{"fileName":"factur-x.xml","size":9,"mimeType":"text/xml","relationship":"Alternative"}],` +
			`"signatures":[{"signer":"ACME Signer","signedAt":"2026-03-01T10:00:00Z","level":"B-T","coversWholeDocument":true,"valid":true,"reason":"Approved"}]}}`))
	default:
		http.NotFound(w, r)
	}
}

func (s *recordServer) sent(t *testing.T) (string, []string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(s.options)
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(b)), s.parts
}

// The documents-of-record flags become options (combined with --option),
// the files of --attach and --einvoice-xml form parts (render, merge) or
// JSON (batch, where NAME.xml beside NAME.html is the document's own
// e-invoice); inspect prints the signatures.
func TestRecordFlags(t *testing.T) {
	s := &recordServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	page := write("index.html", "<title>t</title><p>x</p>")
	csv := write("lines.csv", "a,b\n")
	notes := write("notes.txt", "hello")
	xml := write("invoice.xml", "<rsm:CrossIndustryInvoice/>")
	pdf := write("a.pdf", "%PDF-1.7")
	write("docs/one.html", "<p>1</p>")
	write("docs/one.xml", "<one/>")
	write("docs/two.html", "<p>2</p>")
	write("plain/one.html", "<p>1</p>")
	out := filepath.Join(dir, "out")

	for _, tc := range []struct {
		name    string
		args    []string
		options string
		parts   []string
	}{
		{"render pdfa pdfua lang", []string{"render", page, "-o", out, "--pdfa", "2u", "--pdfua", "--lang", "en-GB", "--option", "metadata.title=Report"},
			`{"lang":"en-GB","metadata":{"title":"Report"},"pdfa":"2u","pdfua":true}`, nil},
		{"render attachments and e-invoice", []string{"render", page, "-o", out, "--attach", csv, "--attach", notes, "--attachment-relationship", "Source",
			"--einvoice", "EN 16931", "--einvoice-xml", xml},
			`{"attachmentRelationship":"Source","einvoice":{"profile":"EN 16931"}}`,
			[]string{"attachments lines.csv application/octet-stream a,b\n", "attachments notes.txt application/octet-stream hello",
				"factur-x.xml factur-x.xml text/xml <rsm:CrossIndustryInvoice/>"}},
		{"render sign B-T with a visible box", []string{"render", page, "-o", out, "--sign", "acme", "--sign-level", "b-t", "--sign-reason", "Approved",
			"--option", "sign.visible.x=50", "--option", "sign.visible.y=50", "--option", "sign.visible.width=220", "--option", "sign.visible.height=60",
			"--option", "sign.visible.text=Signed by ACME"},
			`{"sign":{"identity":"acme","level":"B-T","reason":"Approved","visible":{"height":60,"text":"Signed by ACME","width":220,"x":50,"y":50}}}`, nil},
		{"merge pdfa with an attachment", []string{"merge", pdf, pdf, "-o", out, "--pdfa", "3b", "--attach", csv, "--sign", "acme", "--sign-location", "Berlin", "--sign-contact", "a@b.c"},
			`{"pdfa":"3b","sign":{"contactInfo":"a@b.c","identity":"acme","location":"Berlin"}}`,
			[]string{"attachments lines.csv application/octet-stream a,b\n"}},
		{"batch: JSON attachments, a document's own e-invoice, the shared one", []string{"batch", filepath.Join(dir, "docs"), "-o", out, "--progress", "none",
			"--pdfa", "3u", "--attach", csv, "--einvoice", "BASIC", "--einvoice-xml", xml},
			`{"documents":[{"einvoice":{"profile":"BASIC","xml":"<one/>"},"fileName":"one","htmlContent":"<p>1</p>"},{"fileName":"two","htmlContent":"<p>2</p>"}],` +
				`"options":{"attachments":[{"content":"YSxiCg==","fileName":"lines.csv"}],"einvoice":{"profile":"BASIC","xml":"<rsm:CrossIndustryInvoice/>"},"pdfa":"3u"},"stream":true}`, nil},
		{"batch: each document's own e-invoice only", []string{"batch", filepath.Join(dir, "docs"), "-o", out, "--progress", "none", "--einvoice", "MINIMUM",
			"--idempotency-key", "k1"},
			"", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			code, _, errOut := runCLI(context.Background(), srv.URL, withKey, tc.args...)
			if tc.name == "batch: each document's own e-invoice only" {
				// two.html has no two.xml and there is no shared XML.
				if code != ExitInput || !strings.Contains(errOut, "two.html has no e-invoice XML") {
					t.Fatalf("exit %d, stderr %q; want %d naming two.html", code, errOut, ExitInput)
				}
				return
			}
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			opts, parts := s.sent(t)
			if opts != tc.options {
				t.Errorf("sent\n %s\nwant\n %s", opts, tc.options)
			}
			if strings.Join(parts, "|") != strings.Join(tc.parts, "|") {
				t.Errorf("parts %q\nwant %q", parts, tc.parts)
			}
		})
	}
	// Every document with its own XML: the options carry no e-invoice.
	os.Remove(out)
	os.Remove(filepath.Join(dir, "docs", "two.html"))
	if code, _, errOut := runCLI(context.Background(), srv.URL, withKey, "batch", filepath.Join(dir, "docs"), "-o", out, "--progress", "none", "--einvoice", "MINIMUM"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if opts, _ := s.sent(t); !strings.Contains(opts, `"documents":[{"einvoice":{"profile":"MINIMUM","xml":"<one/>"}`) || strings.Contains(opts, `"options"`) {
		t.Errorf("sent %s", opts)
	}

	// Mistakes of the command line, before anything is sent.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"render", page, "-o", out, "--einvoice-xml", xml}, ExitUsage, "--einvoice-xml needs --einvoice"},
		{[]string{"render", page, "-o", out, "--sign-level", "B-T"}, ExitUsage, "need --sign IDENTITY"},
		{[]string{"render", page, "-o", out, "--attach", filepath.Join(dir, "nope.csv")}, ExitInput, "--attach"},
		{[]string{"merge", pdf, "-o", out, "--attach", dir}, ExitInput, "is not a file"},
		{[]string{"batch", filepath.Join(dir, "plain"), "--einvoice", "BASIC", "--einvoice-xml", filepath.Join(dir, "nope.xml")}, ExitInput, "--einvoice-xml"},
		{[]string{"render", page, "-o", out, "--pdfua=maybe"}, ExitUsage, "pdfua"},
	} {
		code, _, errOut := runCLI(context.Background(), srv.URL, withKey, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d saying %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}

	// inspect prints the signatures with the rest.
	code, stdout, errOut := runCLI(context.Background(), srv.URL, withKey, "inspect", pdf)
	if code != ExitOK {
		t.Fatalf("inspect: exit %d: %s", code, errOut)
	}
	var got struct {
		Signatures []map[string]any `json:"signatures"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got.Signatures) != 1 || got.Signatures[0]["signer"] != "ACME Signer" ||
		got.Signatures[0]["level"] != "B-T" || got.Signatures[0]["valid"] != true || got.Signatures[0]["coversWholeDocument"] != true {
		t.Errorf("inspect printed %s (%v)", stdout, err)
	}
}
