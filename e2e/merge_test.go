package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// pagesHTML is a document of one page per token: each page holds its token
// alone, so pdftotext of a page says which page it is.
func pagesHTML(tokens ...string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><style>section{break-after:page;font:32px 'Liberation Sans'}section:last-child{break-after:auto}</style>`)
	for _, tok := range tokens {
		fmt.Fprintf(&b, "<section>%s</section>", tok)
	}
	return b.String()
}

// pageText is pdftotext of page n (1-based) alone.
func pageText(t testing.TB, pdf []byte, n int) string {
	t.Helper()
	p := writeTemp(t, pdf, ".pdf")
	return run(t, "pdftotext", "-f", fmt.Sprint(n), "-l", fmt.Sprint(n), "-layout", p, "-")
}

// checkPageTokens checks that the PDF has exactly len(want) pages and that
// page i holds want[i] and none of the other tokens.
func checkPageTokens(t testing.TB, pdf []byte, want []string) {
	t.Helper()
	if got := info(t, pdf).Pages; got != len(want) {
		t.Fatalf("pdfinfo: %d pages, want %d", got, len(want))
	}
	for i, tok := range want {
		txt := pageText(t, pdf, i+1)
		if !strings.Contains(txt, tok) {
			t.Errorf("page %d: text %q lacks %q", i+1, strings.TrimSpace(txt), tok)
		}
		for _, other := range want {
			if other != tok && strings.Contains(txt, other) {
				t.Errorf("page %d: text %q also holds %q", i+1, strings.TrimSpace(txt), other)
			}
		}
	}
}

// qpdfFile runs qpdf with args (which name files in dir) and returns the
// bytes of out.
func qpdfFile(t testing.TB, dir, out string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("qpdf"); err != nil {
		t.Skip("qpdf not installed (apt-get install -y qpdf)")
	}
	cmd := exec.Command("qpdf", append(args, out)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("qpdf %v: %v\n%s", args, err, b)
	}
	b, err := os.ReadFile(filepath.Join(dir, out))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pdfFile(name string, data []byte) file {
	return file{Field: "files", Name: name, Type: "application/pdf", Data: data}
}

// merge posts files and options to /pdf/merge.
func (c *client) merge(files []file, options any) *http.Response {
	c.t.Helper()
	return c.withKey("POST", "/pdf/merge", multipartBody(files, options))
}

// mergeFixtures are the PDFs the merge tests share: two from our own
// generate and two written by qpdf from them (object streams, reordered
// pages), rendered once per test binary.
type mergeFixtures struct {
	alpha, bravo []byte // generate: ALPHA1 ALPHA2 / BRAVO1
	reversed     []byte // qpdf --empty --pages alpha 2,1 --
	objStreams   []byte // qpdf --object-streams=generate on bravo
	dir          string
}

var (
	mergeFixOnce sync.Once
	mergeFix     mergeFixtures
)

func fixtures(t *testing.T, c *client) mergeFixtures {
	t.Helper()
	mergeFixOnce.Do(func() {
		mergeFix.alpha = c.generatePDF(pagesHTML("ALPHA1", "ALPHA2"), nil)
		mergeFix.bravo = c.generatePDF(pagesHTML("BRAVO1"), nil)
		dir, err := os.MkdirTemp("", "docrender-merge-")
		if err != nil {
			t.Fatal(err)
		}
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
		mergeFix.dir = dir
		for name, b := range map[string][]byte{"alpha.pdf": mergeFix.alpha, "bravo.pdf": mergeFix.bravo} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		mergeFix.reversed = qpdfFile(t, dir, "reversed.pdf", "--empty", "--pages", "alpha.pdf", "2,1", "--")
		mergeFix.objStreams = qpdfFile(t, dir, "objstm.pdf", "--object-streams=generate", "bravo.pdf")
	})
	if mergeFix.objStreams == nil {
		t.Fatal("merge fixtures failed in an earlier test")
	}
	return mergeFix
}

func TestMergeOrderAndPageCount(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	fx := fixtures(t, c)
	before := c.usage()

	resp := c.merge([]file{
		pdfFile("alpha.pdf", fx.alpha),
		pdfFile("reversed.pdf", fx.reversed),
		pdfFile("objstm.pdf", fx.objStreams),
		// The same name twice is a legitimate merge (a repeated cover page).
		pdfFile("alpha.pdf", fx.alpha),
	}, nil)
	mustStatus(t, resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != "application/pdf" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, `filename="merged-document.pdf"`) {
		t.Errorf("Content-Disposition %q, want the default name merged-document.pdf", cd)
	}
	if p := resp.Header.Get("X-PDF-Pages"); p != "7" {
		t.Errorf("X-PDF-Pages %q, want 7", p)
	}
	pdf := readAll(t, resp)
	checkPageTokens(t, pdf, []string{"ALPHA1", "ALPHA2", "ALPHA2", "ALPHA1", "BRAVO1", "ALPHA1", "ALPHA2"})
	// qpdf, the independent reader, must find nothing to complain about.
	if out, err := exec.Command("qpdf", "--check", writeTemp(t, pdf, ".pdf")).CombinedOutput(); err != nil {
		t.Errorf("qpdf --check: %v\n%s", err, out)
	}
	if got := c.usage(); got != before+1 {
		t.Errorf("conversions %d → %d, a merge counts one", before, got)
	}
}

func TestMergeFileName(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	fx := fixtures(t, c)
	resp := c.merge([]file{pdfFile("b.pdf", fx.bravo)}, map[string]any{"fileName": "report-2024"})
	mustStatus(t, resp, http.StatusOK)
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, `filename="report-2024.pdf"`) {
		t.Errorf("Content-Disposition %q", cd)
	}
	checkPageTokens(t, readAll(t, resp), []string{"BRAVO1"})
}

// TestMergeBadInputs: every unusable part is a 400 naming the file, never a
// 500, no conversion is counted, and the service merges fine afterwards.
func TestMergeBadInputs(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	fx := fixtures(t, c)
	encrypted := qpdfFile(t, fx.dir, "enc.pdf", "--encrypt", "u", "o", "256", "--", "alpha.pdf")
	corrupt := append([]byte("%PDF-1.7\n"), []byte(strings.Repeat("garbage \x00\xff obj << /Type /Page >> endobj\n", 200))...)
	tests := []struct {
		name   string
		data   []byte
		reason string // part of the message besides the name
	}{
		{"truncated.pdf", fx.alpha[:len(fx.alpha)/2], ""},
		{"encrypted.pdf", encrypted, "encrypted"},
		{"notes-as.pdf", []byte("These are plain text notes, not a PDF.\n"), "not a PDF"},
		{"garbage.pdf", corrupt, ""},
		{"empty.pdf", nil, "empty"},
		{"picture.png", tinyPNG(t), "not a PDF"},
	}
	before := c.usage()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The bad file in the middle: the good ones around it do not hide it.
			resp := c.merge([]file{pdfFile("good.pdf", fx.bravo), pdfFile(tc.name, tc.data), pdfFile("good2.pdf", fx.alpha)}, nil)
			e := expectError(t, resp, http.StatusBadRequest, apierr.BadRequest)
			t.Logf("message: %s", e.Message)
			if !strings.Contains(e.Message, `"`+tc.name+`"`) {
				t.Errorf("message %q does not name %q", e.Message, tc.name)
			}
			if !strings.Contains(e.Message, tc.reason) {
				t.Errorf("message %q does not say %q", e.Message, tc.reason)
			}
			if strings.Contains(e.Message, "good") {
				t.Errorf("message %q blames a good file", e.Message)
			}
		})
	}
	if got := c.usage(); got != before {
		t.Errorf("conversions %d → %d after failed merges, want unchanged", before, got)
	}
	resp := c.merge([]file{pdfFile("a.pdf", fx.alpha), pdfFile("b.pdf", fx.bravo)}, nil)
	mustStatus(t, resp, http.StatusOK)
	checkPageTokens(t, readAll(t, resp), []string{"ALPHA1", "ALPHA2", "BRAVO1"})
}

func TestMergeBadRequests(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	noPDFs := "No PDF files were provided for merging"
	tests := []struct {
		name    string
		body    body
		message string
		field   string
	}{
		{"no files", multipartBody(nil, map[string]any{"fileName": "x"}), noPDFs, ""},
		{"files under another key", multipartBody([]file{{Field: "pdfs", Name: "a.pdf", Data: []byte("%PDF-1.4")}}, nil), noPDFs, ""},
		{"JSON instead of multipart", jsonBody(map[string]any{"files": []string{"a.pdf"}}), "multipart/form-data", ""},
		{"options not JSON", multipartBody([]file{pdfFile("a.pdf", []byte("%PDF-1.4"))}, "{host:"), "Invalid JSON", ""},
		{"bad fileName", multipartBody([]file{pdfFile("a.pdf", []byte("%PDF-1.4"))}, map[string]any{"fileName": "  "}), "fileName", "fileName"},
		{"bad host type", multipartBody([]file{pdfFile("a.pdf", []byte("%PDF-1.4"))}, `{"host":"yes"}`), "host", "host"},
		{"bad watermark", multipartBody([]file{pdfFile("a.pdf", []byte("%PDF-1.4"))}, map[string]any{"watermark": map[string]any{"text": "X", "opacity": 2}}), "watermark.opacity", "watermark.opacity"},
	}
	before := c.usage()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := expectError(t, c.withKey("POST", "/pdf/merge", tc.body), http.StatusBadRequest, apierr.BadRequest)
			if !strings.Contains(e.Message, tc.message) {
				t.Errorf("message %q lacks %q", e.Message, tc.message)
			}
			if e.Field != tc.field {
				t.Errorf("field %q, want %q", e.Field, tc.field)
			}
		})
	}
	if got := c.usage(); got != before {
		t.Errorf("conversions %d → %d after refused merges", before, got)
	}
	t.Run("only files that are not PDFs", func(t *testing.T) {
		files := []file{
			{Field: "files", Name: "notes.txt", Type: "text/plain", Data: []byte("plain text")},
			{Field: "files", Name: "logo.png", Type: "image/png", Data: tinyPNG(t)},
		}
		e := expectError(t, c.merge(files, nil), http.StatusBadRequest, apierr.BadRequest)
		got, _ := json.Marshal(e.Raw["receivedFiles"])
		want := `[{"mimetype":"text/plain","name":"notes.txt"},{"mimetype":"image/png","name":"logo.png"}]`
		if !strings.Contains(e.Message, noPDFs) || string(got) != want {
			t.Errorf("message %q, receivedFiles %s: want %q and %s", e.Message, got, noPDFs, want)
		}
	})
	t.Run("no key", func(t *testing.T) {
		resp, err := http.Post(svc.URL+"/pdf/merge", "multipart/form-data; boundary=x", strings.NewReader("--x--\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		expectError(t, resp, http.StatusUnauthorized, apierr.Unauthorized)
	})
}

// TestMergeHosted: host:true answers the 2.2 shape (DESIGN §4.7) and the
// URL serves the merged PDF.
func TestMergeHosted(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	fx := fixtures(t, c)
	resp := c.merge([]file{pdfFile("b.pdf", fx.bravo), pdfFile("a.pdf", fx.alpha)}, map[string]any{"host": true, "fileName": "bundle"})
	mustStatus(t, resp, http.StatusOK)
	raw := readAll(t, resp)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("body %s: %v", raw, err)
	}
	var res struct{ URL, PdfID, ExpiresAt string }
	if err := json.Unmarshal(raw, &res); err != nil || len(m) != 3 || res.PdfID == "" || res.ExpiresAt == "" {
		t.Fatalf("body %s, want exactly url, pdfId, expiresAt", raw)
	}
	// The shared service's base URL is the configured one, not its test
	// port: check the path, fetch from the test address.
	path := "/api/hosted-pdfs/" + res.PdfID
	if !strings.HasSuffix(res.URL, path) || !strings.HasPrefix(res.URL, "http") {
		t.Errorf("url %q, want {base_url}%s", res.URL, path)
	}
	got, err := http.Get(svc.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, got, http.StatusOK)
	if cd := got.Header.Get("Content-Disposition"); !strings.Contains(cd, "bundle.pdf") {
		t.Errorf("hosted Content-Disposition %q", cd)
	}
	checkPageTokens(t, readAll(t, got), []string{"BRAVO1", "ALPHA1", "ALPHA2"})
}
