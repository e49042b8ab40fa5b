package e2e

import (
	"archive/zip"
	"bytes"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// disguised is a file name with a right-to-left override, a zero-width
// space, an isolate and a tab: it would show as something else.
const disguised = "in\u202Evoice\u200B-\u2066Ü\u2069\t"

// hiddenRunes are characters no name the service hands out may carry.
const hiddenRunes = "\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069\u200E\u200F\u061C\u200B\u200C\u200D\u2060\uFEFF\t"

// checkDisposition checks a Content-Disposition header: the given kind,
// the file name want in its UTF-8 form, and no hidden character in either
// form, raw or percent-encoded.
func checkDisposition(t testing.TB, resp *http.Response, kind, want string) {
	t.Helper()
	cd := resp.Header.Get("Content-Disposition")
	k, params, err := mime.ParseMediaType(cd)
	if err != nil || k != kind || params["filename"] != want {
		t.Errorf("Content-Disposition %q: %s %q (%v), want %s with file name %q", cd, k, params["filename"], err, kind, want)
	}
	if strings.ContainsAny(cd, hiddenRunes) || strings.Contains(cd, "%E2%80") || strings.Contains(cd, "%E2%81") || strings.Contains(cd, "%EF%BB%BF") {
		t.Errorf("Content-Disposition %q carries a hidden character", cd)
	}
}

func TestNamesLoseHiddenCharacters(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	const clean = "invoice-Ü"

	t.Run("generate", func(t *testing.T) {
		resp := c.generate([]file{htmlFile("index.html", "<p>names</p>")}, map[string]any{"fileName": disguised})
		mustStatus(t, resp, http.StatusOK)
		checkDisposition(t, resp, "attachment", clean+".pdf")
		resp.Body.Close()
	})

	t.Run("hosted", func(t *testing.T) {
		h := c.host("<p>names</p>", map[string]any{"fileName": disguised + ".pdf"})
		if m := c.metadata(h.PdfID); m.OriginalName != clean+".pdf" {
			t.Errorf("originalName %q", m.OriginalName)
		}
		for path, kind := range map[string]string{
			"/api/hosted-pdfs/" + h.PdfID: "inline",
			"/pdf/view/" + h.PdfID:        "inline",
			"/pdf/download/" + h.PdfID:    "attachment",
		} {
			resp := c.withKey("GET", path, body{})
			mustStatus(t, resp, http.StatusOK)
			checkDisposition(t, resp, kind, clean+".pdf")
			resp.Body.Close()
		}
	})

	t.Run("merge", func(t *testing.T) {
		pdf := c.generatePDF("<p>merge input</p>", nil)
		resp := c.merge([]file{pdfFile("a.pdf", pdf), pdfFile("b.pdf", pdf)}, map[string]any{"fileName": disguised})
		mustStatus(t, resp, http.StatusOK)
		checkDisposition(t, resp, "attachment", clean+".pdf")
		resp.Body.Close()
	})

	t.Run("batch ZIP", func(t *testing.T) {
		resp := c.batch(map[string]any{
			"batchName": "\u202Equarterly\u200B",
			"documents": []map[string]any{
				{"fileName": disguised, "htmlContent": docHTML("MARK-0")},
				{"fileName": "report\u202Efdp.exe", "htmlContent": docHTML("MARK-1")},
				// The same name once cleaned: numbered, not hidden by the first.
				{"fileName": "\uFEFFin\u200Cvoice-Ü", "htmlContent": docHTML("MARK-2")},
			},
		})
		mustStatus(t, resp, http.StatusOK)
		checkDisposition(t, resp, "attachment", "quarterly.zip")
		data := readAll(t, resp)
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range zr.File {
			names = append(names, f.Name)
			if strings.ContainsAny(f.Name, hiddenRunes) {
				t.Errorf("ZIP entry %q carries a hidden character", f.Name)
			}
		}
		want := []string{clean + ".pdf", "reportfdp.exe.pdf", clean + " (2).pdf"}
		if strings.Join(names, "|") != strings.Join(want, "|") {
			t.Errorf("ZIP entries %q, want %q", names, want)
		}
	})

	t.Run("a name of hidden characters only", func(t *testing.T) {
		e := expectError(t, c.generate([]file{htmlFile("index.html", "<p>x</p>")}, map[string]any{"fileName": "\u202E\u200B"}),
			http.StatusBadRequest, apierr.BadRequest)
		if e.Field != "fileName" {
			t.Errorf("field %q", e.Field)
		}
	})
}

// rawPart is one multipart file part whose file name is sent byte for
// byte (mime/multipart would escape it).
func rawPart(name, ctype string, data []byte) string {
	return "--RAW\r\nContent-Disposition: form-data; name=\"files\"; filename=\"" + name + "\"\r\nContent-Type: " + ctype + "\r\n\r\n" + string(data) + "\r\n"
}

// A multipart file name that is not UTF-8 could not travel in a job (it
// was a 500): it is a 400 naming files, and the service goes on.
func TestNonUTF8FileNames(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	pdf := c.generatePDF("<p>merge input</p>", nil)
	html := []byte("<p>latin-1</p>")
	for _, tc := range []struct{ name, path, body string }{
		{"generate, Latin-1 entry", "/pdf/generate", rawPart("r\xe9sum\xe9.html", "text/html", html)},
		{"generate, a Latin-1 asset", "/pdf/generate", rawPart("index.html", "text/html", html) + rawPart("logo-\xff.png", "image/png", []byte("x"))},
		{"generate, RFC 2231 name decoding to bad bytes", "/pdf/generate",
			"--RAW\r\nContent-Disposition: form-data; name=\"files\"; filename*=utf-8''a%FF.html\r\nContent-Type: text/html\r\n\r\n<p>x</p>\r\n"},
		{"merge", "/pdf/merge", rawPart("a.pdf", "application/pdf", pdf) + rawPart("b\xfe.pdf", "application/pdf", pdf)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.withKey("POST", tc.path, body{strings.NewReader(tc.body + "--RAW--\r\n"), "multipart/form-data; boundary=RAW"})
			e := expectError(t, resp, http.StatusBadRequest, apierr.BadRequest)
			if e.Field != "files" || !strings.Contains(e.Message, "UTF-8") {
				t.Errorf("field %q, message %q", e.Field, e.Message)
			}
		})
	}
	// Nothing was charged, and the service renders on.
	if n := c.usage(); n != 1 {
		t.Errorf("conversions used %d, want 1 (the merge input)", n)
	}
	c.generatePDF("<p>after</p>", nil)
}
