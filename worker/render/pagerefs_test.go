package render

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
)

// layoutText is page n of pdf as pdftotext -layout reads it: a contents
// entry and its page number on one line.
func layoutText(t testing.TB, pdf []byte, n int) string {
	t.Helper()
	return pdfTool(t, pdf, "pdftotext", "-layout", "-f", fmt.Sprint(n), "-l", fmt.Sprint(n), "PDF", "-")
}

// chapters is a document of chapters that each start on a new page, chapter
// 3 on page 4, with a table of contents and references.
func chapters() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Refs</title><style>
section { break-before: page } .tall { height: 600px } p, li { margin: 0 }
</style></head><body>
<h1 id="contents">Contents</h1><nav data-toc></nav>
<p>Chapter three is on page <span class="ref" data-page-of="#ch3">?</span> of <span data-pages-total></span>.</p>
`)
	b.WriteString(`<section><h1 id="ch1">Chapter One</h1><p>See page <span data-page-of="#ch3"></span> for chapter three.</p></section>
<section><h1 id="ch2">Chapter Two</h1><div class="tall"></div><h2>Part Two B</h2></section>
<section><h1 id="ch3">Chapter Three</h1><h2>Part Three A</h2><p>Back to chapter one: page <span data-page-of="#ch1"></span>.</p></section>
</body></html>`)
	return b.String()
}

// TestPageReferences: chapter 3 starts on page 4, and the contents, the
// references and the page count say so on every page, after two passes.
func TestPageReferences(t *testing.T) {
	r := testRenderer(t)
	out, err := renderReport(t, r, chapters(), &jobspb.Print{Toc: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.Report.Passes != 2 {
		t.Errorf("passes %d, want 2", out.Report.Passes)
	}
	p1 := layoutText(t, out.PDF, 1)
	for _, want := range []string{`Contents +1\n`, `Chapter One +2\n`, `Chapter Two +3\n`, `Part Two B +3\n`, `Chapter Three +4\n`, `Part Three A +4\n`,
		`Chapter three is on page 4 of 4\.`} {
		if !regexp.MustCompile(want).MatchString(p1) {
			t.Errorf("page 1 lacks %q:\n%s", want, p1)
		}
	}
	if p := pageText(t, out.PDF, 2); !strings.Contains(p, "See page 4 for chapter three") {
		t.Errorf("page 2:\n%s", p)
	}
	if p := pageText(t, out.PDF, 4); !strings.Contains(p, "Chapter Three") || !strings.Contains(p, "chapter one: page 2.") {
		t.Errorf("page 4:\n%s", p)
	}
}

// TestPageReferencesMove: filling in the contents' numbers makes it longer
// (the page's style makes an entry with a number twice as tall) and pushes it
// onto a second page, and every chapter a page further: the next pass sees
// that, and the final numbers, the page count and the footer's page
// numbers are right and agree, after three passes.
func TestPageReferencesMove(t *testing.T) {
	r := testRenderer(t)
	var notes strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&notes, "<h3>Note %d</h3>", i)
	}
	html := strings.Replace(chapters(), "for chapter three.</p>", "for chapter three.</p>"+notes.String(), 1)
	html = strings.Replace(html, "</style>", "nav .docrender-toc-page:not(:empty) { min-height: 2.4em } h3 { margin: 0; font-size: 10px }</style>", 1)
	out, err := renderReport(t, r, html, &jobspb.Print{Toc: true,
		FooterTemplate: `<div style="font-size:10px">folio <span class="pageNumber"></span>/<span class="totalPages"></span></div>`})
	if err != nil {
		t.Fatal(err)
	}
	if out.Report.Passes != 3 {
		t.Errorf("passes %d, want 3", out.Report.Passes)
	}
	if p := pageText(t, out.PDF, 1); !strings.Contains(p, "Contents") || strings.Contains(p, "Chapter three is on page") {
		t.Errorf("page 1 is not the contents' first page:\n%s", p)
	}
	p2 := layoutText(t, out.PDF, 2)
	for _, want := range []string{`Chapter Three\s+5\n`, `Part Three A\s+5\n`, `Chapter three is on page 5 of 5\.`, `folio 2/5`} {
		if !regexp.MustCompile(want).MatchString(p2) {
			t.Errorf("page 2 lacks %q:\n%s", want, p2)
		}
	}
	if p := pageText(t, out.PDF, 3); !strings.Contains(p, "Chapter One") || !strings.Contains(p, "See page 5 for chapter three") {
		t.Errorf("page 3:\n%s", p)
	}
	if p := pageText(t, out.PDF, 5); !strings.Contains(p, "Chapter Three") || !strings.Contains(p, "chapter one: page 3.") || !strings.Contains(p, "folio 5/5") {
		t.Errorf("page 5:\n%s", p)
	}
}

// TestPlainPageOnePass: a page without references is printed once.
func TestPlainPageOnePass(t *testing.T) {
	r := testRenderer(t)
	out, err := renderReport(t, r, `<!doctype html><h1>Plain</h1><nav data-toc></nav>`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Report.Passes != 1 {
		t.Errorf("passes %d, want 1", out.Report.Passes)
	}
}
