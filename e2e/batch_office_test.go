package e2e

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/config"
)

// Batch documents carrying office files (DESIGN §11): `office: {fileName,
// content}` instead of htmlContent, converted by a worker of the office
// kind beside the batch's rendered documents.

func officeDoc(fileName, name string, data []byte) map[string]any {
	d := map[string]any{"office": map[string]any{"fileName": name, "content": base64.StdEncoding.EncodeToString(data)}}
	if fileName != "" {
		d["fileName"] = fileName
	}
	return d
}

// TestBatchOffice: an HTML document and a docx in one batch → a ZIP of both
// PDFs with their words, the progress complete, two conversions; the
// batch's options reach the office document too (landscape, watermark).
func TestBatchOffice(t *testing.T) {
	needOffice(t)
	svc := sharedService(t)
	c := newClient(t, svc)
	ds := []map[string]any{
		{"fileName": "page", "htmlContent": docHTML("MARK-0")},
		// Unnamed: named after its file.
		officeDoc("", "letter.docx", letter(t)),
	}
	opts := map[string]any{"landscape": true, "watermark": map[string]any{"text": "DRAFTMARK", "rotation": 0}}
	id := c.startStream(map[string]any{"documents": ds, "batchName": "mixed", "options": opts})
	p, seen := c.waitBatch(id, 2, 3*time.Minute)
	if p.Status != "completed" || p.Current != 2 {
		t.Fatalf("progress %+v (seen %v)", p, seen)
	}
	resp := c.withKey("GET", "/pdf/download/"+id, body{})
	mustStatus(t, resp, http.StatusOK)
	names, entries := unzip(t, readAll(t, resp))
	if len(names) != 2 || names[0] != "page.pdf" || names[1] != "letter.pdf" {
		t.Fatalf("ZIP entries %q", names)
	}
	if txt := text(t, entries["page.pdf"]); !strings.Contains(txt, "MARK-0") || !strings.Contains(txt, "DRAFTMARK") {
		t.Errorf("page.pdf text %q", txt)
	}
	txt := text(t, entries["letter.pdf"])
	if !inOrder(txt, "LETTERONE", "LETTERTWO") || !strings.Contains(txt, "DRAFTMARK") {
		t.Errorf("letter.pdf text %q", txt)
	}
	pi := info(t, entries["letter.pdf"])
	if pi.Pages != 2 || pi.Width <= pi.Height {
		t.Errorf("letter.pdf: %d pages of %.0fx%.0f pt, want 2 landscape", pi.Pages, pi.Width, pi.Height)
	}
	if got := c.usage(); got != 2 {
		t.Errorf("conversions used %d, want 2", got)
	}
}

// TestBatchOfficeBadFile: a file that is not the docx its name says fails
// the batch naming documents[1], and only the HTML document is counted;
// what the gateway can tell is a 400 naming the field.
func TestBatchOfficeBadFile(t *testing.T) {
	needOffice(t)
	svc := sharedService(t)
	c := newClient(t, svc)
	ds := []map[string]any{
		{"fileName": "page", "htmlContent": docHTML("MARK-0")},
		officeDoc("broken", "broken.docx", []byte("this is not a docx")),
	}
	id := c.startStream(map[string]any{"documents": ds})
	p, _ := c.waitBatch(id, 2, 3*time.Minute)
	if p.Status != "error" || !strings.Contains(p.Message, "documents[1]") || !strings.Contains(p.Message, "broken.docx") {
		t.Fatalf("progress %+v, want an error naming documents[1] and its file", p)
	}
	if got := c.usage(); got > 1 {
		t.Errorf("conversions used %d, want at most 1 (the HTML document)", got)
	}

	for _, tc := range []struct {
		name  string
		doc   map[string]any
		field string
	}{
		{"unknown format", officeDoc("a", "picture.png", []byte("\x89PNG")), "documents[1].office.fileName"},
		{"no extension", officeDoc("a", "README", []byte("x")), "documents[1].office.fileName"},
		{"no name", map[string]any{"office": map[string]any{"content": "eA=="}}, "documents[1].office.fileName"},
		{"not base64", map[string]any{"office": map[string]any{"fileName": "a.docx", "content": "not base64!"}}, "documents[1].office.content"},
		{"empty", map[string]any{"office": map[string]any{"fileName": "a.docx", "content": ""}}, "documents[1].office.content"},
		{"beside htmlContent", map[string]any{"fileName": "a", "htmlContent": "<p>x", "office": map[string]any{"fileName": "a.docx", "content": "eA=="}}, "documents[1].office"},
		{"beside url", map[string]any{"fileName": "a", "url": "https://example.com/", "office": map[string]any{"fileName": "a.docx", "content": "eA=="}}, "documents[1].office"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := []map[string]any{{"fileName": "page", "htmlContent": docHTML("MARK-0")}, tc.doc}
			e := expectError(t, c.batch(map[string]any{"documents": ds}), http.StatusBadRequest, "BAD_REQUEST")
			if e.Field != tc.field || !strings.Contains(e.Message, tc.field) {
				t.Errorf("field %q, message %q; want %s named", e.Field, e.Message, tc.field)
			}
		})
	}
}

// TestBatchOfficeNoWorker: a batch with an office document on a service
// whose workers take no office jobs is refused at once with 503 saying
// why, and nothing is counted.
func TestBatchOfficeNoWorker(t *testing.T) {
	svc := startService(t, func(c *config.Config) { c.WorkerKinds = []string{"pdf"} })
	c := newClient(t, svc)
	start := time.Now()
	ds := []map[string]any{officeDoc("a", "a.txt", []byte("hello"))}
	e := expectError(t, c.batch(map[string]any{"documents": ds}), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	if !strings.Contains(e.Message, "office") {
		t.Errorf("message %q does not say why", e.Message)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("answered after %v", d)
	}
	if c.usage() != 0 {
		t.Errorf("a refused batch was counted")
	}
}
