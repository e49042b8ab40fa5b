package e2e

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	drclient "github.com/docrender/docrender/client"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/worker/office"
	"github.com/docrender/docrender/worker/office/officetest"
)

// POST /pdf/office (DESIGN §11, issue 26) through the real service: the
// documents written by officetest from code, every answer read back by
// poppler (pdftotext's words, pdfinfo's pages, sizes and metadata).

// needOffice skips where LibreOffice or python3-uno is missing (scripts/setup
// installs them); TestOfficeUnavailable runs anyway.
func needOffice(t *testing.T) {
	t.Helper()
	if err := office.Check(t.Context(), ""); err != nil {
		t.Skip(err)
	}
}

// officeService is one embedded service for the office tests, taking only
// the pdf and office kinds (no Chromium to start).
func officeService(t *testing.T) *service {
	t.Helper()
	needOffice(t)
	return startService(t, func(c *config.Config) { c.WorkerKinds = []string{"pdf", "office"} })
}

func officeFile(name string, data []byte) file {
	return file{Field: "files", Name: name, Type: "application/octet-stream", Data: data}
}

func (c *client) office(files []file, options any) *http.Response {
	c.t.Helper()
	return c.withKey("POST", "/pdf/office", multipartBody(files, options))
}

// letter is a two-page Word document.
func letter(t testing.TB) []byte {
	return officetest.Docx(t, officetest.DocxBody([]officetest.Para{{Text: "Dear customer, LETTERONE"}, {Text: "LETTERTWO second page", BreakPage: true}}), "")
}

func notes(t testing.TB, word string) []byte {
	return officetest.ODT(t, officetest.ODTContent([]string{word + " in OpenDocument"}, ""))
}

// pdfa2b finds a PDF/A-2b claim in XMP (attribute or element form).
var pdfa2b = regexp.MustCompile(`(?s)pdfaid:part(="|>)2\b.*pdfaid:conformance(="|>)B\b|pdfaid:conformance(="|>)B\b.*pdfaid:part(="|>)2\b`)

// inOrder says whether every token appears in s, in order.
func inOrder(s string, tokens ...string) bool {
	at := 0
	for _, tok := range tokens {
		i := strings.Index(s[at:], tok)
		if i < 0 {
			return false
		}
		at += i + len(tok)
	}
	return true
}

// TestOffice: each format converted, one PDF per file (a ZIP for several),
// landscape, pageRanges, merge in upload order, PDF/A-2b, a watermark and
// metadata, host:true; one conversion per document.
func TestOffice(t *testing.T) {
	svc := officeService(t)
	c := newClient(t, svc)
	used := c.usage()

	t.Run("docx", func(t *testing.T) {
		resp := c.office([]file{officeFile("letter.docx", letter(t))}, nil)
		mustStatus(t, resp, http.StatusOK)
		if ct, cd := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"); ct != "application/pdf" || !strings.Contains(cd, "letter.pdf") {
			t.Errorf("answered %q, %q; want application/pdf named letter.pdf", ct, cd)
		}
		pdf := readAll(t, resp)
		if got := info(t, pdf); got.Pages != 2 || got.Width > got.Height {
			t.Errorf("letter: %+v, want 2 portrait pages", got)
		}
		if txt := text(t, pdf); !inOrder(txt, "LETTERONE", "LETTERTWO") {
			t.Errorf("letter text %q", txt)
		}
	})
	t.Run("zip of one pdf per file", func(t *testing.T) {
		files := []file{
			officeFile("figures.xlsx", officetest.Xlsx(t, [][][]string{{{"Revenue", "SHEETONE"}}, {{"Costs", "SHEETTWO"}}, {{"Margin", "SHEETTHREE"}}})),
			officeFile("deck.pptx", officetest.Pptx(t, []string{"Opening SLIDEONE", "Closing SLIDETWO"})),
			officeFile("notes.odt", notes(t, "ODTWORD")),
			officeFile("table.csv", []byte("name,amount\nCSVROW,42\n")),
		}
		resp := c.office(files, map[string]any{"fileName": "converted"})
		mustStatus(t, resp, http.StatusOK)
		if ct, cd, n := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"), resp.Header.Get("X-Files"); ct != "application/zip" || !strings.Contains(cd, "converted.zip") || n != "4" {
			t.Errorf("answered %q, %q, X-Files %q; want a ZIP named converted.zip of 4", ct, cd, n)
		}
		names, entries := unzip(t, readAll(t, resp))
		if strings.Join(names, " ") != "figures.pdf deck.pdf notes.pdf table.pdf" {
			t.Fatalf("entries %v", names)
		}
		for _, want := range []struct {
			name   string
			pages  int
			tokens []string
		}{
			{"figures.pdf", 3, []string{"SHEETONE", "SHEETTWO", "SHEETTHREE"}},
			{"deck.pdf", 2, []string{"SLIDEONE", "SLIDETWO"}},
			{"notes.pdf", 1, []string{"ODTWORD"}},
			{"table.pdf", 1, []string{"CSVROW", "42"}},
		} {
			pdf := entries[want.name]
			if got := info(t, pdf).Pages; got != want.pages {
				t.Errorf("%s: %d pages, want %d", want.name, got, want.pages)
			}
			if txt := text(t, pdf); !inOrder(txt, want.tokens...) {
				t.Errorf("%s: text %q lacks %v", want.name, txt, want.tokens)
			}
		}
	})
	t.Run("landscape and pageRanges", func(t *testing.T) {
		resp := c.office([]file{officeFile("letter.docx", letter(t))}, map[string]any{"landscape": true, "pageRanges": "2"})
		mustStatus(t, resp, http.StatusOK)
		pdf := readAll(t, resp)
		got := info(t, pdf)
		if got.Pages != 1 || got.Width <= got.Height {
			t.Errorf("%+v, want one landscape page", got)
		}
		if txt := text(t, pdf); !strings.Contains(txt, "LETTERTWO") || strings.Contains(txt, "LETTERONE") {
			t.Errorf("page 2 alone expected, text %q", txt)
		}
	})
	t.Run("merge in upload order", func(t *testing.T) {
		files := []file{
			officeFile("c.odt", notes(t, "FIRSTFILE")),
			officeFile("a.docx", letter(t)),
			officeFile("b.pptx", officetest.Pptx(t, []string{"THIRDFILE slide"})),
		}
		resp := c.office(files, map[string]any{"merge": true, "fileName": "bundle"})
		mustStatus(t, resp, http.StatusOK)
		if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "bundle.pdf") {
			t.Errorf("named %q, want bundle.pdf", cd)
		}
		pdf := readAll(t, resp)
		if got := info(t, pdf).Pages; got != 4 {
			t.Errorf("%d pages, want 1+2+1", got)
		}
		if txt := text(t, pdf); !inOrder(txt, "FIRSTFILE", "LETTERONE", "LETTERTWO", "THIRDFILE") {
			t.Errorf("merged text out of order: %q", txt)
		}
	})
	t.Run("pdfa 2b", func(t *testing.T) {
		resp := c.office([]file{officeFile("letter.docx", letter(t))}, map[string]any{"pdfa": "2b"})
		mustStatus(t, resp, http.StatusOK)
		meta := run(t, "pdfinfo", "-meta", writeTemp(t, readAll(t, resp), ".pdf"))
		if !pdfa2b.MatchString(meta) {
			t.Errorf("no PDF/A-2b claim in the XMP:\n%s", meta)
		}
	})
	t.Run("watermark, metadata and pdfa through the steps", func(t *testing.T) {
		opts := map[string]any{"watermark": map[string]any{"text": "WMARKED", "rotation": 0}, "metadata": map[string]any{"title": "Office Title"}, "pdfa": "2b"}
		resp := c.office([]file{officeFile("letter.docx", letter(t))}, opts)
		mustStatus(t, resp, http.StatusOK)
		pdf := readAll(t, resp)
		if got := pdfInfoFields(t, pdf, "")["Title"]; got != "Office Title" {
			t.Errorf("Title %q", got)
		}
		if txt := text(t, pdf); strings.Count(txt, "WMARKED") < 2 {
			t.Errorf("watermark not on both pages: %q", txt)
		}
		if meta := run(t, "pdfinfo", "-meta", writeTemp(t, pdf, ".pdf")); !strings.Contains(meta, "pdfaid:part") {
			t.Errorf("no PDF/A claim after the steps:\n%s", meta)
		}
	})
	t.Run("host", func(t *testing.T) {
		resp := c.office([]file{officeFile("notes.odt", notes(t, "HOSTED"))}, map[string]any{"host": true})
		mustStatus(t, resp, http.StatusOK)
		var res struct{ URL, PdfID, ExpiresAt string }
		decode(t, resp, &res)
		if res.PdfID == "" || !strings.HasSuffix(res.URL, "/api/hosted-pdfs/"+res.PdfID) {
			t.Fatalf("hosted answer %+v", res)
		}
		got, err := http.Get(svc.URL + "/api/hosted-pdfs/" + res.PdfID)
		if err != nil {
			t.Fatal(err)
		}
		mustStatus(t, got, http.StatusOK)
		if txt := text(t, readAll(t, got)); !strings.Contains(txt, "HOSTED") {
			t.Errorf("hosted text %q", txt)
		}
	})
	// docx 1, ZIP 4, landscape 1, merge 3, pdfa 1, steps 1, host 1.
	if got := c.usage() - used; got != 12 {
		t.Errorf("usage grew by %d, want one per document: 12", got)
	}
}

// TestOfficeRefused: what the client must fix is a 400 naming it, before or
// after the queue, and counts nothing.
func TestOfficeRefused(t *testing.T) {
	svc := officeService(t)
	c := newClient(t, svc)
	used := c.usage()
	for _, tc := range []struct {
		name    string
		files   []file
		options any
		field   string
		says    string
	}{
		{"password-protected", []file{officeFile("secret.odt", officetest.EncryptedODT(t, "s3cret"))}, nil, "files", "secret.odt"},
		{"not an office file", []file{officeFile("photo.docx", []byte("\x89PNG\r\n\x1a\nnot a document"))}, nil, "files", "photo.docx"},
		{"unknown format", []file{officeFile("tool.exe", []byte("MZ"))}, nil, "files", "tool.exe"},
		{"one bad among good", []file{officeFile("good.odt", notes(t, "GOOD")), officeFile("bad.xlsx", []byte("plain text"))}, map[string]any{"merge": true}, "files", "bad.xlsx"},
		{"unknown option", []file{officeFile("a.odt", notes(t, "A"))}, map[string]any{"landscpe": true}, "landscpe", "landscpe"},
		{"bad pageRanges", []file{officeFile("a.odt", notes(t, "A"))}, map[string]any{"pageRanges": "two"}, "pageRanges", "pageRanges"},
		{"no files", nil, map[string]any{"merge": true}, "files", "files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := expectError(t, c.office(tc.files, tc.options), http.StatusBadRequest, "BAD_REQUEST")
			if e.Field != tc.field || !strings.Contains(e.Message, tc.says) {
				t.Errorf("field %q, message %q; want field %q naming %q", e.Field, e.Message, tc.field, tc.says)
			}
		})
	}
	if got := c.usage() - used; got != 0 {
		t.Errorf("refused requests counted %d conversions", got)
	}
	// The service still converts after the refusals.
	resp := c.office([]file{officeFile("after.odt", notes(t, "AFTER"))}, nil)
	mustStatus(t, resp, http.StatusOK)
	if txt := text(t, readAll(t, resp)); !strings.Contains(txt, "AFTER") {
		t.Errorf("text %q", txt)
	}
}

// TestOfficeUnavailable (issue 26 item 1): an embedded service whose
// LibreOffice cannot be found takes no office jobs and answers 503 at once,
// in the spec's error shape, saying why.
func TestOfficeUnavailable(t *testing.T) {
	svc := startService(t, func(c *config.Config) {
		c.WorkerKinds = []string{"pdf", "office"}
		c.OfficePath = "/nonexistent/soffice"
	})
	c := newClient(t, svc)
	start := time.Now()
	e := expectError(t, c.office([]file{officeFile("a.odt", []byte("x"))}, nil), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	if !strings.Contains(e.Message, "DOCRENDER_OFFICE_PATH") || !strings.Contains(e.Message, "not an executable LibreOffice") {
		t.Errorf("message %q does not say why", e.Message)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("answered after %v", d)
	}
	if c.usage() != 0 {
		t.Error("a 503 counted a conversion")
	}
}

// TestOfficeScaledOut (DESIGN §1, §11): a gateway with only a chromium
// worker answers 503 at once (no worker of the office kind pulls); once a
// worker of the office kind alone runs, it takes the job.
func TestOfficeScaledOut(t *testing.T) {
	needOffice(t)
	ns := namespace(t)
	data := t.TempDir()
	url, _ := startSplitGateway(t, ns, data)
	startSplitWorkers(t, 1, splitEnv(ns, data, map[string]string{"DOCRENDER_WORKER_KINDS": "chromium"}))
	c := newClient(t, &service{URL: url})
	doc := []file{officeFile("notes.odt", notes(t, "SCALEDOUT"))}

	start := time.Now()
	e := expectError(t, c.office(doc, nil), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	if !strings.Contains(e.Message, "office") {
		t.Errorf("message %q", e.Message)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("503 after %v: the request waited", d)
	}

	workers, _ := startSplitWorkers(t, 1, splitEnv(ns, data, map[string]string{"DOCRENDER_WORKER_KINDS": "office"}))
	resp := c.office(doc, nil)
	mustStatus(t, resp, http.StatusOK)
	if txt := text(t, readAll(t, resp)); !strings.Contains(txt, "SCALEDOUT") {
		t.Errorf("text %q", txt)
	}
	out := workers[0].out.String()
	if !strings.Contains(out, `"msg":"job done"`) || strings.Contains(out, "chromium started") {
		t.Errorf("the office worker did not take the job alone:\n%s", tail(out, 2000))
	}
}

// TestOfficeClientCLI: the Go client's Office and OfficeHosted, and
// `docrender office` (one file, several as a ZIP, --merge, a refusal
// naming the file) against the service.
func TestOfficeClientCLI(t *testing.T) {
	svc := officeService(t)
	user := newClient(t, svc)
	gc, err := drclient.New(svc.URL, drclient.WithAPIKey(user.Key))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	d, err := gc.Office(ctx, drclient.OfficeRequest{
		Files:   []drclient.Upload{drclient.UploadBytes("a.odt", notes(t, "CLIENTONE")), drclient.UploadBytes("b.docx", letter(t))},
		Options: &drclient.OfficeOptions{Merge: true, Landscape: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := io.ReadAll(d.Body)
	d.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := info(t, pdf); got.Pages != 3 || got.Width <= got.Height || !inOrder(text(t, pdf), "CLIENTONE", "LETTERONE") {
		t.Errorf("client merge: %+v, text %q", got, text(t, pdf))
	}
	h, err := gc.OfficeHosted(ctx, drclient.OfficeRequest{Files: []drclient.Upload{drclient.UploadBytes("c.csv", []byte("a,b\n1,2\n"))}})
	if err != nil || h.PdfID == "" {
		t.Fatalf("hosted: %+v, %v", h, err)
	}
	_, err = gc.Office(ctx, drclient.OfficeRequest{Files: []drclient.Upload{drclient.UploadBytes("fake.xlsx", []byte("text"))}})
	var apiErr *drclient.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "fake.xlsx") {
		t.Errorf("bad file: %v", err)
	}

	c := &cli{t: t, bin: buildCLI(t), dir: t.TempDir(), env: map[string]string{"DOCRENDER_URL": svc.URL, "DOCRENDER_API_KEY": user.Key}}
	c.write("memo.odt", string(notes(t, "CLIMEMO")))
	c.write("letter.docx", string(letter(t)))
	c.ok("office", "memo.odt")
	if got := text(t, c.read("memo.pdf")); !strings.Contains(got, "CLIMEMO") {
		t.Errorf("memo.pdf says %q", got)
	}
	c.ok("office", "memo.odt", "letter.docx")
	if names, _ := unzip(t, c.read("documents.zip")); strings.Join(names, " ") != "memo.pdf letter.pdf" {
		t.Errorf("documents.zip holds %v", names)
	}
	c.ok("office", "letter.docx", "memo.odt", "--merge", "--page-ranges", "1", "-o", "both.pdf")
	if pdf := c.read("both.pdf"); info(t, pdf).Pages != 2 || !inOrder(text(t, pdf), "LETTERONE", "CLIMEMO") {
		t.Errorf("both.pdf: %d pages, %q", info(t, pdf).Pages, text(t, pdf))
	}
	c.write("fake.pptx", "not a deck")
	c.wantExit(2, []string{"fake.pptx"}, "office", "fake.pptx")
}

// TestDashboardTryOffice: the dashboard's render form takes office
// documents (issue 26 item 7): a docx and an odt become a ZIP of a PDF
// each, and with {"merge":true} one PDF, in headless Chromium under the
// page's CSP; no script error.
func TestDashboardTryOffice(t *testing.T) {
	svc := officeService(t)
	d := openDashboard(t, svc)
	p := d.p
	d.signUp("office")
	write := tempWriter(t)
	files := []string{write("letter.docx", letter(t)), write("memo.odt", notes(t, "DASHMEMO"))}
	p.MustElement("#render-files").MustSetFiles(files...)
	p.MustElement("#render-submit").MustClick()
	d.waitJS(60*time.Second, `() => document.getElementById('render-link').textContent.startsWith('Download documents.zip')`)

	// The long-document controls left on are of HTML pages: not sent with
	// office files (the office route would refuse them).
	p.MustElement("#render-toc").MustClick()
	p.MustElement("#render-split").MustSelect("always: in slices, printed at once and joined")
	p.MustElement("#render-options").MustInput(`{"merge":true,"fileName":"both"}`)
	p.MustElement("#render-submit").MustClick()
	d.waitJS(60*time.Second, `() => document.getElementById('render-link').textContent.startsWith('Download both.pdf')`)
	if problems := d.takeProblems(); len(problems) > 0 {
		t.Errorf("the page reported %q", problems)
	}
}

// TestOfficeHostile (issue 26 item 4) through the service: a zip bomb
// declaring a gigabyte is a 400 naming it before LibreOffice sees it; one
// under the declared bound that would take LibreOffice minutes is a 500
// within the render timeout, for that request alone: the next document
// converts. Neither counts a conversion.
func TestOfficeHostile(t *testing.T) {
	needOffice(t)
	svc := startService(t, func(c *config.Config) {
		c.WorkerKinds = []string{"pdf", "office"}
		c.RenderTimeout = 3 * time.Second
		hobby := c.Plans["hobby"]
		hobby.MaxPages = 3 // the plan's pages bound office documents too
		c.Plans["hobby"] = hobby
	})
	c := newClient(t, svc)
	tooMany := expectError(t, c.office([]file{officeFile("a.docx", letter(t)), officeFile("b.docx", letter(t))}, map[string]any{"merge": true}),
		http.StatusUnprocessableEntity, "DOCUMENT_TOO_LARGE")
	if !strings.Contains(tooMany.Message, "4 pages") {
		t.Errorf("past the plan's pages: %q", tooMany.Message)
	}
	e := expectError(t, c.office([]file{officeFile("bomb.docx", officetest.BombDocx(t, 1<<30, " "))}, nil), http.StatusBadRequest, "BAD_REQUEST")
	if e.Field != "files" || !strings.Contains(e.Message, "bomb.docx") || !strings.Contains(e.Message, "inflate") {
		t.Errorf("declared bomb: field %q, message %q", e.Field, e.Message)
	}
	start := time.Now()
	e = expectError(t, c.office([]file{officeFile("paragraphs.docx", officetest.BombDocx(t, 200<<20, `<w:p><w:r><w:t>bomb</w:t></w:r></w:p>`))}, nil), http.StatusInternalServerError, "INTERNAL_SERVER_ERROR")
	if d := time.Since(start); d > 20*time.Second || !strings.Contains(e.Message, "paragraphs.docx") {
		t.Errorf("paragraph bomb: %q after %v", e.Message, d)
	}
	resp := c.office([]file{officeFile("next.odt", notes(t, "NEXTDOC"))}, nil)
	mustStatus(t, resp, http.StatusOK)
	if txt := text(t, readAll(t, resp)); !strings.Contains(txt, "NEXTDOC") {
		t.Errorf("next text %q", txt)
	}
	if got := c.usage(); got != 1 {
		t.Errorf("usage %d, want the next document's 1", got)
	}
}
