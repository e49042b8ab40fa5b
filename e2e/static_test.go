package e2e

import (
	"fmt"
	"image"
	"image/color"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// Pages without scripts are written into a warm tab's home document with
// scripts off (browser.Tab.Open) rather than navigated to. These tests hold
// that path to what a navigation gives: every resource loaded before the
// print, and nothing of one job visible to the next.

// countNear counts the pixels of img within 40 of c in every channel.
func countNear(img image.Image, c color.RGBA) int {
	n := 0
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d > -40 && d < 40 }
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(r, c.R) && near(g, c.G) && near(b, c.B) {
				n++
			}
		}
	}
	return n
}

var (
	red     = color.RGBA{255, 0, 0, 255}
	blue    = color.RGBA{0, 0, 255, 255}
	green   = color.RGBA{0, 255, 0, 255}
	magenta = color.RGBA{255, 0, 255, 255}
)

// The print waits for stylesheets, what they import, their images and web
// fonts, and for an image that takes its time to arrive.
func TestStaticPageWaitsForItsResources(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bluePNG := solidPNG(t, blue)
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Longer than the two seconds the print itself waits for loads.
		time.Sleep(2500 * time.Millisecond)
		w.Header().Set("Content-Type", "image/png")
		w.Write(bluePNG)
	})}
	go slow.Serve(ln)
	t.Cleanup(func() { slow.Close() })
	slowAddr := ln.Addr().String()
	font, err := os.ReadFile("/usr/share/fonts/truetype/liberation2/LiberationMono-Regular.ttf")
	if err != nil {
		t.Skipf("no font to upload: %v", err)
	}

	svc := startService(t, func(cfg *configT) { cfg.RenderAllowHosts = []string{slowAddr} })
	c := newClient(t, svc)
	files := []file{
		htmlFile("index.html", fmt.Sprintf(`<!doctype html><html><head><link rel="stylesheet" href="css/a.css"></head>
<body style="margin:0"><h1>Title</h1><div class="bg"></div><img src="http://%s/slow.png" width="200" height="200"><p class="up">UPLOADEDFONT</p></body></html>`, slowAddr)),
		{Name: "css/a.css", Type: "text/css", Data: []byte(`@import "b.css"; h1::after { content: " CSSGENERATED"; }`)},
		{Name: "css/b.css", Type: "text/css", Data: []byte(`.bg { width: 200px; height: 200px; background: url(../img/red.png); }
@font-face { font-family: Up; src: url(../fonts/mono.ttf); } .up { font-family: Up, serif; }`)},
		{Name: "img/red.png", Type: "image/png", Data: solidPNG(t, red)},
		{Name: "fonts/mono.ttf", Type: "font/ttf", Data: font},
	}
	opened := svc.Worker.Pool().Opened()
	resp := c.generate(files, nil)
	mustStatus(t, resp, http.StatusOK)
	pdf := readAll(t, resp)
	if svc.Worker.Pool().Opened() != opened+1 {
		t.Fatal("the page was navigated to, not written into the home document")
	}
	txt := text(t, pdf)
	for _, want := range []string{"CSSGENERATED", "UPLOADEDFONT"} {
		if !strings.Contains(txt, want) {
			t.Errorf("%s missing from the PDF text:\n%s", want, txt)
		}
	}
	if fonts := run(t, "pdffonts", writeTemp(t, pdf, ".pdf")); !strings.Contains(fonts, "LiberationMono") {
		t.Errorf("the uploaded web font is not in the PDF:\n%s", fonts)
	}
	img := rasterize(t, pdf, 1)
	if n := countNear(img, red); n < 100 {
		t.Errorf("%d red pixels: the CSS background image of an imported stylesheet is missing", n)
	}
	if n := countNear(img, blue); n < 100 {
		t.Errorf("%d blue pixels: the slow image is missing", n)
	}
}

// Two jobs in one reused tab with the same file names: the second sees
// only its own files, never the first's from a cache.
func TestStaticJobsDoNotShareFiles(t *testing.T) {
	svc := startService(t, func(cfg *configT) { cfg.Workers = 1 })
	c := newClient(t, svc)
	page := `<!doctype html><link rel="stylesheet" href="s.css"><p>JOB</p><img src="logo.png" width="200" height="200"><div class="bg"></div>`
	job := func(mark string, col color.RGBA) []file {
		return []file{htmlFile("index.html", page),
			{Name: "s.css", Type: "text/css", Data: []byte(`p::after { content: "` + mark + `"; } .bg { width: 200px; height: 200px; background: url(bg.png); }`)},
			{Name: "logo.png", Type: "image/png", Data: solidPNG(t, col)},
			{Name: "bg.png", Type: "image/png", Data: solidPNG(t, col)},
		}
	}
	pool := svc.Worker.Pool()
	c.generatePDF(simpleHTML, nil) // the tab is warm and home
	settled(t, pool)
	fresh, opened := pool.Fresh(), pool.Opened()
	// A colour of its own per job: the worker keeps two tabs per slot, so
	// which earlier job shared a job's tab is the pool's choice.
	jobs := []struct {
		mark string
		col  color.RGBA
	}{{"FIRSTJOB", red}, {"SECONDJOB", blue}, {"THIRDJOB", green}, {"FOURTHJOB", magenta}}
	for i, tc := range jobs {
		resp := c.generate(job(tc.mark, tc.col), nil)
		mustStatus(t, resp, http.StatusOK)
		pdf := readAll(t, resp)
		if txt := text(t, pdf); !strings.Contains(txt, "JOB"+tc.mark) {
			t.Fatalf("job %d printed %q, want its own stylesheet's %s", i, txt, tc.mark)
		}
		img := rasterize(t, pdf, 1)
		if n := countNear(img, tc.col); n < 200 {
			t.Errorf("job %d: %d pixels of its own colour", i, n)
		}
		for j, other := range jobs {
			if n := countNear(img, other.col); j != i && n != 0 {
				t.Errorf("job %d: %d pixels of job %d's colour", i, n, j)
			}
		}
	}
	if got := pool.Opened() - opened; got != int64(len(jobs)) {
		t.Errorf("%d of %d jobs written into the home document", got, len(jobs))
	}
	settled(t, pool)
	if got := pool.Fresh() - fresh; got != 0 {
		t.Errorf("%d new browser contexts, want the tab reused", got)
	}

	// A page that declares a policy in its markup (here: no images) does
	// not leave it for the next job, which shows its images.
	c.generatePDF(`<meta http-equiv="Content-Security-Policy" content="img-src 'none'"><p>POLICY</p>`, nil)
	resp := c.generate(job("AFTERPOLICY", blue), nil)
	mustStatus(t, resp, http.StatusOK)
	if n := countNear(rasterize(t, readAll(t, resp), 1), blue); n < 200 {
		t.Errorf("after a page with a Content-Security-Policy, the next job's images are missing (%d pixels)", n)
	}
	// Nor a preferred stylesheet set, named by the first titled stylesheet.
	titled := func(title, mark string) []file {
		return []file{htmlFile("index.html", `<link rel="stylesheet" title="`+title+`" href="s.css"><p>SET</p>`),
			{Name: "s.css", Type: "text/css", Data: []byte(`p::after { content: "` + mark + `"; }`)}}
	}
	c.generatePDF(`<p>x</p>`, nil)
	mustStatus(t, c.generate(titled("one", "ONE"), nil), http.StatusOK)
	resp = c.generate(titled("two", "TWO"), nil)
	mustStatus(t, resp, http.StatusOK)
	if txt := text(t, readAll(t, resp)); !strings.Contains(txt, "SETTWO") {
		t.Errorf("a titled stylesheet did not apply after another job's: %q", txt)
	}
}
