package render

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

// ledgerDoc is a ledger of sections, each starting on a new page, each a
// heading and a table of rows running over two pages or so; page 1 links
// to every section, and the last section links back to the top.
func ledgerDoc(sections int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Split Ledger</title>
<style>body{font:12px sans-serif} h2{break-before:page} td{border-bottom:1px solid #ccc;padding:2px}</style></head><body>
<h1 id="top">Split Ledger</h1><p>`)
	for s := 1; s <= sections; s++ {
		fmt.Fprintf(&b, `<a href="#s%d">Section %d</a> `, s, s)
	}
	b.WriteString(`</p>`)
	for s := 1; s <= sections; s++ {
		fmt.Fprintf(&b, `<h2 id="s%d">Section %d</h2><table><thead><tr><th>Row</th><th>Text</th></tr></thead><tbody>`, s, s)
		for r := 1; r <= 70; r++ {
			fmt.Fprintf(&b, `<tr><td>S%dR%d</td><td>Ledger line %d of section %d</td></tr>`, s, r, r, s)
		}
		b.WriteString(`</tbody></table>`)
	}
	b.WriteString(`<p><a href="#top">Back to the top</a></p></body></html>`)
	return b.String()
}

// TestSplitReadsAsOnePiece: a ledger printed in slices (split: true, one
// slice per 4 pages) has the pages of the print in one piece, each with
// the same text, "Page i of n" from the global footer, the same named
// destinations on the same pages, an outline, tags; a ledger printed with
// split: false is one print. A page that cannot be cut (text straight in
// the body) prints in one piece even with split: true.
func TestSplitReadsAsOnePiece(t *testing.T) {
	r := testRenderer(t)
	r.SplitPages = 4
	defer func() { r.SplitPages = 0 }()
	footer := `<div style="font-size:9px;width:100%;text-align:center">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>`
	render := func(html string, split jobspb.Split) []byte {
		t.Helper()
		rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: &jobspb.Print{Split: split, Outline: true, FooterTemplate: footer, HeaderTemplate: "<span></span>"}}
		out, err := r.Render(context.Background(), egress.Bundle{"index.html": []byte(html)}, rj, 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if sliced := out.Report.Slices > 1; sliced != (split != jobspb.Split_SPLIT_OFF && strings.Contains(html, "Split Ledger")) {
			t.Errorf("split %v: printed in %d slices", split, out.Report.Slices)
		}
		return out.PDF
	}
	html := ledgerDoc(5)
	whole := render(html, jobspb.Split_SPLIT_OFF)
	// split: true cuts the source before loading (cut.go); a page found
	// long once loaded is cut by its layout (planJS).
	for _, how := range []jobspb.Split{jobspb.Split_SPLIT_ON, jobspb.Split_SPLIT_AUTO} {
		t.Run(how.String(), func(t *testing.T) { checkReadsAsOnePiece(t, whole, render(html, how)) })
	}

	// Not cut: text straight in the body.
	plain := `<!doctype html><body>Loose text<div style="break-after:page">one</div><div>two</div></body>`
	if n, err := pdfedit.PageCount(context.Background(), render(plain, jobspb.Split_SPLIT_ON)); err != nil || n != 2 {
		t.Errorf("unsplittable page: %d pages (%v), want 2", n, err)
	}
}

// checkReadsAsOnePiece compares a ledgerDoc printed in slices with the
// same printed whole.
func checkReadsAsOnePiece(t *testing.T, whole, split []byte) {
	ctx := context.Background()
	wd, wn, err := pdfedit.DestPages(ctx, whole)
	if err != nil {
		t.Fatal(err)
	}
	sd, sn, err := pdfedit.DestPages(ctx, split)
	if err != nil {
		t.Fatal(err)
	}
	if wn < 10 || sn != wn {
		t.Fatalf("pages: split %d, whole %d (want the same, ≥ 10)", sn, wn)
	}
	for id, p := range wd {
		if sd[id] != p {
			t.Errorf("destination %s on page %d, in one piece on %d", id, sd[id], p)
		}
	}
	if !maps.Equal(pickKeys(sd, "s1", "s3", "s5", "top"), pickKeys(wd, "s1", "s3", "s5", "top")) || len(pickKeys(sd, "s1", "s3", "s5", "top")) != 4 {
		t.Errorf("destinations %v, want those of one piece %v", sd, wd)
	}
	for i := 1; i <= wn; i++ {
		w, s := pageText(t, whole, i), pageText(t, split, i)
		if w != s {
			t.Errorf("page %d:\nsplit:\n%s\none piece:\n%s", i, s, w)
		}
		if want := fmt.Sprintf("Page %d of %d", i, wn); !strings.Contains(s, want) {
			t.Errorf("page %d lacks %q", i, want)
		}
	}
	info := pdfTool(t, split, "pdfinfo", "PDF")
	if !strings.Contains(info, "Tagged:          yes") {
		t.Errorf("split PDF not tagged:\n%s", info)
	}
	outline := pdfTool(t, split, "qpdf", "--json", "--json-key=outlines", "PDF")
	for _, want := range []string{"Split Ledger", "Section 1", "Section 5"} {
		if !strings.Contains(outline, want) {
			t.Errorf("outline lacks %q:\n%.600s", want, outline)
		}
	}
	pdfTool(t, split, "qpdf", "--check", "PDF")
}

// TestSplitLongTable: one table with no page break to cut at is cut
// between its rows: every row printed once, in order, its head repeated,
// a page more per cut at most.
func TestSplitLongTable(t *testing.T) {
	r := testRenderer(t)
	r.SplitPages = 4
	defer func() { r.SplitPages = 0 }()
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Rows</title></head><body><h1>Rows</h1><table><thead><tr><th>Head</th></tr></thead><tbody>`)
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&b, "<tr><td>row-%04d</td></tr>", i)
	}
	b.WriteString(`</tbody></table></body></html>`)
	// Too large to be written, as a long document is (2 MiB): navigated
	// to, then cut, each slice navigated to too.
	defer func(old int) { maxWrittenHTML = old }(maxWrittenHTML)
	maxWrittenHTML = 4 << 10
	pages := map[jobspb.Split]int{}
	var slices int32
	for _, split := range []jobspb.Split{jobspb.Split_SPLIT_OFF, jobspb.Split_SPLIT_ON} {
		rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: &jobspb.Print{Split: split, HeaderTemplate: "<span></span>",
			FooterTemplate: `<div style="font-size:9px;margin:auto">folio <span class="pageNumber"></span>/<span class="totalPages"></span></div>`}}
		out, err := r.Render(context.Background(), egress.Bundle{"index.html": []byte(b.String())}, rj, 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		text := pdfTool(t, out.PDF, "pdftotext", "PDF", "-")
		rows := regexp.MustCompile(`row-(\d{4})`).FindAllStringSubmatch(text, -1)
		if len(rows) != 500 {
			t.Fatalf("split %v: %d rows printed, want 500", split, len(rows))
		}
		for i, m := range rows {
			if m[1] != fmt.Sprintf("%04d", i+1) {
				t.Fatalf("split %v: row %d is %s", split, i+1, m[1])
			}
		}
		if pages[split], err = pdfedit.PageCount(context.Background(), out.PDF); err != nil {
			t.Fatal(err)
		}
		if split == jobspb.Split_SPLIT_ON {
			slices = out.Report.Slices
		}
		if heads := strings.Count(text, "Head"); heads != pages[split] {
			t.Errorf("split %v: the head on %d of %d pages", split, heads, pages[split])
		}
		// The footer's numbers are the whole document's (bands written
		// after the job's tab navigated).
		for _, p := range []int{1, pages[split]} {
			if want := fmt.Sprintf("folio %d/%d", p, pages[split]); !strings.Contains(pageText(t, out.PDF, p), want) {
				t.Errorf("split %v: page %d lacks %q", split, p, want)
			}
		}
	}
	// Each cut a page more at most.
	if one, split := pages[jobspb.Split_SPLIT_OFF], pages[jobspb.Split_SPLIT_ON]; slices < 2 || split < one || split > one+int(slices)-1 {
		t.Errorf("pages: split %d in %d slices, one piece %d", split, slices, one)
	}
}

func pickKeys(m map[string]int, keys ...string) map[string]int {
	out := map[string]int{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
