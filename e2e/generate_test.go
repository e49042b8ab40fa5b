package e2e

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

const simpleHTML = `<!doctype html><html><body style="margin:0"><p>Hello docrender</p></body></html>`

func TestPageSizes(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	// Points: 72 to the inch. Chromium rounds to its own units, hence the tolerance.
	formats := []struct {
		name string
		w, h float64
	}{
		{"A4", 595.28, 841.89}, {"Letter", 612, 792}, {"Legal", 612, 1008},
		{"Tabloid", 792, 1224}, {"A3", 841.89, 1190.55}, {"A5", 419.53, 595.28},
	}
	var wg sync.WaitGroup
	for _, f := range formats {
		for _, orient := range []string{"portrait", "landscape"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pdf := c.generatePDF(simpleHTML, map[string]any{"format": strings.ToLower(f.name), "orientation": orient})
				pi := info(t, pdf)
				w, h := f.w, f.h
				if orient == "landscape" {
					w, h = h, w
				}
				if pi.Pages != 1 || !near(pi.Width, w, 1.5) || !near(pi.Height, h, 1.5) {
					t.Errorf("%s %s: %d pages of %.2f x %.2f pt, want 1 of %.2f x %.2f", f.name, orient, pi.Pages, pi.Width, pi.Height, w, h)
				}
			}()
		}
	}
	wg.Wait()
}

func TestOptionsShapeThePage(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	tests := []struct {
		name          string
		html          string
		opts          any
		width, height float64
	}{
		{"default is A4 portrait", simpleHTML, nil, 595.28, 841.89},
		{"landscape alias", simpleHTML, map[string]any{"landscape": true}, 841.89, 595.28},
		{"inches", simpleHTML, map[string]any{"width": "5in", "height": "7in"}, 360, 504},
		{"centimetres override format", simpleHTML, map[string]any{"format": "Letter", "width": "10cm", "height": "15cm"}, 283.46, 425.2},
		{"millimetres", simpleHTML, map[string]any{"width": "100mm", "height": "50mm", "margin": map[string]string{"top": "0", "bottom": "0"}}, 283.46, 141.73},
		{"pixels and bare numbers", simpleHTML, map[string]any{"width": "480px", "height": 672}, 360, 504},
		{"preferCSSPageSize", `<style>@page { size: 100mm 150mm; }</style><p>css page</p>`, map[string]any{"preferCSSPageSize": true}, 283.46, 425.2},
		{"css page size ignored without the flag", `<style>@page { size: 100mm 150mm; }</style><p>css page</p>`, nil, 595.28, 841.89},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pi := info(t, c.generatePDF(tc.html, tc.opts))
			if !near(pi.Width, tc.width, 1.5) || !near(pi.Height, tc.height, 1.5) {
				t.Fatalf("page %.2f x %.2f pt, want %.2f x %.2f", pi.Width, pi.Height, tc.width, tc.height)
			}
		})
	}
}

func TestMarginsPlaceText(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	html := `<!doctype html><body style="margin:0;font:20px/1 'Liberation Sans'"><span>MARGINPROBE</span></body>`
	tests := []struct {
		name      string
		margin    any
		left, top float64 // expected box corner, points
	}{
		{"default 1cm", nil, 28.35, 28.35},
		{"per side", map[string]string{"top": "1in", "left": "2in", "right": "0.5in", "bottom": "1cm"}, 144, 72},
		{"millimetres and pixels", map[string]string{"top": "30mm", "left": "96px"}, 72, 85.04},
		{"zero", map[string]string{"top": "0", "left": "0", "right": "0", "bottom": "0"}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]any{}
			if tc.margin != nil {
				opts["margin"] = tc.margin
			}
			w := findWord(t, words(t, c.generatePDF(html, opts)), "MARGINPROBE")
			// The glyph box starts at the margin (plus the font's side bearing and ascent gap).
			if !near(w.XMin, tc.left, 3) || !near(w.YMin, tc.top, 4) {
				t.Fatalf("word at (%.1f, %.1f), want about (%.1f, %.1f)", w.XMin, w.YMin, tc.left, tc.top)
			}
		})
	}
}

func TestBackgroundsPrinted(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	pdf := c.generatePDF(`<body style="margin:0;background:#ff0000"><p>red</p></body>`, map[string]any{"margin": map[string]string{"top": "0", "left": "0", "right": "0", "bottom": "0"}})
	img := rasterize(t, pdf, 1)
	r, g, b, _ := img.At(img.Bounds().Dx()/2, img.Bounds().Dy()/2).RGBA()
	if r>>8 < 240 || g>>8 > 20 || b>>8 > 20 {
		t.Fatalf("page centre is %d,%d,%d; the red background was not printed", r>>8, g>>8, b>>8)
	}
}

// rasterize renders one page to an image with pdftoppm.
func rasterize(t testing.TB, pdf []byte, page int) image.Image {
	t.Helper()
	p := writeTemp(t, pdf, ".pdf")
	out, err := exec.Command("pdftoppm", "-png", "-r", "50", "-f", fmt.Sprint(page), "-l", fmt.Sprint(page), "-singlefile", p, p).CombinedOutput()
	if err != nil {
		t.Fatalf("pdftoppm: %v %s", err, out)
	}
	img, err := readPNG(p + ".png")
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func tinyPNG(t testing.TB) []byte {
	t.Helper()
	return solidPNG(t, color.RGBA{0, 0, 255, 255})
}

// solidPNG is a 40×40 image of one colour.
func solidPNG(t testing.TB, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 40))
	for y := range 40 {
		for x := range 40 {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAssetsLoadByRelativePath(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	files := []file{
		htmlFile("index.html", `<!doctype html><html><head><link rel="stylesheet" href="css/style.css"><script src="js/app.js"></script></head>
<body><h1 id="h">Title</h1><img src="img/logo.png" width="40" height="40"><iframe src="part.html" style="border:0;height:60px"></iframe>
<p id="js"></p></body></html>`),
		{Name: "css/style.css", Type: "text/css", Data: []byte(`h1::after { content: " CSSGENERATED"; }`)},
		{Name: "js/app.js", Type: "application/javascript", Data: []byte(`document.addEventListener('DOMContentLoaded', () => { document.getElementById('js').textContent = 'SCRIPTRAN'; });`)},
		{Name: "img/logo.png", Type: "image/png", Data: tinyPNG(t)},
		htmlFile("part.html", `<p>IFRAMEPART</p>`),
	}
	resp := c.generate(files, nil)
	mustStatus(t, resp, http.StatusOK)
	pdf := readAll(t, resp)
	txt := text(t, pdf)
	for _, want := range []string{"CSSGENERATED", "SCRIPTRAN", "IFRAMEPART"} {
		if !strings.Contains(txt, want) {
			t.Errorf("%s missing from the PDF text:\n%s", want, txt)
		}
	}
	images := run(t, "pdfimages", "-list", writeTemp(t, pdf, ".pdf"))
	if n := len(strings.Split(strings.TrimSpace(images), "\n")) - 2; n < 1 {
		t.Errorf("pdfimages lists %d images, want the uploaded logo:\n%s", n, images)
	}
}

func TestEntryIsIndexElseFirstHTML(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	tests := []struct {
		name  string
		files []file
		want  string
	}{
		{"index.html wins", []file{htmlFile("a.html", "<p>AAAA</p>"), htmlFile("index.html", "<p>INDEX</p>")}, "INDEX"},
		{"first html file", []file{{Name: "x.css", Data: []byte("p{}")}, htmlFile("b.html", "<p>BBBB</p>"), htmlFile("c.html", "<p>CCCC</p>")}, "BBBB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.generate(tc.files, nil)
			mustStatus(t, resp, http.StatusOK)
			if txt := text(t, readAll(t, resp)); !strings.Contains(txt, tc.want) {
				t.Fatalf("rendered %q, want %s", txt, tc.want)
			}
		})
	}
}

func TestCJKAndEmojiEmbedded(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	pdf := c.generatePDF(`<!doctype html><meta charset="utf-8"><body><p>漢字テスト 中文测试 한국어</p><p>Emoji 😀🎉</p></body>`, nil)
	txt := text(t, pdf)
	for _, want := range []string{"漢字テスト", "中文测试", "한국어"} {
		if !strings.Contains(txt, want) {
			t.Errorf("%s missing from text %q", want, txt)
		}
	}
	if !strings.Contains(txt, "😀") {
		t.Errorf("emoji missing from text %q", txt)
	}
	// Every font is embedded: a reader without these fonts shows the same glyphs.
	fonts := strings.Split(strings.TrimSpace(run(t, "pdffonts", writeTemp(t, pdf, ".pdf"))), "\n")[2:]
	if len(fonts) < 2 {
		t.Errorf("expected Latin, CJK and emoji fonts, got %v", fonts)
	}
	for _, line := range fonts {
		if f := strings.Fields(line); len(f) < 7 || f[len(f)-5] != "yes" {
			t.Errorf("font not embedded: %s", line)
		}
	}
	// The emoji is drawn in colour, not as an empty box.
	img := rasterize(t, pdf, 1)
	yellow := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 > 200 && g>>8 > 150 && b>>8 < 100 {
				yellow++
			}
		}
	}
	if yellow < 10 {
		t.Errorf("no colour emoji pixels on the page (%d yellow pixels)", yellow)
	}
}

func TestFileNameHeader(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	resp := c.generate([]file{htmlFile("index.html", simpleHTML)}, map[string]any{"fileName": "invoice-42"})
	mustStatus(t, resp, http.StatusOK)
	readAll(t, resp)
	if ct := resp.Header.Get("Content-Type"); ct != "application/pdf" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, `filename="invoice-42.pdf"`) {
		t.Errorf("Content-Disposition %q", cd)
	}
	resp = c.generate([]file{htmlFile("index.html", simpleHTML)}, nil)
	readAll(t, resp)
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, `filename="document.pdf"`) {
		t.Errorf("default Content-Disposition %q", cd)
	}
}
