package render

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
)

func TestHeadKey(t *testing.T) {
	const head = `<!doctype html><html lang="de"><head><meta charset="utf-8"><title>%s</title><link rel="stylesheet" href="style.css"></head>`
	a, okA := headKey(fmt.Sprintf(head, "Rechnung 1") + `<body><p>one</p></body></html>`)
	b, okB := headKey(fmt.Sprintf(head, "Rechnung <2>") + `<body class="x"><p>two</p><p>more</p></body></html>`)
	if !okA || !okB || a != b {
		t.Fatalf("same head but the title: %q (%v) and %q (%v)", a, okA, b, okB)
	}
	if c, _ := headKey(strings.Replace(fmt.Sprintf(head, "R"), `lang="de"`, `lang="fr"`, 1) + `<body></body>`); c == a {
		t.Error("another root element's attribute, same key")
	}
	if c, _ := headKey(`<style>p::after { content: "<body" }</style><style>p{color:red}</style><body>x</body>`); !strings.Contains(c, "color:red") {
		t.Errorf("<body in a stylesheet's text ended the head: %q", c)
	}
	for name, page := range map[string]string{
		"no body tag":         `<!doctype html><title>x</title><p>x</p>`,
		"html tag after body": `<body><p>x</p><html lang="en"></html></body>`,
		"autofocus":           `<body><input autofocus></body>`,
	} {
		if _, ok := headKey(page); ok {
			t.Errorf("%s: fillable", name)
		}
	}
}

// warmBundle is a stored template's page filled with n rows: a stylesheet
// with a web font and a background image, a logo, a title from the data.
func warmBundle(t *testing.T, title string, rows int) egress.Bundle {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>%s</title><link rel="stylesheet" href="style.css"></head>
<body class="rows-%d"><header><img src="img/logo.png" alt="Logo"><h1>Invoice %s</h1></header><table>`, title, rows, title)
	for i := range rows {
		fmt.Fprintf(&b, "<tr><td>%d</td><td>Item %s-%d</td><td class=amount>%d.00</td></tr>", i+1, title, i, 10*i+7)
	}
	b.WriteString(`</table><p class="total">Total</p></body></html>`)
	return egress.Bundle{
		"index.html": []byte(b.String()),
		"style.css": []byte(`@font-face { font-family: Brand; src: url(fonts/brand.ttf); }
body { font-family: Brand, sans-serif; font-size: 12pt; } h1 { color: #2a6; }
header { background: url(img/band.png) repeat-x; height: 80px; } img { height: 40px; }
td { border-bottom: 1px solid #ccc; padding: 3px; } .amount { text-align: right; }
.rows-3 h1 { font-style: italic; } .rows-1 td { padding: 9px }`),
		"fonts/brand.ttf": systemFont(t, "dejavu/DejaVuSerifCondensed-Italic.ttf"),
		"img/logo.png":    testPNG(t, 120, 40, color.RGBA{200, 30, 30, 255}),
		"img/band.png":    testPNG(t, 8, 80, color.RGBA{220, 240, 230, 255}),
	}
}

// dated are the lines that carry the time of printing.
var dated = regexp.MustCompile(`(?m)^.*(CreationDate|ModDate).*$`)

// printed is what a PDF shows: every word with its box, the page count and
// size, title and tagging, the images.
func printed(t *testing.T, pdf []byte) string {
	t.Helper()
	return dated.ReplaceAllString(pdfTool(t, pdf, "pdfinfo", "PDF")+pdfTool(t, pdf, "pdftotext", "-bbox", "PDF", "-"), "") +
		pdfTool(t, pdf, "pdfimages", "-list", "PDF")
}

func renderKeyed(t *testing.T, r *Renderer, b egress.Bundle, key string) []byte {
	t.Helper()
	rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: &jobspb.Print{}}
	out, err := r.RenderWarm(context.Background(), b, rj, 30*time.Second, key)
	if err != nil {
		t.Fatal(err)
	}
	return out.PDF
}

// TestWarmFillPrintsAsFresh: a document filled into a kept page prints as
// the same document written fresh: same words in the same places, same
// pages, size, title and images; a longer one, a shorter one, and across
// keys (accounts) never filled.
func TestWarmFillPrintsAsFresh(t *testing.T) {
	r := testRenderer(t, Accessibility)
	pool := r.Pool
	const key = "account-1\x00templates/v1/\x00index.html"
	docs := []struct {
		title string
		rows  int
	}{{"A-1", 3}, {"B-2 <&>", 60}, {"C-3", 1}, {"D-4", 3}}
	fresh := make([]string, len(docs))
	for i, d := range docs {
		fresh[i] = printed(t, renderKeyed(t, r, warmBundle(t, d.title, d.rows), ""))
	}
	if !strings.Contains(fresh[1], "Pages:           2") {
		t.Fatalf("the long document is not 2 pages:\n%s", fresh[1])
	}
	filled := pool.Filled()
	renderKeyed(t, r, warmBundle(t, "first", 5), key) // written, kept
	for i, d := range docs {
		got := printed(t, renderKeyed(t, r, warmBundle(t, d.title, d.rows), key))
		if pool.Filled() != filled+int64(i)+1 {
			t.Fatalf("document %d was not filled into the kept page (%d fills)", i, pool.Filled()-filled)
		}
		if got != fresh[i] {
			t.Errorf("document %s filled differs from fresh:\n--- fresh\n%s\n--- filled\n%s", d.title, fresh[i], got)
		}
	}

	// Another account's documents of the same files: written, never filled.
	filled = pool.Filled()
	got := printed(t, renderKeyed(t, r, warmBundle(t, docs[0].title, docs[0].rows), "account-2\x00templates/v1/\x00index.html"))
	if pool.Filled() != filled {
		t.Error("a page kept for one account was filled for another")
	}
	if got != fresh[0] {
		t.Errorf("other account's document differs from fresh:\n%s", got)
	}
	// Back to the first: its page is gone from the tab (one tab), written again.
	renderKeyed(t, r, warmBundle(t, "x", 2), key)
	if pool.Filled() != filled {
		t.Error("filled a page the other account's job replaced")
	}

	// A head that differs beyond the title (another stylesheet): written.
	b := warmBundle(t, "E-5", 2)
	b["index.html"] = []byte(strings.Replace(string(b["index.html"]), `<meta charset="utf-8">`, `<meta charset="utf-8"><style>td{color:red}</style>`, 1))
	renderKeyed(t, r, b, key)
	if pool.Filled() != filled {
		t.Error("filled a page with another head")
	}
	// The next of its head fills it; a page without a key is written,
	// whatever the tab holds, and ends the kept page.
	b = warmBundle(t, "F", 2)
	b["index.html"] = []byte(strings.Replace(string(b["index.html"]), `<meta charset="utf-8">`, `<meta charset="utf-8"><style>td{color:red}</style>`, 1))
	renderKeyed(t, r, b, key)
	renderKeyed(t, r, warmBundle(t, "G", 2), "")
	renderKeyed(t, r, warmBundle(t, "G", 2), key)
	if pool.Filled() != filled+1 {
		t.Errorf("%d fills, want 1", pool.Filled()-filled)
	}
}

// TestWarmScriptsFallBack: a template whose document runs scripts is
// navigated to every time, never kept nor filled.
func TestWarmScriptsFallBack(t *testing.T) {
	r := testRenderer(t)
	pool := r.Pool
	const key = "account-1\x00templates/scripted/\x00index.html"
	filled, opened := pool.Filled(), pool.Opened()
	for i := range 3 {
		b := warmBundle(t, fmt.Sprintf("S-%d", i), 2)
		b["index.html"] = []byte(strings.Replace(string(b["index.html"]), "</body>", fmt.Sprintf(`<p id="s"></p><script>document.getElementById('s').textContent = 'scripted %d';</script></body>`, i), 1))
		text := pdfTool(t, renderKeyed(t, r, b, key), "pdftotext", "PDF", "-")
		if !strings.Contains(text, fmt.Sprintf("scripted %d", i)) || !strings.Contains(text, fmt.Sprintf("Item S-%d-1", i)) {
			t.Errorf("document %d: %s", i, text)
		}
	}
	if pool.Filled() != filled || pool.Opened() != opened {
		t.Errorf("a scripted page was filled (%d) or written (%d)", pool.Filled()-filled, pool.Opened()-opened)
	}
}

// TestWarmNeedsACleanLoad: a page whose stylesheet asked for a file that
// is not there (a web font) is never kept warm, so every document of it
// reports the failed request (and fails failOnResourceErrors) as a fresh
// load does: a filled document would not ask for the font again.
func TestWarmNeedsACleanLoad(t *testing.T) {
	r := testRenderer(t)
	pool := r.Pool
	const key = "account-1\x00templates/missing/\x00index.html"
	filled := pool.Filled()
	for i := range 3 {
		b := warmBundle(t, fmt.Sprintf("M-%d", i), 2)
		delete(b, "fonts/brand.ttf") // the stylesheet's web font is gone
		rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: &jobspb.Print{FailOnResourceErrors: true}}
		_, err := r.RenderWarm(context.Background(), b, rj, 30*time.Second, key)
		var failed *CheckError
		if !errors.As(err, &failed) || len(failed.Report.GetFailedRequests()) == 0 {
			t.Fatalf("document %d: %v, want the missing font to fail the render", i, err)
		}
	}
	if pool.Filled() != filled {
		t.Errorf("%d documents filled into a page whose head failed to load", pool.Filled()-filled)
	}
}
