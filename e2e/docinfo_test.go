package e2e

import (
	"errors"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// DESIGN §6 metadata and encryption, end to end: the options reach the
// worker, which sets the document information and then encrypts; poppler
// and qpdf, the independent readers, check what a client receives.

// pdfInfoFields is pdfinfo's "Key: value" lines of pdf, in UTF-8, opened
// with user password upw ("" for none).
func pdfInfoFields(t testing.TB, pdf []byte, upw string) map[string]string {
	t.Helper()
	args := []string{"-enc", "UTF-8"}
	if upw != "" {
		args = append(args, "-upw", upw)
	}
	out := run(t, "pdfinfo", append(args, writeTemp(t, pdf, ".pdf"))...)
	fields := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

// exitStatus runs a tool and returns its exit code and output.
func exitStatus(t testing.TB, name string, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("%s: %v", name, err)
	return 0, ""
}

// encryption is what a client asked for, to check a PDF against.
type encryption struct {
	user, owner         string
	print, copy, modify bool
	pages               int
	tokens              []string // text the user password reveals
	wantInfo            map[string]string
}

// checkEncrypted checks pdf with qpdf and poppler against e: AES-256 of
// revision 6, the permissions asked for, the user password needed (when
// there is one) and sufficient, a wrong one refused, and the document
// information readable once opened.
func checkEncrypted(t *testing.T, pdf []byte, e encryption) {
	t.Helper()
	if _, err := exec.LookPath("qpdf"); err != nil {
		t.Skip("qpdf not installed (apt-get install -y qpdf)")
	}
	path := writeTemp(t, pdf, ".pdf")
	// qpdf --requires-password: 0 a password is required, 3 it opens without.
	want := 0
	if e.user == "" {
		want = 3
	}
	if code, out := exitStatus(t, "qpdf", "--requires-password", path); code != want {
		t.Errorf("qpdf --requires-password: exit %d, want %d\n%s", code, want, out)
	}
	if code, out := exitStatus(t, "qpdf", "--requires-password", "--password="+e.user, path); code != 3 {
		t.Errorf("qpdf --requires-password with the user password: exit %d, want 3\n%s", code, out)
	}
	show := run(t, "qpdf", "--password="+e.owner, "--show-encryption", path)
	allowed := func(b bool) string {
		if b {
			return "allowed"
		}
		return "not allowed"
	}
	for _, line := range []string{"R = 6", "stream encryption method: AESv3", "string encryption method: AESv3",
		"print high resolution: " + allowed(e.print), "extract for any purpose: " + allowed(e.copy),
		"modify anything: " + allowed(e.modify), "modify other: " + allowed(e.modify)} {
		if !slices.Contains(strings.Split(show, "\n"), line) {
			t.Errorf("qpdf --show-encryption lacks %q:\n%s", line, show)
		}
	}
	if code, out := exitStatus(t, "qpdf", "--password="+e.owner, "--check", path); code != 0 {
		t.Errorf("qpdf --check with the owner password: exit %d\n%s", code, out)
	}

	fields := pdfInfoFields(t, pdf, e.user)
	if fields["Pages"] != strconv.Itoa(e.pages) {
		t.Errorf("pdfinfo: %s pages, want %d", fields["Pages"], e.pages)
	}
	for k, v := range e.wantInfo {
		if fields[k] != v {
			t.Errorf("pdfinfo %s = %q, want %q", k, fields[k], v)
		}
	}
	txt := run(t, "pdftotext", "-upw", e.user, path, "-")
	for _, tok := range e.tokens {
		if !strings.Contains(txt, tok) {
			t.Errorf("pdftotext -upw: text lacks %q", tok)
		}
	}
	if e.user != "" {
		if code, _ := exitStatus(t, "pdftotext", "-upw", "wrong"+e.user, path, "-"); code == 0 {
			t.Error("pdftotext opened it with a wrong password")
		}
		if code, _ := exitStatus(t, "pdfinfo", path); code == 0 {
			t.Error("pdfinfo opened it without a password")
		}
	}
}

var fullMetadata = map[string]any{
	"title": "Quarterly Figures", "author": "Jane Doe", "subject": "Q3 2024",
	"keywords": []string{"finance", "quarterly"}, "creator": "Ledger 9000",
}

var fullInfo = map[string]string{
	"Title": "Quarterly Figures", "Author": "Jane Doe", "Subject": "Q3 2024",
	"Keywords": "finance, quarterly", "Creator": "Ledger 9000",
}

func TestDocInfoGenerate(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	titled := `<!doctype html><title>Title From HTML</title>` + pagesHTML("INFOPAGE1", "INFOPAGE2")

	t.Run("metadata and encryption", func(t *testing.T) {
		resp := c.generate([]file{htmlFile("index.html", titled)}, map[string]any{
			"metadata":   fullMetadata,
			"encryption": map[string]any{"userPassword": "let me in", "ownerPassword": "the owner", "allowCopying": false},
		})
		mustStatus(t, resp, http.StatusOK)
		// The render report counts the pages although the PDF is encrypted.
		if r := resp.Header.Get("Docrender-Render-Report"); !strings.HasPrefix(r, "pages=2,") {
			t.Errorf("Docrender-Render-Report %q, want pages=2", r)
		}
		pdf := readAll(t, resp)
		checkEncrypted(t, pdf, encryption{user: "let me in", owner: "the owner", print: true, copy: false, modify: false,
			pages: 2, tokens: []string{"INFOPAGE1", "INFOPAGE2"}, wantInfo: fullInfo})
	})
	t.Run("no user password: opens, permissions apply", func(t *testing.T) {
		pdf := c.generatePDF(titled, map[string]any{
			"encryption": map[string]any{"ownerPassword": "the owner", "allowPrinting": false, "allowModifying": true},
		})
		checkEncrypted(t, pdf, encryption{owner: "the owner", print: false, copy: true, modify: true,
			pages: 2, tokens: []string{"INFOPAGE1"}, wantInfo: map[string]string{"Title": "Title From HTML"}})
	})
	t.Run("title defaults to <title>", func(t *testing.T) {
		pdf := c.generatePDF(titled, map[string]any{"metadata": map[string]any{"author": "Only Author", "keywords": "one keyword"}})
		fields := pdfInfoFields(t, pdf, "")
		for k, v := range map[string]string{"Title": "Title From HTML", "Author": "Only Author", "Keywords": "one keyword", "Encrypted": "no"} {
			if fields[k] != v {
				t.Errorf("pdfinfo %s = %q, want %q", k, fields[k], v)
			}
		}
		if !strings.Contains(fields["Creator"], "Chrom") {
			t.Errorf("Creator %q: Chromium's was lost", fields["Creator"])
		}
	})
	t.Run("metadata overrides <title>", func(t *testing.T) {
		fields := pdfInfoFields(t, c.generatePDF(titled, map[string]any{"metadata": fullMetadata}), "")
		for k, v := range fullInfo {
			if fields[k] != v {
				t.Errorf("pdfinfo %s = %q, want %q", k, fields[k], v)
			}
		}
	})
}

func TestDocInfoMerge(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	fx := fixtures(t, c)
	resp := c.merge([]file{pdfFile("a.pdf", fx.alpha), pdfFile("b.pdf", fx.bravo)}, map[string]any{
		"metadata":   fullMetadata,
		"encryption": map[string]any{"userPassword": "merge user", "ownerPassword": "merge owner", "allowPrinting": false},
		"watermark":  map[string]any{"text": "MERGEMARK", "rotation": 0},
	})
	mustStatus(t, resp, http.StatusOK)
	if p := resp.Header.Get("X-PDF-Pages"); p != "3" {
		t.Errorf("X-PDF-Pages %q, want 3", p)
	}
	checkEncrypted(t, readAll(t, resp), encryption{user: "merge user", owner: "merge owner", print: false, copy: true,
		pages: 3, tokens: []string{"ALPHA1", "ALPHA2", "BRAVO1", "MERGEMARK"}, wantInfo: fullInfo})

	// An encrypted input is still refused, our own output included.
	enc := c.generatePDF(pagesHTML("LOCKED"), map[string]any{"encryption": map[string]any{"userPassword": "u", "ownerPassword": "o"}})
	e := expectError(t, c.merge([]file{pdfFile("a.pdf", fx.alpha), pdfFile("locked.pdf", enc)}, nil), http.StatusBadRequest, apierr.BadRequest)
	if !strings.Contains(e.Message, "locked.pdf") || !strings.Contains(e.Message, "encrypted") {
		t.Errorf("message %q does not name the encrypted input", e.Message)
	}
}

// TestDocInfoBatch: every PDF in a batch's ZIP is encrypted as it came out
// of its render.
func TestDocInfoBatch(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	req := map[string]any{
		"documents": []map[string]any{
			{"fileName": "first", "htmlContent": `<title>First Doc</title>` + pagesHTML("BATCHINFO1")},
			{"fileName": "second", "htmlContent": pagesHTML("BATCHINFO2", "BATCHINFO3")},
		},
		"options": map[string]any{
			"metadata":   map[string]any{"author": "Batch Author"},
			"encryption": map[string]any{"userPassword": "batch user", "ownerPassword": "batch owner"},
		},
	}
	resp := c.withKey("POST", "/pdf/generate-batch", jsonBody(req))
	mustStatus(t, resp, http.StatusOK)
	entries := zipEntries(t, readAll(t, resp))
	first, second := entries["first.pdf"], entries["second.pdf"]
	if first == nil || second == nil {
		t.Fatalf("ZIP entries %v, want first.pdf and second.pdf", slices.Sorted(maps.Keys(entries)))
	}
	e := encryption{user: "batch user", owner: "batch owner", print: true, copy: true}
	e.pages, e.tokens, e.wantInfo = 1, []string{"BATCHINFO1"}, map[string]string{"Title": "First Doc", "Author": "Batch Author"}
	checkEncrypted(t, first, e)
	e.pages, e.tokens, e.wantInfo = 2, []string{"BATCHINFO2", "BATCHINFO3"}, map[string]string{"Author": "Batch Author"}
	checkEncrypted(t, second, e)
}
