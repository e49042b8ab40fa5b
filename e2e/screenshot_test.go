package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/webp"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// POST /pdf/screenshot and POST /pdf/markdown (DESIGN §11) through the
// real service: images decoded by Go's decoders, their size and pixels
// checked against what the page paints; PDFs read back by pdftotext,
// qpdf and pdfimages.

// screenshot posts a screenshot request.
func (c *client) screenshot(files []file, options any) *http.Response {
	c.t.Helper()
	return c.withKey("POST", "/pdf/screenshot", multipartBody(files, options))
}

// markdownPDF posts a Markdown request.
func (c *client) markdownPDF(files []file, options any) *http.Response {
	c.t.Helper()
	return c.withKey("POST", "/pdf/markdown", multipartBody(files, options))
}

// shotPage paints a known picture: a blue page, a green box 50 × 40 at
// (100, 200), a red one at the bottom of a page 3000 pixels tall.
const shotPage = `<!doctype html><html><head><style>
html,body{margin:0;background:rgb(0,128,255)}
#g{position:absolute;left:100px;top:200px;width:50px;height:40px;background:rgb(0,200,0)}
#r{position:absolute;left:0;top:2950px;width:100%;height:50px;background:rgb(255,0,0)}
</style></head><body><div id="g"></div><div id="r"></div></body></html>`

// transparentPage paints nothing but a red box 20 × 20 at the top left.
const transparentPage = `<!doctype html><html><head><style>html,body{margin:0}
#r{width:20px;height:20px;background:rgb(255,0,0)}</style></head><body><div id="r"></div></body></html>`

// lateScript turns the page shotGreen and adds #ready after 300 ms: a capture
// that did not wait shows white.
const lateScript = `<!doctype html><html><head><style>html,body{margin:0}</style></head><body><script>
setTimeout(() => { document.body.style.background = 'rgb(0,200,0)'; const d = document.createElement('div'); d.id = 'ready'; document.body.append(d) }, 300)
</script></body></html>`

// shot is a screenshot answer decoded.
type shot struct {
	img  image.Image
	resp *http.Response
}

// decodeShot checks the answer's type and decodes its image.
func decodeShot(t *testing.T, resp *http.Response, ctype string) shot {
	t.Helper()
	mustStatus(t, resp, http.StatusOK)
	if got := resp.Header.Get("Content-Type"); got != ctype {
		t.Errorf("Content-Type %q, want %q", got, ctype)
	}
	decoders := map[string]func(io.Reader) (image.Image, error){"image/png": png.Decode, "image/jpeg": jpeg.Decode, "image/webp": webp.Decode}
	img, err := decoders[ctype](bytes.NewReader(readAll(t, resp)))
	if err != nil {
		t.Fatalf("decode %s: %v", ctype, err)
	}
	return shot{img: img, resp: resp}
}

// size checks the image's pixel size.
func (s shot) size(t *testing.T, w, h int) {
	t.Helper()
	if b := s.img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("image %d × %d, want %d × %d", b.Dx(), b.Dy(), w, h)
	}
}

// colour checks the pixel at (x, y) within tolerance (lossy formats).
func (s shot) colour(t *testing.T, x, y int, want color.NRGBA, tolerance int) {
	t.Helper()
	got := color.NRGBAModel.Convert(s.img.At(x, y)).(color.NRGBA)
	near := func(a, b uint8) bool { d := int(a) - int(b); return d <= tolerance && -d <= tolerance }
	if !near(got.R, want.R) || !near(got.G, want.G) || !near(got.B, want.B) || !near(got.A, want.A) {
		t.Errorf("pixel (%d, %d) is %v, want %v (±%d)", x, y, got, want, tolerance)
	}
}

var (
	shotBlue  = color.NRGBA{0, 128, 255, 255}
	shotGreen = color.NRGBA{0, 200, 0, 255}
	shotRed   = color.NRGBA{255, 0, 0, 255}
	shotClear = color.NRGBA{0, 0, 0, 0}
)

// TestScreenshot: PNG, JPEG and WebP of the view, the full page and a
// clip, each decoded, its size what was asked and its pixels what the page
// paints; transparency; the waits of DESIGN §6; a page by URL; host:true.
// One conversion each.
func TestScreenshot(t *testing.T) {
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, shotPage)
	}))
	t.Cleanup(pages.Close)
	svc := startService(t, func(cfg *configT) {
		cfg.RenderAllowHosts = []string{strings.TrimPrefix(pages.URL, "http://")}
	})
	c := newClient(t, svc)
	page := []file{htmlFile("index.html", shotPage)}
	used := c.usage()
	served := 0
	post := func(files []file, options any) *http.Response {
		served++
		return c.screenshot(files, options)
	}

	t.Run("png view", func(t *testing.T) {
		s := decodeShot(t, post(page, nil), "image/png")
		s.size(t, 1280, 800)
		s.colour(t, 10, 10, shotBlue, 0)
		s.colour(t, 120, 220, shotGreen, 0)
		if cd := s.resp.Header.Get("Content-Disposition"); !strings.Contains(cd, `filename="screenshot.png"`) {
			t.Errorf("Content-Disposition %q", cd)
		}
		if h := s.resp.Header.Get("Docrender-Render-Report"); !strings.Contains(h, "renderMs=") {
			t.Errorf("Docrender-Render-Report %q", h)
		}
	})
	t.Run("jpeg viewport", func(t *testing.T) {
		s := decodeShot(t, post(page, map[string]any{"format": "jpeg", "quality": 90, "width": 640, "height": 480, "fileName": "shot"}), "image/jpeg")
		s.size(t, 640, 480)
		s.colour(t, 10, 10, shotBlue, 12)
		s.colour(t, 125, 220, shotGreen, 12)
	})
	t.Run("webp full page", func(t *testing.T) {
		s := decodeShot(t, post(page, map[string]any{"format": "webp", "fullPage": true, "width": 600, "height": 400}), "image/webp")
		s.size(t, 600, 3000)
		// WebP is lossy (Chromium's encoder, quality 80 by default): its
		// colours come back near, not exact.
		s.colour(t, 10, 10, shotBlue, 20)
		s.colour(t, 300, 2975, shotRed, 20)
	})
	t.Run("png clip", func(t *testing.T) {
		// The box, below a view 150 pixels tall: a clip reaches past the view.
		s := decodeShot(t, post(page, map[string]any{"clip": map[string]any{"x": 90, "y": 190, "width": 70, "height": 60}, "height": 150}), "image/png")
		s.size(t, 70, 60)
		s.colour(t, 2, 2, shotBlue, 0)
		s.colour(t, 35, 30, shotGreen, 0)
	})
	for _, format := range []string{"png", "webp"} {
		t.Run("omitBackground "+format, func(t *testing.T) {
			s := decodeShot(t, post([]file{htmlFile("index.html", transparentPage)}, map[string]any{"format": format, "omitBackground": true, "width": 100, "height": 100}), "image/"+format)
			s.size(t, 100, 100)
			s.colour(t, 10, 10, shotRed, 20)
			s.colour(t, 60, 60, shotClear, 0)
		})
	}
	t.Run("opaque by default", func(t *testing.T) {
		s := decodeShot(t, post([]file{htmlFile("index.html", transparentPage)}, map[string]any{"width": 100, "height": 100}), "image/png")
		s.colour(t, 60, 60, color.NRGBA{255, 255, 255, 255}, 0)
	})
	t.Run("waitForSelector", func(t *testing.T) {
		s := decodeShot(t, post([]file{htmlFile("index.html", lateScript)}, map[string]any{"waitForSelector": "#ready", "width": 200, "height": 100}), "image/png")
		s.colour(t, 100, 50, shotGreen, 0)
	})
	t.Run("url", func(t *testing.T) {
		served++
		resp := c.urlScreenshot(pages.URL+"/page", map[string]any{"width": 400, "height": 300})
		s := decodeShot(t, resp, "image/png")
		s.size(t, 400, 300)
		s.colour(t, 120, 220, shotGreen, 0)
	})
	t.Run("hosted", func(t *testing.T) {
		resp := post(page, map[string]any{"host": true, "fileName": "front", "format": "jpeg"})
		mustStatus(t, resp, http.StatusOK)
		var res struct {
			URL, PdfID string
			Report     *struct{ RenderMs *int64 }
		}
		decode(t, resp, &res)
		if res.PdfID == "" || res.Report == nil || res.Report.RenderMs == nil {
			t.Fatalf("hosted answer %+v", res)
		}
		got, err := http.Get(svc.URL + "/api/hosted-pdfs/" + res.PdfID)
		if err != nil {
			t.Fatal(err)
		}
		if cd := got.Header.Get("Content-Disposition"); !strings.Contains(cd, "front.jpg") {
			t.Errorf("hosted as %q", cd)
		}
		decodeShot(t, got, "image/jpeg").size(t, 1280, 800)
	})
	if n := c.usage(); n != used+int64(served) {
		t.Errorf("conversions used %d, want %d: one a screenshot", n, used+int64(served))
	}
}

// urlScreenshot posts a screenshot of the page at url.
func (c *client) urlScreenshot(url string, options any) *http.Response {
	c.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("url", url)
	b, _ := json.Marshal(options)
	_ = w.WriteField("options", string(b))
	w.Close()
	return c.withKey("POST", "/pdf/screenshot", body{&buf, w.FormDataContentType()})
}

// TestScreenshotRefused: what cannot be captured is a 400 in shape A
// naming the field, counts nothing, and the next request is served.
func TestScreenshotRefused(t *testing.T) {
	c := newClient(t, sharedService(t))
	page := []file{htmlFile("index.html", shotPage)}
	huge := []file{htmlFile("index.html", `<!doctype html><body style="margin:0"><div style="height:1000000px;background:#eee"></div></body>`)}
	used := c.usage()
	cases := []struct {
		name    string
		files   []file
		options any
		field   string
	}{
		{"format gif", page, map[string]any{"format": "gif"}, "format"},
		{"quality 0", page, map[string]any{"format": "jpeg", "quality": 0}, "quality"},
		{"quality of a png", page, map[string]any{"quality": 80}, "quality"},
		{"jpeg without a background", page, map[string]any{"format": "jpeg", "omitBackground": true}, "omitBackground"},
		{"width 100000", page, map[string]any{"width": 100000}, "width"},
		{"height 0", page, map[string]any{"height": 0}, "height"},
		{"too many pixels", page, map[string]any{"width": 4096, "height": 16384}, "height"},
		{"clip negative", page, map[string]any{"clip": map[string]any{"x": -1, "y": 0, "width": 10, "height": 10}}, "clip"},
		{"clip and fullPage", page, map[string]any{"fullPage": true, "clip": map[string]any{"x": 0, "y": 0, "width": 10, "height": 10}}, "clip"},
		{"clip outside the page", page, map[string]any{"clip": map[string]any{"x": 0, "y": 5000, "width": 100, "height": 100}}, "clip"},
		{"full page of a million pixels", huge, map[string]any{"fullPage": true}, "fullPage"},
		{"unknown option", page, map[string]any{"margin": "1cm"}, "margin"},
		{"mistyped option", page, `{"fullPage":"yes"}`, "fullPage"},
		{"bad wait", page, map[string]any{"waitDelay": "soon"}, "waitDelay"},
		{"no index.html", []file{{Name: "notes.txt", Type: "text/plain", Data: []byte("hello")}}, nil, "files"},
		{"no file", nil, nil, "files"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := expectError(t, c.screenshot(tc.files, tc.options), http.StatusBadRequest, apierr.BadRequest)
			if e.Field != tc.field {
				t.Errorf("field %q, want %q: %s", e.Field, tc.field, e.Message)
			}
		})
	}
	// The service serves the next request, and counted none of the refused.
	s := decodeShot(t, c.screenshot(page, map[string]any{"width": 300, "height": 300}), "image/png")
	s.size(t, 300, 300)
	if n := c.usage(); n != used+1 {
		t.Errorf("conversions used %d, want %d: only the request served counts", n, used+1)
	}
}

// releaseNotes is Markdown with GitHub's extensions: a table, a task list,
// fenced code, and an image among the uploads.
const releaseNotes = "# Release Notes\n\nThe **docrender** release.\n\n" +
	"## Features\n\n| Feature | Status |\n|---|---|\n| Screenshots | CELLSHIPPED |\n| Markdown | CELLREADY |\n\n" +
	"- [x] TASKDONE item\n- [ ] TASKOPEN item\n\n" +
	"## Code\n\n```go\nfunc CODEMAIN() { println(\"hi\") }\n```\n\n![logo](img/logo.png)\n"

// outlineTitles are every bookmark's title, nested ones too, in order.
func outlineTitles(t *testing.T, pdf []byte) []string {
	t.Helper()
	type node struct {
		Title string `json:"title"`
		Kids  []node `json:"kids"`
	}
	var doc struct {
		Outlines []node `json:"outlines"`
	}
	if err := json.Unmarshal([]byte(run(t, "qpdf", "--json", writeTemp(t, pdf, ".pdf"))), &doc); err != nil {
		t.Fatal(err)
	}
	var titles []string
	var walk func([]node)
	walk = func(ns []node) {
		for _, n := range ns {
			titles = append(titles, n.Title)
			walk(n.Kids)
		}
	}
	walk(doc.Outlines)
	return titles
}

// TestMarkdown: GitHub-flavoured Markdown printed: the table's cells, the
// task list and the code are in the text, the headings are the outline
// (unless outline:false), the linked image is on the page, a template's
// own text and style frame the document; a template without {{content}}
// is a 400 naming template.html that counts nothing.
func TestMarkdown(t *testing.T) {
	c := newClient(t, sharedService(t))
	logo := file{Field: "files", Name: "img/logo.png", Type: "image/png", Data: noisyPNG(t, 64)}
	md := file{Field: "files", Name: "index.md", Type: "text/markdown", Data: []byte(releaseNotes)}
	used := c.usage()

	resp := c.markdownPDF([]file{md, logo}, map[string]any{"fileName": "notes"})
	mustStatus(t, resp, http.StatusOK)
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "notes.pdf") {
		t.Errorf("Content-Disposition %q", cd)
	}
	pdf := readAll(t, resp)
	got := text(t, pdf)
	for _, want := range []string{"Release Notes", "Screenshots", "CELLSHIPPED", "CELLREADY", "TASKDONE item", "TASKOPEN item", "func CODEMAIN()"} {
		if !strings.Contains(got, want) {
			t.Errorf("the PDF's text lacks %q:\n%s", want, got)
		}
	}
	if titles := outlineTitles(t, pdf); !slices.Contains(titles, "Release Notes") || !slices.Contains(titles, "Features") || !slices.Contains(titles, "Code") {
		t.Errorf("outline %q, want the headings", titles)
	}
	if n := pdfImages(t, writeTemp(t, pdf, ".pdf")); n < 1 {
		t.Errorf("pdfimages finds %d images, want the logo", n)
	}

	// outline:false, and the print options of generate (paper, footer).
	resp = c.markdownPDF([]file{md, logo}, map[string]any{"outline": false, "format": "Letter", "footerTemplate": `<div style="font-size:9px">FOOTEROPTION</div>`})
	mustStatus(t, resp, http.StatusOK)
	pdf = readAll(t, resp)
	if titles := outlineTitles(t, pdf); len(titles) != 0 {
		t.Errorf("outline:false, outline %q", titles)
	}
	if pi := info(t, pdf); pi.Width != 612 || pi.Height != 792 {
		t.Errorf("page %v × %v pt, want Letter", pi.Width, pi.Height)
	}
	if got := text(t, pdf); !strings.Contains(got, "FOOTEROPTION") {
		t.Errorf("the footer option is not printed:\n%s", got)
	}

	// The caller's template: its text and its style around the document.
	tmpl := file{Field: "files", Name: "template.html", Type: "text/html", Data: []byte(`<!doctype html><html><head><title>T</title>
<style>.frame h1{text-transform:uppercase}</style></head><body><p>TEMPLATEHEADER</p><main class="frame">{{content}}</main><footer>TEMPLATEFOOTER</footer></body></html>`)}
	resp = c.markdownPDF([]file{md, logo, tmpl}, nil)
	mustStatus(t, resp, http.StatusOK)
	got = text(t, readAll(t, resp))
	for _, want := range []string{"TEMPLATEHEADER", "RELEASE NOTES", "CELLSHIPPED", "TEMPLATEFOOTER"} {
		if !strings.Contains(got, want) {
			t.Errorf("the templated PDF lacks %q:\n%s", want, got)
		}
	}

	// Refused: nothing counted, the next request served.
	bad := file{Field: "files", Name: "template.html", Type: "text/html", Data: []byte(`<html><body>no placeholder</body></html>`)}
	e := expectError(t, c.markdownPDF([]file{md, bad}, nil), http.StatusBadRequest, apierr.BadRequest)
	if e.Field != "template.html" || !strings.Contains(e.Message, "{{content}}") {
		t.Errorf("field %q, message %q; want template.html and {{content}}", e.Field, e.Message)
	}
	e = expectError(t, c.markdownPDF([]file{htmlFile("index.html", "<p>hi</p>")}, nil), http.StatusBadRequest, apierr.BadRequest)
	if e.Field != "files" {
		t.Errorf("no Markdown: field %q, want files: %s", e.Field, e.Message)
	}
	e = expectError(t, c.markdownPDF([]file{md}, map[string]any{"margin": map[string]any{"top": "-1cm"}}), http.StatusBadRequest, apierr.BadRequest)
	if e.Field != "margin.top" {
		t.Errorf("bad margin: field %q: %s", e.Field, e.Message)
	}
	mustStatus(t, c.markdownPDF([]file{md}, nil), http.StatusOK)
	if n := c.usage(); n != used+4 {
		t.Errorf("conversions used %d, want %d: one a PDF, none refused", n, used+4)
	}
}

// TestScreenshotMarkdownCLI: `docrender screenshot` and `docrender
// markdown` against the service: the image and the PDF written where the
// command says, read back; a bad flag value refused by the service names it.
func TestScreenshotMarkdownCLI(t *testing.T) {
	svc := sharedService(t)
	user := newClient(t, svc)
	c := &cli{t: t, bin: buildCLI(t), dir: t.TempDir(), env: map[string]string{"DOCRENDER_URL": svc.URL, "DOCRENDER_API_KEY": user.Key}}
	c.write("page.html", shotPage)
	c.ok("screenshot", "page.html", "--format", "jpeg", "--width", "320", "--height", "240", "--option", "waitDelay=10ms")
	img, err := jpeg.Decode(bytes.NewReader(c.read("page.jpg")))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 240 {
		t.Errorf("page.jpg is %v", b)
	}
	c.ok("screenshot", "page.html", "--clip", "100,200,50,40", "-o", "box.png")
	box, err := png.Decode(bytes.NewReader(c.read("box.png")))
	if err != nil {
		t.Fatal(err)
	}
	shot{img: box}.colour(t, 25, 20, shotGreen, 0)
	c.wantExit(2, []string{"clip"}, "screenshot", "page.html", "--clip", "0,5000,10,10")

	c.write("notes/index.md", releaseNotes)
	c.write("notes/img/logo.png", string(noisyPNG(t, 32)))
	c.write("frame.html", `<html><body><p>CLIFRAME</p>{{content}}</body></html>`)
	c.ok("markdown", "notes", "--template", "frame.html", "--option", "format=A5")
	pdf := c.read("notes.pdf")
	if got := text(t, pdf); !strings.Contains(got, "CLIFRAME") || !strings.Contains(got, "CELLSHIPPED") {
		t.Errorf("notes.pdf says %q", got)
	}
	if titles := outlineTitles(t, pdf); !slices.Contains(titles, "Features") {
		t.Errorf("notes.pdf outline %q", titles)
	}
}

// TestDashboardTryScreenshotAndText: the dashboard's "try it" for the
// routes of DESIGN §11, in headless Chromium under the page's CSP: a
// screenshot shown in the page at the size asked, a PDF's text shown as
// text, a Markdown file printed from the render form; no script error.
func TestDashboardTryScreenshotAndText(t *testing.T) {
	svc := sharedService(t)
	d := openDashboard(t, svc)
	p := d.p
	d.signUp("shots")
	write := tempWriter(t)
	p.MustElement("#shot-files").MustSetFiles(write("index.html", []byte(shotPage)))
	p.MustElement("#shot-width").MustInput("320")
	p.MustElement("#shot-height").MustInput("200")
	p.MustElement("#shot-submit").MustClick()
	d.waitText("#shot-summary", "Captured.")
	d.waitJS(10*time.Second, `() => { const i = document.getElementById('shot-image'); return i.complete && i.naturalWidth === 320 && i.naturalHeight === 200 }`)

	pdf := newClient(t, svc).generatePDF(threePages, nil)
	p.MustElement("#text-file").MustSetFiles(write("three.pdf", pdf))
	p.MustElement("#text-submit").MustClick()
	d.waitJS(30*time.Second, `() => document.getElementById('text-summary').textContent.endsWith('characters of text.')`)
	if got := p.MustElement("#text-output").MustText(); !strings.Contains(got, "PAGETWO") {
		t.Errorf("the text shown is %q", got)
	}

	p.MustElement("#render-files").MustSetFiles(write("index.md", []byte(releaseNotes)))
	p.MustElement("#render-submit").MustClick()
	d.waitJS(30*time.Second, `() => document.getElementById('render-summary').textContent.startsWith('Rendered.')`)
	if got := p.MustElement("#render-link").MustText(); !strings.Contains(got, "document.pdf") {
		t.Errorf("the render link says %q", got)
	}
	if problems := d.takeProblems(); len(problems) > 0 {
		t.Errorf("the page reported %q", problems)
	}
}
