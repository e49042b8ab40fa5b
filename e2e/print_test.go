package e2e

import (
	"encoding/json"
	"image/color"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// DESIGN §6's print options through the API: generate's options, a batch's
// options and its documents' own, each checked in the PDF by poppler or qpdf.

// printLateHTML sets its content 1.5 s after it loaded.
const printLateHTML = `<!doctype html><body><p>EARLY</p><script>
addEventListener('load', () => setTimeout(() => {
	document.body.insertAdjacentHTML('beforeend', '<p id="ready">LATECONTENT</p>');
	window.done = true;
}, 1500));
</script></body>`

// printMediaHTML says which CSS media type it was printed with.
const printMediaHTML = `<!doctype html><style>@media screen { .p { display: none } } @media print { .s { display: none } }</style>
<p class="p">PRINTMEDIA</p><p class="s">SCREENMEDIA</p>`

// printChaptersHTML has two pages, each with a heading.
const printChaptersHTML = `<!doctype html><title>Chapters</title><section style="break-after:page"><h1>Chapter One</h1><p>PAGEONE</p></section>
<section><h1>Chapter Two</h1><p>PAGETWO</p></section>`

// printPageTag is the "Tagged:" line of pdfinfo.
var printPageTag = regexp.MustCompile(`(?m)^Tagged:\s+(\w+)`)

func printTagged(t testing.TB, pdf []byte) string {
	t.Helper()
	m := printPageTag.FindStringSubmatch(run(t, "pdfinfo", writeTemp(t, pdf, ".pdf")))
	if m == nil {
		t.Fatal("pdfinfo has no Tagged line")
	}
	return m[1]
}

// printOutline is the PDF's top-level bookmarks (qpdf --json).
func printOutline(t testing.TB, pdf []byte) []string {
	t.Helper()
	var doc struct {
		Outlines []struct {
			Title string `json:"title"`
		} `json:"outlines"`
	}
	if err := json.Unmarshal([]byte(run(t, "qpdf", "--json", writeTemp(t, pdf, ".pdf"))), &doc); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, o := range doc.Outlines {
		titles = append(titles, o.Title)
	}
	return titles
}

func printHas(t testing.TB, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q missing from:\n%s", what, w, got)
		}
	}
}

func printLacks(t testing.TB, what, got string, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(got, u) {
			t.Errorf("%s: %q present in:\n%s", what, u, got)
		}
	}
}

// A footer option with page numbers, an uploaded header.html, and in them an
// uploaded logo, stylesheet and web font: all in the PDF.
func TestPrintHeaderAndFooter(t *testing.T) {
	font, err := os.ReadFile("/usr/share/fonts/truetype/liberation2/LiberationMono-Regular.ttf")
	if err != nil {
		t.Skipf("no font to upload: %v", err)
	}
	c := newClient(t, sharedService(t))
	files := []file{
		htmlFile("index.html", pagesHTML("PAGEONE", "PAGETWO", "PAGETHREE")),
		htmlFile("header.html", `<link rel="stylesheet" href="css/margins.css"><div class="head">UPLOADEDHEADER <img src="img/logo.png" width="37" height="23"></div>`),
		{Name: "css/margins.css", Type: "text/css", Data: []byte(`@font-face { font-family: Up; src: url(../fonts/mono.ttf); } .head, .foot { font-family: Up, serif; font-size: 11px; }`)},
		{Name: "img/logo.png", Type: "image/png", Data: solidPNG(t, color.RGBA{0, 128, 0, 255})},
		{Name: "fonts/mono.ttf", Type: "font/ttf", Data: font},
	}
	resp := c.generate(files, map[string]any{"footerTemplate": `Page <span class=pageNumber></span> of <span class=totalPages></span>`})
	mustStatus(t, resp, http.StatusOK)
	pdf := readAll(t, resp)
	for page, want := range map[int]string{1: "Page 1 of 3", 2: "Page 2 of 3", 3: "Page 3 of 3"} {
		got := pageText(t, pdf, page)
		printHas(t, "footer", got, want, "UPLOADEDHEADER")
	}
	if pages := imagePages(t, pdf); len(pages) != 3 {
		t.Errorf("the header's logo is on pages %v, want each of 3", pages)
	}
	printHas(t, "pdffonts", run(t, "pdffonts", writeTemp(t, pdf, ".pdf")), "LiberationMono")
}

// CSS margin boxes count pages too, without any template.
func TestPrintPageMarginBoxes(t *testing.T) {
	c := newClient(t, sharedService(t))
	html := strings.Replace(pagesHTML("PAGEONE", "PAGETWO"), "<style>",
		`<style>@page { margin: 2cm; @bottom-center { content: "Sheet " counter(page) " of " counter(pages); } }`, 1)
	pdf := c.generatePDF(html, nil)
	printHas(t, "page 2", pageText(t, pdf, 2), "PAGETWO", "Sheet 2 of 2")
}

// Content set 1.5 s after the load is printed when the job waits for it by
// selector, by expression or by a delay; not without a wait.
func TestPrintWaits(t *testing.T) {
	c := newClient(t, sharedService(t))
	for _, tc := range []struct {
		name string
		opts map[string]any
		late bool
	}{
		{"no wait", nil, false},
		{"waitForSelector", map[string]any{"waitForSelector": "#ready"}, true},
		{"waitForExpression", map[string]any{"waitForExpression": "window.done === true"}, true},
		{"waitDelay", map[string]any{"waitDelay": "2500ms"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := text(t, c.generatePDF(printLateHTML, tc.opts))
			if strings.Contains(got, "LATECONTENT") != tc.late {
				t.Errorf("late content printed: %v, want %v:\n%s", !tc.late, tc.late, got)
			}
		})
	}
}

// A wait that never comes true fails the job as a timeout naming the wait;
// the next job renders.
func TestPrintWaitTimesOut(t *testing.T) {
	svc := startService(t, func(cfg *configT) {
		cfg.Workers = 1
		cfg.RenderTimeout = 3 * time.Second
	})
	c := newClient(t, svc)
	for _, tc := range []struct {
		opts map[string]any
		msg  string
	}{
		{map[string]any{"waitForSelector": "#ready"}, `Rendering exceeded the time limit of 3s waiting for waitForSelector "#ready".`},
		{map[string]any{"waitForExpression": "window.never.set"}, `Rendering exceeded the time limit of 3s waiting for waitForExpression "window.never.set".`},
	} {
		resp := c.generate([]file{htmlFile("index.html", `<!doctype html><p>never ready</p><script>1</script>`)}, tc.opts)
		e := expectError(t, resp, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR")
		if e.Message != tc.msg {
			t.Errorf("message %q, want %q", e.Message, tc.msg)
		}
		// The hint names the option that never came true (DESIGN §6).
		for opt := range tc.opts {
			if !strings.HasPrefix(e.Hint, opt+" never") {
				t.Errorf("hint %q does not name %s", e.Hint, opt)
			}
		}
		printHas(t, "next render", text(t, c.generatePDF(printLateHTML, map[string]any{"waitForSelector": "#ready"})), "LATECONTENT")
	}
}

// The other options of §6, each against its default.
func TestPrintOptions(t *testing.T) {
	c := newClient(t, sharedService(t))
	t.Run("emulatedMediaType", func(t *testing.T) {
		got := text(t, c.generatePDF(printMediaHTML, map[string]any{"emulatedMediaType": "screen"}))
		printHas(t, "screen", got, "SCREENMEDIA")
		printLacks(t, "screen", got, "PRINTMEDIA")
		// The tab's emulation does not outlive its job.
		got = text(t, c.generatePDF(printMediaHTML, nil))
		printHas(t, "print", got, "PRINTMEDIA")
		printLacks(t, "print", got, "SCREENMEDIA")
	})
	t.Run("scale", func(t *testing.T) {
		html := `<p style="font-size:20px;margin:0">SCALED</p>`
		one := findWord(t, words(t, c.generatePDF(html, nil)), "SCALED")
		half := findWord(t, words(t, c.generatePDF(html, map[string]any{"scale": 0.5})), "SCALED")
		if ratio := (half.YMax - half.YMin) / (one.YMax - one.YMin); !near(ratio, 0.5, 0.05) {
			t.Errorf("text at scale 0.5 is %.2f times as high as at 1", ratio)
		}
	})
	t.Run("pageRanges", func(t *testing.T) {
		pdf := c.generatePDF(pagesHTML("PAGEONE", "PAGETWO", "PAGETHREE"), map[string]any{"pageRanges": "2-3"})
		checkPageTokens(t, pdf, []string{"PAGETWO", "PAGETHREE"})
		resp := c.generate([]file{htmlFile("index.html", pagesHTML("PAGEONE", "PAGETWO"))}, map[string]any{"pageRanges": "5"})
		e := expectError(t, resp, http.StatusBadRequest, "BAD_REQUEST")
		if e.Message != `pageRanges "5" is beyond the document's 2 pages.` {
			t.Errorf("message %q", e.Message)
		}
	})
	t.Run("printBackground", func(t *testing.T) {
		html := `<body style="margin:0;background:#ff0000"><p>red</p></body>`
		noMargin := map[string]any{"margin": "0", "printBackground": false}
		img := rasterize(t, c.generatePDF(html, noMargin), 1)
		if n := countNear(img, red); n > 0 {
			t.Errorf("%d red pixels with printBackground false", n)
		}
	})
	t.Run("tagged", func(t *testing.T) {
		if got := printTagged(t, c.generatePDF(printChaptersHTML, nil)); got != "yes" {
			t.Errorf("default: Tagged %s", got)
		}
		if got := printTagged(t, c.generatePDF(printChaptersHTML, map[string]any{"tagged": false})); got != "no" {
			t.Errorf("tagged false: Tagged %s", got)
		}
	})
	t.Run("outline", func(t *testing.T) {
		if got := printOutline(t, c.generatePDF(printChaptersHTML, nil)); len(got) != 0 {
			t.Errorf("default: bookmarks %q", got)
		}
		got := printOutline(t, c.generatePDF(printChaptersHTML, map[string]any{"outline": true}))
		if strings.Join(got, "|") != "Chapter One|Chapter Two" {
			t.Errorf("bookmarks %q", got)
		}
	})
}

// A batch's options reach every document, and a document's own replace them.
func TestPrintOptionsBatch(t *testing.T) {
	c := newClient(t, sharedService(t))
	ds := []map[string]any{
		{"fileName": "plain", "htmlContent": pagesHTML("PAGEONE", "PAGETWO")},
		{"fileName": "ranged", "htmlContent": pagesHTML("PAGEONE", "PAGETWO", "PAGETHREE"), "pageRanges": "3"},
		{"fileName": "screen", "htmlContent": printMediaHTML, "emulatedMediaType": "screen", "footerTemplate": "OWNFOOTER"},
		{"fileName": "waits", "htmlContent": printLateHTML, "waitForSelector": "#ready"},
	}
	resp := c.batch(map[string]any{"documents": ds, "options": map[string]any{
		"footerTemplate": `Page <span class=pageNumber></span> of <span class=totalPages></span>`, "tagged": false}})
	mustStatus(t, resp, http.StatusOK)
	_, entries := unzip(t, readAll(t, resp))
	plain, ranged, screen, waits := entries["plain.pdf"], entries["ranged.pdf"], entries["screen.pdf"], entries["waits.pdf"]
	if plain == nil || ranged == nil || screen == nil || waits == nil {
		t.Fatalf("ZIP entries: %v", len(entries))
	}
	printHas(t, "plain", pageText(t, plain, 2), "PAGETWO", "Page 2 of 2")
	checkPageTokens(t, ranged, []string{"PAGETHREE"})
	printHas(t, "ranged", pageText(t, ranged, 1), "Page 3 of 3")
	got := text(t, screen)
	printHas(t, "screen", got, "SCREENMEDIA", "OWNFOOTER")
	printLacks(t, "screen", got, "PRINTMEDIA", "Page 1 of 1")
	printHas(t, "waits", text(t, waits), "LATECONTENT", "Page 1 of 1")
	for name, pdf := range entries {
		if got := printTagged(t, pdf); got != "no" {
			t.Errorf("%s: Tagged %s with the batch's tagged false", name, got)
		}
	}
}
