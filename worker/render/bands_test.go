package render

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfcheck"
	"github.com/docrender/docrender/worker/pdfedit"
)

// bandsFooter numbers the pages on a blue ground; bandsHeader prints the
// title.
const (
	bandsFooter = `<div style="background:#0000ff;color:#ffffff">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>`
	bandsHeader = `<div>Title: <span class="title"></span></div>`
)

// needBandTools skips a test without poppler.
func needBandTools(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"pdftotext", "pdfinfo", "pdftoppm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// printTestBands prints the bands of a job of page and pr in a tab of
// r's pool.
func printTestBands(t testing.TB, r *Renderer, page *jobspb.Page, pr *jobspb.Print, b bands) ([]byte, error) {
	t.Helper()
	m, err := marginTemplates(egress.Bundle{}, page, pr)
	if err != nil {
		t.Fatal(err)
	}
	b.fonts = m.fonts
	if b.url == "" {
		b.url = egress.HomeURL + "bands/index.html"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var pdf []byte
	err = r.Pool.Tab(ctx, func(tab *browser.Tab) error {
		var err error
		pdf, err = printBands(ctx, tab, printRequest(page, pr, m), b)
		return err
	})
	return pdf, err
}

// pageWords are the words of one page and their boxes (pdftotext -bbox).
func pageWords(t testing.TB, pdf []byte, page int) map[string][]wordBox {
	t.Helper()
	n := strconv.Itoa(page)
	words := map[string][]wordBox{}
	for _, m := range bboxWord.FindAllStringSubmatch(pdfTool(t, pdf, "pdftotext", "-bbox", "-f", n, "-l", n, "PDF", "-"), -1) {
		f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
		words[m[5]] = append(words[m[5]], wordBox{f(m[1]), f(m[2]), f(m[3]), f(m[4])})
	}
	return words
}

// pixelAt is the colour of page at (x, y) points from the top left.
func pixelAt(t testing.TB, pdf []byte, page int, x, y float64) color.RGBA {
	t.Helper()
	return rgbaAt(pageImage(t, pdf, page, 72), int(x), int(y))
}

// TestBandsStamped prints a 5-page document without header and footer,
// prints its bands (a title header, a "Page n of 5" footer on blue) and
// stamps them on: every page reads as the same document printed with the
// header and footer in one piece, at the same places, tagged as before
// with the bands outside the structure.
func TestBandsStamped(t *testing.T) {
	r := testRenderer(t)
	needBandTools(t)
	const n = 5
	// A red page: the bands must not cover it.
	doc := egress.Bundle{"index.html": []byte(pagesHTML(n, `<style>html{background:#ff0000}</style>`))}
	withHF := &jobspb.Print{HeaderTemplate: bandsHeader, FooterTemplate: bandsFooter}

	content, err := printRender(t, r, doc, roomy, &jobspb.Print{}, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := printRender(t, r, doc, roomy, withHF, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	bandsPDF, err := printTestBands(t, r, roomy, withHF, bands{pages: n, title: "Paged"})
	if err != nil {
		t.Fatal(err)
	}
	if got := pdfTool(t, bandsPDF, "pdfinfo", "PDF"); !strings.Contains(got, "Pages:           5") || !strings.Contains(got, "Tagged:          no") {
		t.Fatalf("bands: want 5 untagged pages:\n%s", got)
	}
	ctx := context.Background()
	stamped, err := pdfedit.StampBands(ctx, content, bandsPDF)
	if err != nil {
		t.Fatal(err)
	}
	if got := pdfTool(t, stamped, "pdfinfo", "PDF"); !strings.Contains(got, "Pages:           5") || !strings.Contains(got, "Tagged:          yes") {
		t.Fatalf("stamped: want 5 tagged pages:\n%s", got)
	}

	for i := 1; i <= n; i++ {
		text := pageText(t, stamped, i)
		for _, want := range []string{fmt.Sprintf("PAGE%d", i), fmt.Sprintf("Page %d of %d", i, n), "Title: Paged"} {
			if !strings.Contains(text, want) {
				t.Errorf("page %d: %q missing from:\n%s", i, want, text)
			}
		}
		// Where Chromium puts them when it prints them itself.
		got, want := pageWords(t, stamped, i), pageWords(t, direct, i)
		for _, w := range []string{"Page", strconv.Itoa(i), "of", "Title:", "Paged", fmt.Sprintf("PAGE%d", i)} {
			if len(got[w]) == 0 || len(want[w]) == 0 {
				t.Errorf("page %d: word %q: stamped %v, direct %v", i, w, got[w], want[w])
				continue
			}
			g, d := got[w][len(got[w])-1], want[w][len(want[w])-1]
			if math.Abs(g.xMin-d.xMin) > 1 || math.Abs(g.yMin-d.yMin) > 1 || math.Abs(g.xMax-d.xMax) > 1 || math.Abs(g.yMax-d.yMax) > 1 {
				t.Errorf("page %d: word %q at %+v, printed directly at %+v", i, w, g, d)
			}
		}
	}

	// The content shows through; the footer's own ground prints.
	words := pageWords(t, stamped, 2)
	red, blue := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}
	if got := pixelAt(t, stamped, 2, 8.27*72/2, 11.69*72/2); got != red {
		t.Errorf("centre of page 2: %v, want the content's red", got)
	}
	if of := words["of"]; len(of) > 0 {
		b := of[len(of)-1]
		x, y := 8.27*72/2+100, (b.yMin+b.yMax)/2
		if got, want := pixelAt(t, stamped, 2, x, y), pixelAt(t, direct, 2, x, y); got != want || got != blue {
			t.Errorf("footer ground of page 2 at (%.0f, %.0f): %v, printed directly %v, want blue", x, y, got, want)
		}
	}

	// Tagged as it was: the same structure (the bands are not in it) and
	// no new PDF/UA violation (the bands are artifacts).
	if got, want := pdfTool(t, stamped, "pdfinfo", "-struct-text", "PDF"), pdfTool(t, content, "pdfinfo", "-struct-text", "PDF"); got != want {
		t.Errorf("structure changed:\n%s\nwas:\n%s", got, want)
	} else if strings.Contains(got, "Page 1 of") || !strings.Contains(got, "PAGE1") {
		t.Errorf("structure text:\n%s", got)
	}
	before, err := pdfcheck.Check(content, pdfcheck.Level{PDFUA: true})
	if err != nil {
		t.Fatal(err)
	}
	after, err := pdfcheck.Check(stamped, pdfcheck.Level{PDFUA: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range before {
		seen[v.Rule+" "+v.Object+" "+v.Message] = true
	}
	for _, v := range after {
		if !seen[v.Rule+" "+v.Object+" "+v.Message] {
			t.Errorf("new PDF/UA violation: %v", v)
		}
	}

	// Bands of another page count do not fit.
	four, err := printTestBands(t, r, roomy, withHF, bands{pages: 4, title: "Paged"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pdfedit.StampBands(ctx, content, four); !errors.Is(err, pdfedit.ErrBandsMismatch) {
		t.Errorf("5 pages, 4 bands: %v, want ErrBandsMismatch", err)
	}
}

// TestBandsPrint checks the bands document on its own: page counts
// (including more than one print's chunk), the bounds, a cancelled
// context.
func TestBandsPrint(t *testing.T) {
	r := testRenderer(t)
	needBandTools(t)
	pr := &jobspb.Print{FooterTemplate: bandsFooter}
	for _, n := range []int{1, 2, bandsChunk + 3} {
		pdf, err := printTestBands(t, r, a4, pr, bands{pages: n, title: "T"})
		if err != nil {
			t.Fatalf("%d pages: %v", n, err)
		}
		if got, err := pdfedit.PageCount(context.Background(), pdf); err != nil || got != n {
			t.Fatalf("%d pages: got %d (%v)", n, got, err)
		}
		if text := pageText(t, pdf, n); !strings.Contains(text, fmt.Sprintf("Page %d of %d", n, n)) {
			t.Errorf("%d pages: last page says %q", n, text)
		}
	}
	// A range of the bands, numbered in the whole document.
	pdf, err := printTestBands(t, r, a4, pr, bands{pages: 9, from: 4, to: 6})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := pdfedit.PageCount(context.Background(), pdf); err != nil || got != 3 {
		t.Fatalf("bands 4-6: %d pages (%v)", got, err)
	}
	for i := 1; i <= 3; i++ {
		if text := pageText(t, pdf, i); !strings.Contains(text, fmt.Sprintf("Page %d of 9", i+3)) {
			t.Errorf("bands 4-6: page %d says %q", i, text)
		}
	}
	for _, b := range []bands{{pages: 3, from: 2, to: 4}, {pages: 3, from: 3, to: 2}} {
		if _, err := printTestBands(t, r, a4, pr, b); err == nil {
			t.Errorf("%+v: no error", b)
		}
	}
	for _, n := range []int{0, -1, maxBands + 1} {
		if _, err := printTestBands(t, r, a4, pr, bands{pages: n}); err == nil {
			t.Errorf("%d pages: no error", n)
		}
	}
	if _, err := printTestBands(t, r, a4, &jobspb.Print{}, bands{pages: 2}); err == nil {
		t.Error("no header or footer: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, _ := marginTemplates(egress.Bundle{}, a4, pr)
	err = r.Pool.Tab(context.Background(), func(tab *browser.Tab) error {
		_, err := printBands(ctx, tab, printRequest(a4, pr, m), bands{pages: 3, url: egress.HomeURL + "bands/index.html"})
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
