package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// refsHTML is a document whose chapters each start on a new page, chapter
// 3 on page 4, with a table of contents at <nav data-toc>, references to
// chapter pages and the page count.
const refsHTML = `<!doctype html><html><head><title>Refs</title><style>
section { break-before: page } .tall { height: 600px } p, li { margin: 0 }
</style></head><body>
<h1 id="contents">Contents</h1><nav data-toc></nav>
<p>Chapter three is on page <span data-page-of="#ch3">?</span> of <span data-pages-total></span>.</p>
<section><h1 id="ch1">Chapter One</h1><p>See page <span data-page-of="#ch3"></span> for chapter three.</p></section>
<section><h1>Chapter Two</h1><div class="tall"></div><h2>Part Two B</h2></section>
<section><h1 id="ch3">Chapter Three</h1><h2>Part Three A</h2><p>Back to chapter one: page <span data-page-of="#ch1"></span>.</p></section>
</body></html>`

// linkPages is, for each link annotation on page n (from 1) of pdf, the
// page its destination is on (qpdf --json): a named destination looked up
// in the catalog's /Dests, or an explicit one.
func linkPages(t *testing.T, pdf []byte, n int) []int {
	t.Helper()
	var doc struct {
		Pages []struct {
			Object string `json:"object"`
		} `json:"pages"`
		QPDF []json.RawMessage `json:"qpdf"`
	}
	if err := json.Unmarshal([]byte(run(t, "qpdf", "--json", writeTemp(t, pdf, ".pdf"))), &doc); err != nil {
		t.Fatal(err)
	}
	var objects map[string]struct {
		Value any `json:"value"`
	}
	if len(doc.QPDF) < 2 {
		t.Fatal("qpdf --json has no objects")
	}
	if err := json.Unmarshal(doc.QPDF[1], &objects); err != nil {
		t.Fatal(err)
	}
	obj := func(ref any) map[string]any {
		if s, ok := ref.(string); ok {
			m, _ := objects["obj:"+s].Value.(map[string]any)
			return m
		}
		m, _ := ref.(map[string]any)
		return m
	}
	pageOf := map[string]int{}
	for i, p := range doc.Pages {
		pageOf[p.Object] = i + 1
	}
	var dests map[string]any
	for _, o := range objects {
		if m, ok := o.Value.(map[string]any); ok && m["/Type"] == "/Catalog" {
			dests = obj(m["/Dests"])
		}
	}
	destPage := func(d any) int {
		if name, ok := d.(string); ok && strings.HasPrefix(name, "/") {
			d = dests[name]
		}
		if arr, ok := d.([]any); ok && len(arr) > 0 {
			if ref, ok := arr[0].(string); ok {
				return pageOf[ref]
			}
		}
		return 0
	}
	var pages []int
	annots, _ := obj(doc.Pages[n-1].Object)["/Annots"].([]any)
	if s, ok := obj(doc.Pages[n-1].Object)["/Annots"].(string); ok {
		annots, _ = objects["obj:"+s].Value.([]any)
	}
	for _, a := range annots {
		an := obj(a)
		if an["/Subtype"] != "/Link" {
			continue
		}
		d, ok := an["/Dest"]
		if !ok {
			if act := obj(an["/A"]); act != nil {
				d = act["/D"]
			}
		}
		pages = append(pages, destPage(d))
	}
	return pages
}

// TestPageReferences (DESIGN §10, issue 24): through the gateway, toc: true
// fills <nav data-toc> with the headings h1–h3 and the page each starts on,
// and links to them; the references and the page count are right on every
// page and agree with the footer's page numbers; two passes, in the
// report's header; with outline the bookmarks are the headings.
func TestPageReferences(t *testing.T) {
	c := newClient(t, sharedService(t))
	resp := c.generate([]file{htmlFile("index.html", refsHTML)}, map[string]any{"toc": true, "outline": true,
		"footerTemplate": `<div style="font-size:10px;width:100%;text-align:center">folio <span class="pageNumber"></span>/<span class="totalPages"></span></div>`})
	mustStatus(t, resp, http.StatusOK)
	if h := resp.Header.Get("Docrender-Render-Report"); !strings.HasPrefix(h, "pages=4,") || !strings.HasSuffix(h, ", passes=2") {
		t.Errorf("Docrender-Render-Report %q, want pages=4 … passes=2", h)
	}
	pdf := readAll(t, resp)
	p1 := pageText(t, pdf, 1)
	for _, want := range []string{`Contents +1\n`, `Chapter One +2\n`, `Chapter Two +3\n`, `Part Two B +3\n`, `Chapter Three +4\n`, `Part Three A +4\n`,
		`Chapter three is on page 4 of 4\.`, `folio 1/4`} {
		if !regexp.MustCompile(want).MatchString(p1) {
			t.Errorf("page 1 lacks %q:\n%s", want, p1)
		}
	}
	for n, want := range map[int][]string{2: {"Chapter One", "See page 4 for chapter three.", "folio 2/4"}, 3: {"Chapter Two", "Part Two B", "folio 3/4"},
		4: {"Chapter Three", "Back to chapter one: page 2.", "folio 4/4"}} {
		printHas(t, fmt.Sprintf("page %d", n), pageText(t, pdf, n), want...)
	}
	// The contents' links: Contents, Chapter One, Two, Part Two B, Three, Part Three A.
	if got, want := linkPages(t, pdf, 1), []int{1, 2, 3, 3, 4, 4}; !slices.Equal(got, want) {
		t.Errorf("the contents' links go to pages %v, want %v", got, want)
	}
	if got := printOutline(t, pdf); !slices.Contains(got, "Chapter Three") || !slices.Contains(got, "Contents") {
		t.Errorf("outline %q, want the headings", got)
	}
}
