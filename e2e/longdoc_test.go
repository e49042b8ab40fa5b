package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// splitLedger is a ledger of sections that each start on a new page, with
// links from page 1 to each and a global footer.
func splitLedger(sections int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Ledger</title>
<style>body{font:12px sans-serif} h2{break-before:page}</style></head><body><h1 id="top">Ledger</h1><p>`)
	for s := 1; s <= sections; s++ {
		fmt.Fprintf(&b, `<a href="#s%d">Section %d</a> `, s, s)
	}
	b.WriteString(`</p>`)
	for s := 1; s <= sections; s++ {
		fmt.Fprintf(&b, `<h2 id="s%d">Section %d</h2><table><tbody>`, s, s)
		for r := 1; r <= 80; r++ {
			fmt.Fprintf(&b, `<tr><td>S%dR%d</td><td>Ledger line %d</td></tr>`, s, r, r)
		}
		b.WriteString(`</tbody></table>`)
	}
	b.WriteString(`</body></html>`)
	return b.String()
}

// TestSplitPrinting (DESIGN §10, issue 24 item 3): with
// DOCRENDER_SPLIT_PAGES at 4, a ledger of 12 or so pages is printed in
// slices by several tabs and joined; the answer reads as the print in one
// piece (split: false): the same pages, the same text on each, "Page i of
// n" in the footer, links to the right pages, an outline, tags. A batch
// document is split too.
func TestSplitPrinting(t *testing.T) {
	svc := startService(t, func(cfg *configT) { cfg.SplitPages = 4 })
	c := newClient(t, svc)
	opts := func(split bool) map[string]any {
		return map[string]any{"split": split, "outline": true, "headerTemplate": "<span></span>",
			"footerTemplate": `<div style="font-size:9px;width:100%;text-align:center">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>`}
	}
	html := splitLedger(6)
	get := func(o map[string]any) []byte {
		resp := c.generate([]file{htmlFile("index.html", html)}, o)
		mustStatus(t, resp, http.StatusOK)
		// The report says how many slices (one per render slot).
		if h := resp.Header.Get("Docrender-Render-Report"); strings.Contains(h, "slices=") == (o["split"] == false) {
			t.Errorf("split %v: Docrender-Render-Report %q", o["split"], h)
		}
		return readAll(t, resp)
	}
	whole, auto := get(opts(false)), get(map[string]any{"outline": true, "headerTemplate": "<span></span>", "footerTemplate": opts(true)["footerTemplate"]})
	n := pdfInfoFields(t, whole, "")["Pages"]
	if got := pdfInfoFields(t, auto, ""); got["Pages"] != n || got["Tagged"] != "yes" {
		t.Fatalf("split: pdfinfo %v, want %s pages, tagged", got, n)
	}
	pages := 0
	fmt.Sscan(n, &pages)

	for i := 1; i <= pages; i++ {
		// The same words in the same places (Chromium may paint a slice's
		// table in another order, which pdftotext's plain text shows).
		w, s := pageWords(t, whole, i), pageWords(t, auto, i)
		if !slices.Equal(w, s) || !slices.Contains(s, fmt.Sprintf("%d", pages)) {
			t.Errorf("page %d:\nsplit:     %q\none piece: %q", i, s, w)
		}
		if !strings.Contains(pageText(t, auto, i), fmt.Sprintf("Page %d of %d", i, pages)) {
			t.Errorf("page %d lacks its footer", i)
		}
	}
	if got, want := linkPages(t, auto, 1), linkPages(t, whole, 1); fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 6 {
		t.Errorf("page 1's links go to %v, in one piece %v", got, want)
	}
	if got, want := printOutline(t, auto), printOutline(t, whole); !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("outline %q, in one piece %q", got, want)
	}
	if js := run(t, "qpdf", "--json", writeTemp(t, auto, ".pdf")); !strings.Contains(js, `"Section 6"`) {
		t.Errorf("the outline lacks the sections")
	}
	run(t, "qpdf", "--check", writeTemp(t, auto, ".pdf"))

	// A batch document, split past the same length.
	resp := c.batch(map[string]any{"documents": []map[string]any{{"fileName": "ledger", "htmlContent": html}}})
	mustStatus(t, resp, http.StatusOK)
	doc := zipEntries(t, readAll(t, resp))["ledger.pdf"]
	if got := pdfInfoFields(t, doc, "")["Pages"]; got != n {
		t.Errorf("batch document: %s pages, want %s", got, n)
	}
	if !strings.Contains(pageText(t, doc, pages), "S6R80") {
		t.Errorf("batch document's last page lacks the last row")
	}
}

var bboxWordRe = regexp.MustCompile(`<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="[\d.]+" yMax="[\d.]+">([^<]*)</word>`)

// pageWords is page n's words with their places (pdftotext -bbox, to a
// tenth of a point), sorted.
func pageWords(t testing.TB, pdf []byte, n int) []string {
	t.Helper()
	out := run(t, "pdftotext", "-bbox", "-f", fmt.Sprint(n), "-l", fmt.Sprint(n), writeTemp(t, pdf, ".pdf"), "-")
	var words []string
	for _, m := range bboxWordRe.FindAllStringSubmatch(out, -1) {
		var x, y float64
		fmt.Sscan(m[1], &x)
		fmt.Sscan(m[2], &y)
		words = append(words, fmt.Sprintf("%s@%.1f,%.1f", m[3], x, y), m[3])
	}
	slices.Sort(words)
	return words
}

// TestSplitLeavesRoomForOthers (DESIGN §5 with §10): while one account's
// long document prints in slices on every render slot's worth of tabs, another
// account's one-page render is served, and finishes first: a split job
// takes at most one tab per slot, and the pool keeps two.
func TestSplitLeavesRoomForOthers(t *testing.T) {
	svc := startService(t, func(cfg *configT) {
		cfg.SplitPages = 4
		// A busy CI machine prints the long one for tens of seconds.
		cfg.RenderTimeout = 3 * time.Minute
		hobby := cfg.Plans["hobby"]
		hobby.MaxPages = 100000
		cfg.Plans["hobby"] = hobby
	})
	big, small := newClient(t, svc), newClient(t, svc)
	type done struct {
		status int
		at     time.Time
		report string
	}
	longDone := make(chan done, 1)
	go func() {
		// Long enough to print for some seconds on any machine (60 sections
		// printed in about a second here, before the small one was asked).
		resp := big.generate([]file{htmlFile("index.html", splitLedger(250))}, map[string]any{"split": true})
		body := readAll(t, resp)
		report := resp.Header.Get("Docrender-Render-Report")
		if resp.StatusCode != http.StatusOK {
			report = string(body) // the error, for the failure message
		}
		longDone <- done{resp.StatusCode, time.Now(), report}
	}()
	// Once the long one is printing (its slices hold their tabs)...
	time.Sleep(1500 * time.Millisecond)
	resp := small.generate([]file{htmlFile("index.html", "<h1>SMALLRENDER</h1>")}, nil)
	mustStatus(t, resp, http.StatusOK)
	shortAt := time.Now()
	if !strings.Contains(pdfText(t, readAll(t, resp)), "SMALLRENDER") {
		t.Error("the small render's PDF lacks its text")
	}
	l := <-longDone
	if l.status != http.StatusOK || !strings.Contains(l.report, "slices=") {
		t.Fatalf("the long document: %d %q, want 200 printed in slices", l.status, l.report)
	}
	if !shortAt.Before(l.at) {
		t.Errorf("the one-page render finished after the long document")
	}
}
