package render

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

// The print options of DESIGN §6, each checked in the PDF by poppler or
// qpdf, the independent readers.

// roomy is A4 with the margins the gateway gives a header and footer.
var roomy = &jobspb.Page{WidthIn: 8.27, HeightIn: 11.69, MarginTopIn: 0.8, MarginRightIn: 0.4, MarginBottomIn: 0.8, MarginLeftIn: 0.4}

// pagesHTML is a document of n pages whose text says which page it is
// (PAGE1, PAGE2, ...), with a heading on each; extra goes into the head.
func pagesHTML(n int, extra string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Paged</title>` + extra + `</head><body>`)
	for i := 1; i <= n; i++ {
		brk := "page"
		if i == n {
			brk = "auto"
		}
		fmt.Fprintf(&b, `<section style="break-after:%s"><h1>Chapter %d</h1><p>PAGE%d</p></section>`, brk, i, i)
	}
	return b.String() + `</body></html>`
}

// testPNG is a w×h image of one colour.
func testPNG(t testing.TB, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// systemFont reads an installed font file to upload as a web font.
func systemFont(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/usr/share/fonts/truetype", name))
	if err != nil {
		t.Skipf("no font to upload: %v", err)
	}
	return data
}

// pdfTool runs a poppler or qpdf command; "PDF" among args stands for
// pdf's file. It returns the command's output.
func pdfTool(t testing.TB, pdf []byte, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not installed", name)
	}
	p := filepath.Join(t.TempDir(), "out.pdf")
	if err := os.WriteFile(p, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	args = append([]string(nil), args...)
	for i, a := range args {
		if a == "PDF" {
			args[i] = p
		}
	}
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// pageText is the text of one page (pdftotext).
func pageText(t testing.TB, pdf []byte, page int) string {
	t.Helper()
	n := strconv.Itoa(page)
	return pdfTool(t, pdf, "pdftotext", "-f", n, "-l", n, "PDF", "-")
}

// wordBox is a word's box (pdftotext -bbox), in points.
type wordBox struct{ xMin, yMin, xMax, yMax float64 }

var bboxWord = regexp.MustCompile(`<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>`)

// findWordBox is the box of the first word txt on page 1.
func findWordBox(t testing.TB, pdf []byte, txt string) wordBox {
	t.Helper()
	for _, m := range bboxWord.FindAllStringSubmatch(pdfTool(t, pdf, "pdftotext", "-bbox", "-f", "1", "-l", "1", "PDF", "-"), -1) {
		if m[5] == txt {
			f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
			return wordBox{f(m[1]), f(m[2]), f(m[3]), f(m[4])}
		}
	}
	t.Fatalf("no word %q on page 1", txt)
	return wordBox{}
}

// centrePixel is the colour at the middle of page 1.
func centrePixel(t testing.TB, pdf []byte) color.RGBA {
	t.Helper()
	img := pageImage(t, pdf, 1, 20)
	b := img.Bounds()
	return rgbaAt(img, b.Dx()/2, b.Dy()/2)
}

// pageImage is page n of pdf as pdftoppm renders it at dpi.
func pageImage(t testing.TB, pdf []byte, n, dpi int) image.Image {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(p, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	page := strconv.Itoa(n)
	if out, err := exec.Command("pdftoppm", "-png", "-r", strconv.Itoa(dpi), "-f", page, "-l", page, "-singlefile", p, filepath.Join(dir, "page")).CombinedOutput(); err != nil {
		t.Fatalf("pdftoppm: %v %s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "page.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// rgbaAt is img's colour at x, y, opaque.
func rgbaAt(img image.Image, x, y int) color.RGBA {
	r, g, b, _ := img.At(x, y).RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}
}

func printRender(t testing.TB, r *Renderer, b egress.Bundle, page *jobspb.Page, pr *jobspb.Print, timeout time.Duration) ([]byte, error) {
	t.Helper()
	rj := &jobspb.RenderJob{Entry: "index.html", Page: page, Print: pr}
	out, err := r.Render(context.Background(), b, rj, timeout)
	return out.PDF, err
}

// lateHTML sets its content 1.5 s after it loaded.
const lateHTML = `<!doctype html><body><p>EARLY</p><script>
addEventListener('load', () => setTimeout(() => {
	document.body.insertAdjacentHTML('beforeend', '<p id="ready">LATECONTENT</p>');
	window.done = true;
}, 1500));
</script></body>`

// TestPrintOptions renders with each option and checks what it did.
func TestPrintOptions(t *testing.T) {
	r := testRenderer(t)
	red := color.RGBA{255, 0, 0, 255}
	logo := testPNG(t, 37, 23, color.RGBA{0, 128, 0, 255})
	mono := systemFont(t, "liberation2/LiberationMono-Regular.ttf")
	serif := systemFont(t, "dejavu/DejaVuSerifCondensed-Italic.ttf")
	has := func(want ...string) func(t *testing.T, got string) {
		return func(t *testing.T, got string) {
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("%q missing from:\n%s", w, got)
				}
			}
		}
	}
	lacks := func(unwanted string) func(t *testing.T, got string) {
		return func(t *testing.T, got string) {
			if strings.Contains(got, unwanted) {
				t.Errorf("%q present in:\n%s", unwanted, got)
			}
		}
	}
	text := func(page int) func(t *testing.T, pdf []byte) string {
		return func(t *testing.T, pdf []byte) string { return pageText(t, pdf, page) }
	}
	tool := func(name string, args ...string) func(t *testing.T, pdf []byte) string {
		return func(t *testing.T, pdf []byte) string { return pdfTool(t, pdf, name, args...) }
	}
	type check struct {
		read func(t *testing.T, pdf []byte) string
		test func(t *testing.T, got string)
	}
	tests := []struct {
		name   string
		files  egress.Bundle
		page   *jobspb.Page
		pr     *jobspb.Print
		checks []check
	}{
		{name: "footer page numbers, Chromium filling them in",
			files: egress.Bundle{"index.html": []byte(pagesHTML(3, ""))},
			pr:    &jobspb.Print{FooterTemplate: `Page <span class=pageNumber></span> of <span class=totalPages></span>`},
			checks: []check{{text(2), has("PAGE2", "Page 2 of 3")}, {text(3), has("Page 3 of 3")},
				// A footer alone must not bring Chromium's default header (date, title).
				{text(1), lacks("Paged")}}},
		{name: "footer with an uploaded logo, stylesheet and web font (page without scripts)",
			files: egress.Bundle{"index.html": []byte(pagesHTML(2, "")), "img/logo.png": logo, "fonts/mono.ttf": mono,
				"css/footer.css": []byte(`@font-face { font-family: Up; src: url(../fonts/mono.ttf) format("truetype"); } .f { font-family: Up, serif; }`)},
			pr: &jobspb.Print{FooterTemplate: `<link rel="stylesheet" href="css/footer.css"><div class="f">UPLOADEDFONT <span class="pageNumber"></span> <img src="img/logo.png" width="37" height="23"></div>`},
			checks: []check{{text(2), has("UPLOADEDFONT 2")}, {tool("pdffonts", "PDF"), has("LiberationMono")},
				{tool("pdfimages", "-list", "PDF"), imageSized(37, 23)}}},
		{name: "uploaded header.html with a font and CSS image (page with scripts)",
			files: egress.Bundle{"index.html": []byte(pagesHTML(2, `<script>document.title = "Scripted"</script>`)), "logo.png": logo, "serif.ttf": serif,
				"header.html": []byte(`<!doctype html><html><head><style>@font-face { font-family: Head; src: url("serif.ttf"); }
.h { font: 12px Head, sans-serif; } .logo { width: 37px; height: 23px; background: url(logo.png); display: inline-block; }</style></head>
<body><div class="h">HEADERFILE <span class="logo"></span> <span class="title"></span></div></body></html>`)},
			checks: []check{{text(1), has("HEADERFILE", "Scripted", "PAGE1")}, {tool("pdffonts", "PDF"), has("DejaVuSerifCondensed-Italic")},
				{tool("pdfimages", "-list", "PDF"), imageSized(37, 23)}}},
		{name: "footer option over footer.html",
			files:  egress.Bundle{"index.html": []byte(pagesHTML(1, "")), "footer.html": []byte(`FROMFILE`)},
			pr:     &jobspb.Print{FooterTemplate: `FROMOPTION`},
			checks: []check{{text(1), has("FROMOPTION")}, {text(1), lacks("FROMFILE")}}},
		{name: "CSS margin boxes with page counters",
			files:  egress.Bundle{"index.html": []byte(pagesHTML(3, `<style>@page { @bottom-right { content: "Sheet " counter(page) " of " counter(pages); } }</style>`))},
			checks: []check{{text(2), has("PAGE2", "Sheet 2 of 3")}}},
		{name: "no wait: the late content is missing",
			files:  egress.Bundle{"index.html": []byte(lateHTML)},
			checks: []check{{text(1), has("EARLY")}, {text(1), lacks("LATECONTENT")}}},
		{name: "waitForSelector",
			files:  egress.Bundle{"index.html": []byte(lateHTML)},
			pr:     &jobspb.Print{WaitForSelector: "#ready"},
			checks: []check{{text(1), has("LATECONTENT")}}},
		{name: "waitForExpression",
			files:  egress.Bundle{"index.html": []byte(lateHTML)},
			pr:     &jobspb.Print{WaitForExpression: "window.done === true"},
			checks: []check{{text(1), has("LATECONTENT")}}},
		{name: "waitForExpression awaiting a promise, throwing until then",
			files:  egress.Bundle{"index.html": []byte(lateHTML)},
			pr:     &jobspb.Print{WaitForExpression: "Promise.resolve(window.done || missing.property)"},
			checks: []check{{text(1), has("LATECONTENT")}}},
		{name: "waitDelay",
			files:  egress.Bundle{"index.html": []byte(lateHTML)},
			pr:     &jobspb.Print{WaitDelayMs: 2500},
			checks: []check{{text(1), has("LATECONTENT")}}},
		{name: "media print (default)",
			files:  egress.Bundle{"index.html": []byte(`<style>@media screen { .p { display: none } } @media print { .s { display: none } }</style><p class="p">PRINTMEDIA</p><p class="s">SCREENMEDIA</p>`)},
			checks: []check{{text(1), has("PRINTMEDIA")}, {text(1), lacks("SCREENMEDIA")}}},
		{name: "media screen",
			files:  egress.Bundle{"index.html": []byte(`<style>@media screen { .p { display: none } } @media print { .s { display: none } }</style><p class="p">PRINTMEDIA</p><p class="s">SCREENMEDIA</p>`)},
			pr:     &jobspb.Print{MediaScreen: true},
			checks: []check{{text(1), has("SCREENMEDIA")}, {text(1), lacks("PRINTMEDIA")}}},
		{name: "media print again: the tab's emulation was reset",
			files:  egress.Bundle{"index.html": []byte(`<style>@media screen { .p { display: none } } @media print { .s { display: none } }</style><p class="p">PRINTMEDIA</p><p class="s">SCREENMEDIA</p>`)},
			checks: []check{{text(1), has("PRINTMEDIA")}, {text(1), lacks("SCREENMEDIA")}}},
		{name: "pageRanges",
			files:  egress.Bundle{"index.html": []byte(pagesHTML(3, ""))},
			pr:     &jobspb.Print{PageRanges: "2-3"},
			checks: []check{{tool("pdfinfo", "PDF"), has("Pages:           2")}, {text(1), has("PAGE2")}, {text(2), has("PAGE3")}}},
		{name: "tagged by default",
			files:  egress.Bundle{"index.html": []byte(pagesHTML(1, ""))},
			checks: []check{{tool("pdfinfo", "PDF"), has("Tagged:          yes")}}},
		{name: "untagged",
			files:  egress.Bundle{"index.html": []byte(pagesHTML(1, ""))},
			pr:     &jobspb.Print{Untagged: true},
			checks: []check{{tool("pdfinfo", "PDF"), has("Tagged:          no")}}},
		{name: "no outline by default",
			files:  egress.Bundle{"index.html": []byte(pagesHTML(2, ""))},
			checks: []check{{outlineTitles, has("[]")}}},
		{name: "outline from the headings",
			files:  egress.Bundle{"index.html": []byte(pagesHTML(2, ""))},
			pr:     &jobspb.Print{Outline: true},
			checks: []check{{outlineTitles, has(`["Chapter 1","Chapter 2"]`)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page := tc.page
			if page == nil {
				page = roomy
			}
			pdf, err := printRender(t, r, tc.files, page, tc.pr, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.checks {
				c.test(t, c.read(t, pdf))
			}
		})
	}

	t.Run("scale", func(t *testing.T) {
		b := egress.Bundle{"index.html": []byte(`<p style="font-size:20px">SCALED text</p>`)}
		boxes := map[float64]wordBox{}
		for _, scale := range []float64{0, 0.5, 2} {
			pdf, err := printRender(t, r, b, a4, &jobspb.Print{Scale: scale}, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			boxes[scale] = findWordBox(t, pdf, "SCALED")
		}
		height := func(b wordBox) float64 { return b.yMax - b.yMin }
		for _, scale := range []float64{0.5, 2} {
			if got := height(boxes[scale]) / height(boxes[0]); got < scale*0.9 || got > scale*1.1 {
				t.Errorf("scale %v: text %.2f times as high as at scale 1", scale, got)
			}
		}
	})

	t.Run("printBackground false", func(t *testing.T) {
		b := egress.Bundle{"index.html": []byte(`<body style="margin:0;background:#ff0000"><p>red</p></body>`)}
		bare := &jobspb.Page{WidthIn: 8.27, HeightIn: 11.69}
		for _, tc := range []struct {
			pr   *jobspb.Print
			want color.RGBA
		}{{nil, red}, {&jobspb.Print{NoBackground: true}, color.RGBA{255, 255, 255, 255}}} {
			pdf, err := printRender(t, r, b, bare, tc.pr, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got := centrePixel(t, pdf); got != tc.want {
				t.Errorf("no_background %v: centre %v, want %v", tc.pr.GetNoBackground(), got, tc.want)
			}
		}
	})
}

// imageSized checks that pdfimages -list lists an image of w×h pixels.
func imageSized(w, h int) func(t *testing.T, list string) {
	return func(t *testing.T, list string) {
		for _, line := range strings.Split(list, "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[3] == strconv.Itoa(w) && f[4] == strconv.Itoa(h) {
				return
			}
		}
		t.Errorf("no %d×%d image in:\n%s", w, h, list)
	}
}

// outlineTitles lists the PDF's bookmarks (qpdf --json), as JSON.
func outlineTitles(t *testing.T, pdf []byte) string {
	var doc struct {
		Outlines []struct {
			Title string `json:"title"`
		} `json:"outlines"`
	}
	if err := json.Unmarshal([]byte(pdfTool(t, pdf, "qpdf", "--json", "PDF")), &doc); err != nil {
		t.Fatal(err)
	}
	titles := []string{}
	for _, o := range doc.Outlines {
		titles = append(titles, o.Title)
	}
	b, _ := json.Marshal(titles)
	return string(b)
}

// TestPrintOptionFailures: what the client must fix is an *InputError
// naming the option; a wait that never comes true times out naming the
// wait, and the next render on the tab works.
func TestPrintOptionFailures(t *testing.T) {
	r := testRenderer(t)
	tests := []struct {
		name    string
		html    string
		pr      *jobspb.Print
		timeout time.Duration
		// input: the *InputError's message; wait: the *WaitError's wait.
		input, wait string
	}{
		{name: "pages beyond the document", html: pagesHTML(2, ""), pr: &jobspb.Print{PageRanges: "5"},
			input: `pageRanges "5" is beyond the document's 2 pages.`},
		{name: "some pages beyond the document", html: pagesHTML(2, ""), pr: &jobspb.Print{PageRanges: "1-2,4"},
			input: `pageRanges "1-2,4" is beyond the document's 2 pages.`},
		{name: "invalid selector", html: lateHTML, pr: &jobspb.Print{WaitForSelector: "p:::x"},
			input: `waitForSelector "p:::x" is not a valid CSS selector.`},
		{name: "not an expression", html: lateHTML, pr: &jobspb.Print{WaitForExpression: "window.done ==="},
			input: `waitForExpression "window.done ===" is not a JavaScript expression (SyntaxError`},
		{name: "selector never matches", html: lateHTML, pr: &jobspb.Print{WaitForSelector: "#never"}, timeout: 3 * time.Second,
			wait: `waitForSelector "#never"`},
		{name: "selector on a page without scripts", html: `<p>static</p>`, pr: &jobspb.Print{WaitForSelector: "#never"}, timeout: 3 * time.Second,
			wait: `waitForSelector "#never"`},
		{name: "expression always throws", html: lateHTML, pr: &jobspb.Print{WaitForExpression: "missing.property"}, timeout: 3 * time.Second,
			wait: `waitForExpression "missing.property"`},
		{name: "expression never settles", html: lateHTML, pr: &jobspb.Print{WaitForExpression: "new Promise(() => {})"}, timeout: 3 * time.Second,
			wait: `waitForExpression "new Promise(() => {})"`},
		{name: "delay beyond the time", html: `<p>static</p>`, pr: &jobspb.Print{WaitDelayMs: 5000}, timeout: 2 * time.Second,
			wait: `waitDelay 5s`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 20 * time.Second
			}
			start := time.Now()
			_, err := printRender(t, r, egress.Bundle{"index.html": []byte(tc.html)}, roomy, tc.pr, timeout)
			var ie *InputError
			var we *WaitError
			switch {
			case tc.input != "" && !errors.As(err, &ie):
				t.Fatalf("err %v, want *InputError", err)
			case tc.input != "" && !strings.HasPrefix(ie.Message, tc.input):
				t.Fatalf("message %q, want %q", ie.Message, tc.input)
			case tc.wait != "" && (!errors.Is(err, ErrTimeout) || !errors.As(err, &we)):
				t.Fatalf("err %v, want ErrTimeout with a *WaitError", err)
			case tc.wait != "" && we.Wait != tc.wait:
				t.Fatalf("wait %q, want %q", we.Wait, tc.wait)
			case tc.wait != "" && time.Since(start) > timeout+2*time.Second:
				t.Fatalf("took %v with a timeout of %v", time.Since(start), timeout)
			}
			// The next job on the tab (the pool has one) renders.
			pdf, err := printRender(t, r, egress.Bundle{"index.html": []byte(lateHTML)}, roomy, &jobspb.Print{WaitForSelector: "#ready"}, 20*time.Second)
			if err != nil {
				t.Fatalf("next render: %v", err)
			}
			if got := pageText(t, pdf, 1); !strings.Contains(got, "LATECONTENT") {
				t.Fatalf("next render: %q", got)
			}
		})
	}
}

// TestMarginTemplates: a template's relative references become data: URLs
// of the bundle's files (their type by extension or content), data: URLs
// and fragments stay, everything else that would load is dropped, and a
// template that inlines too much is an *InputError naming it.
func TestMarginTemplates(t *testing.T) {
	b := egress.Bundle{
		"logo.png":      testPNG(t, 2, 2, color.RGBA{0, 0, 255, 255}),
		"img/icon.svg":  []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`),
		"img/noext":     testPNG(t, 1, 1, color.RGBA{}),
		"css/a.css":     []byte(`@import "b.css" print; .a { background: url(../logo.png) }`),
		"css/b.css":     []byte(`@font-face { font-family: F; src: url('../fonts/f.woff2') format("woff2") } .b { color: red }`),
		"fonts/f.woff2": []byte("wOF2 font"),
		"footer.html":   []byte(`FOOTERFILE`),
		"big.png":       bytes.Repeat([]byte{1}, maxInlined),
	}
	b64 := func(name string) string { return "base64," + base64.StdEncoding.EncodeToString(b[name]) }
	tests := []struct {
		name, header   string
		want, unwanted []string
		// input: the *InputError's message.
		input string
	}{
		{name: "image by relative and root path", header: `<img src="logo.png"><img src="/img/icon.svg#i"><img src="./img/noext">`,
			want: []string{`src="data:image/png;` + b64("logo.png") + `"`, `src="data:image/svg+xml;` + b64("img/icon.svg") + `#i"`, `src="data:image/png;` + b64("img/noext") + `"`}},
		{name: "stylesheet link, its import and font", header: `<link rel="stylesheet" href="css/a.css" media="print"><p class="a b">x</p>`,
			want:     []string{`<style media="print">@media print{`, `src: url("data:font/woff2;` + b64("fonts/f.woff2") + `") format("woff2")`, `.a { background: url("data:image/png;` + b64("logo.png") + `") }`},
			unwanted: []string{"<link", "@import"}},
		{name: "style element and attribute", header: `<style>.x { background-image: image-set("logo.png" 1x) }</style><div style="background: url( 'logo.png' )"></div>`,
			want: []string{`image-set("data:image/png;` + b64("logo.png") + `" 1x)`, `background: url(&#34;data:image/png;` + b64("logo.png") + `&#34; )`}},
		{name: "data URLs and fragments stay", header: `<img src="data:image/gif;base64,R0lG"><svg><use href="#s"></use><rect fill="url(#g)"></rect></svg>`,
			want: []string{`src="data:image/gif;base64,R0lG"`, `href="#s"`, `fill="url(&#34;#g&#34;)"`}},
		{name: "SVG references", header: `<svg><image href="logo.png"></image><image xlink:href="https://example.com/x.png"></image><rect filter="url(https://example.com/f.svg#f)" mask="url(img/icon.svg#m)"></rect></svg>`,
			want:     []string{`<image href="data:image/png;` + b64("logo.png") + `"></image>`, `filter="url(&#34;data:,&#34;)"`, `mask="url(&#34;data:image/svg+xml;` + b64("img/icon.svg") + `#m&#34;)"`},
			unwanted: []string{"example.com"}},
		{name: "nothing reaches the network", header: `<img src="https://example.com/x.png" srcset="logo.png 2x"><img src="//example.com/y.png"><link rel="preconnect" href="https://example.com">` +
			`<link rel="stylesheet" href="http://example.com/s.css"><style>@import url(https://example.com/i.css); p { background: url(http://example.com/bg.png) }</style>` +
			`<script src="https://example.com/s.js"></script><iframe src="https://example.com/"></iframe><img src="missing.png" onerror="fetch('https://example.com')"><a href="https://example.com/" ping="https://example.com/p">site</a>`,
			want:     []string{`<img/>`, `url("data:,")`, `<a href="https://example.com/">site</a>`},
			unwanted: []string{"example.com/x", "example.com/y", "preconnect", "s.css", "i.css", "bg.png", "<script", "<iframe", "onerror", "missing.png", "srcset", "ping"}},
		{name: "too much inlined", header: `<img src="big.png">`,
			input: "headerTemplate: the images, fonts and stylesheets it refers to come to more than 8 MiB inlined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := marginTemplates(b, a4, &jobspb.Print{HeaderTemplate: tc.header})
			var ie *InputError
			switch {
			case tc.input != "" && (!errors.As(err, &ie) || !strings.HasPrefix(ie.Message, tc.input)):
				t.Fatalf("err %v, want an *InputError %q", err, tc.input)
			case tc.input != "":
				return
			case err != nil:
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(m.header, w) {
					t.Errorf("%q missing from %s", w, m.header)
				}
			}
			for _, u := range tc.unwanted {
				if strings.Contains(m.header, u) {
					t.Errorf("%q present in %s", u, m.header)
				}
			}
			if !strings.Contains(m.footer, "FOOTERFILE") {
				t.Errorf("footer %q is not footer.html", m.footer)
			}
		})
	}

	t.Run("fonts to preload", func(t *testing.T) {
		m, err := marginTemplates(b, a4, &jobspb.Print{FooterTemplate: `<link rel="stylesheet" href="css/b.css"><style>@font-face { font-family: G; src: url(data:font/ttf;base64,AAEAAA) }</style>`})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"data:font/woff2;" + b64("fonts/f.woff2"), "data:font/ttf;base64,AAEAAA"}
		if !slices.Equal(m.fonts, want) {
			t.Errorf("fonts %q, want %q", m.fonts, want)
		}
	})

	t.Run("header only: a blank footer, not Chromium's", func(t *testing.T) {
		m, err := marginTemplates(egress.Bundle{"header.html": []byte("HEADERFILE")}, a4, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.header, "HEADERFILE") || !strings.Contains(m.footer, blankTemplate) || !m.on() {
			t.Errorf("header %q, footer %q", m.header, m.footer)
		}
	})

	t.Run("no templates", func(t *testing.T) {
		m, err := marginTemplates(egress.Bundle{"index.html": []byte("x")}, a4, &jobspb.Print{HeaderTemplate: ""})
		if err != nil || m.on() {
			t.Errorf("margins %+v, err %v", m, err)
		}
	})
}

func TestRangePages(t *testing.T) {
	for ranges, want := range map[string]int{"1": 1, "1-3,5": 4, "1-3,2": 3, "5,1-3,2-6": 6, "1,1,1": 1, "2-2": 1} {
		if got := rangePages(ranges); got != want {
			t.Errorf("rangePages(%q) = %d, want %d", ranges, got, want)
		}
	}
}

// TestExpressionRunsOnTheJobsOrigin: waitForExpression is the client's
// code, so even a page without scripts is navigated to (an origin of its
// own) rather than written into the home document every job shares.
func TestExpressionRunsOnTheJobsOrigin(t *testing.T) {
	r := testRenderer(t)
	b := egress.Bundle{"index.html": []byte(`<p id="x">STATIC</p>`)}
	for _, tc := range []struct {
		pr      *jobspb.Print
		written bool
	}{{nil, true}, {&jobspb.Print{WaitForSelector: "#x"}, true}, {&jobspb.Print{WaitForExpression: "location.hostname"}, false}} {
		opened := r.Pool.Opened()
		pdf, err := printRender(t, r, b, a4, tc.pr, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if written := r.Pool.Opened() > opened; written != tc.written {
			t.Errorf("%v: written %v, want %v", tc.pr, written, tc.written)
		}
		if got := pageText(t, pdf, 1); !strings.Contains(got, "STATIC") {
			t.Errorf("%v: text %q", tc.pr, got)
		}
	}
}

// TestReadStreamInChunks: a PDF read in many small chunks is the one read
// in one (the chunk a job reads with is 4 MiB: most PDFs fit one).
func TestReadStreamInChunks(t *testing.T) {
	r := testRenderer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := r.Pool.Tab(ctx, func(tab *browser.Tab) error {
		if err := tab.Open(egress.HomeURL+"x/index.html", "<h1>chunks</h1>"+strings.Repeat("<p>a line of text</p>", 400), `() => 0`, nil); err != nil {
			return err
		}
		read := func(size int) []byte {
			t.Helper()
			raw, err := tab.Page().Call(ctx, string(tab.Page().SessionID), "Page.printToPDF", printParams{PaperWidth: 8.27, PaperHeight: 11.69, Scale: 1,
				TransferMode: proto.PagePrintToPDFTransferModeReturnAsStream})
			if err != nil {
				t.Fatal(err)
			}
			var res proto.PagePrintToPDFResult
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			defer proto.IOClose{Handle: res.Stream}.Call(tab.Page())
			pdf, err := readStream(tab.Page(), res.Stream, size, 0)
			if err != nil {
				t.Fatal(err)
			}
			return pdf
		}
		whole, chunked := read(streamChunk), read(1000)
		if len(whole) < 10000 || !bytes.HasPrefix(whole, []byte("%PDF-")) || !bytes.Contains(whole[len(whole)-32:], []byte("%%EOF")) {
			t.Fatalf("not a whole PDF: %d bytes, %q…", len(whole), whole[:min(len(whole), 8)])
		}
		// Two prints of one page differ only in their dates and IDs.
		if len(chunked) != len(whole) {
			t.Errorf("read in 1000-byte chunks: %d bytes, in one: %d", len(chunked), len(whole))
		}
		n, err := pdfedit.PageCount(ctx, chunked)
		if want, _ := pdfedit.PageCount(ctx, whole); err != nil || n != want || n < 2 {
			t.Errorf("chunked PDF: %d pages (%v), the whole one %d", n, err, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
