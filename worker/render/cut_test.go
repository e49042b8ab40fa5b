package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/docrender/docrender/pkg/testenv/ledger"
	"github.com/docrender/docrender/pkg/testenv/syncbuf"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

func TestCutHTML(t *testing.T) {
	long := ledger.HTML(40)
	tests := []struct {
		name  string
		src   string
		files egress.Bundle
		k     int
		// want: each slice holds these, in order; none holds another's.
		want  [][]string
		title string
	}{
		{name: "ledger: cut at a section's forced break", src: long, k: 2,
			want: [][]string{{">Ledger</h1>", ">Section 1<", "Line item number 1 of"}, {">Section 3<", "Line item number 2080 of"}}, title: "Ledger"},
		{name: "forced break from a linked stylesheet, not before a heading", k: 2,
			src:   `<html><head><link rel="stylesheet" href="css/p.css?v=1"></head><body>` + blocks("p", 40, 0, "") + `<p class="x">FORCED</p>` + blocks("p", 40, 41, "") + `</body></html>`,
			files: egress.Bundle{"css/p.css": []byte(`/* c */ @media print { p.x { page-break-before: always } }`)},
			want:  [][]string{{"block 0 ", "block 39 "}, {"FORCED", "block 80 "}}},
		{name: "style attribute break after", k: 2,
			src:  `<body>` + blocks("div", 38, 0, "") + `<div style="break-after: page">AFTER</div>` + blocks("div", 40, 39, "") + `</body>`,
			want: [][]string{{"block 0 ", "AFTER"}, {"block 39 "}}},
		{name: "rows of a long table, its head in every slice", k: 2,
			src:  `<body><table><thead><tr><th>HEAD</th></tr></thead><tbody>` + blocks("tr", 100, 0, "td") + `</tbody></table></body>`,
			want: [][]string{{"HEAD", "block 0 ", "block 47 "}, {"HEAD", "block 53 ", "block 99 "}}},
		{name: "children of a long container", k: 2,
			src:  `<body><main class="m">` + blocks("section", 60, 0, "") + `</main></body>`,
			want: [][]string{{`<main class="m">`, "block 0 "}, {`<main class="m">`, "block 59 "}}},
		{name: "page-wide elements in every slice, a template's heading not in the outline", k: 2,
			src: `<body><style>p{color:red}</style><svg><defs><linearGradient id="g"/></defs></svg><template><h1>Hidden</h1></template>` +
				blocks("p", 40, 0, "") + blocks("p", 40, 40, "") + `</body>`,
			want: [][]string{{"<style>", `<linearGradient id="g">`, "<template>", "block 0 "}, {"<style>", `<linearGradient id="g">`, "<template>", "block 79 "}}},
		{name: "not under a rowspan", k: 2,
			src:  `<body><table><tbody>` + blocks("tr", 39, 0, "td") + `<tr><td rowspan="4">SPAN</td><td>x</td></tr>` + blocks("tr", 3, 40, "td") + blocks("tr", 40, 43, "td") + `</tbody></table></body>`,
			want: [][]string{{"block 0 ", "SPAN", "block 42 "}, {"block 43 ", "block 82 "}}},
		{name: "text straight in the body", k: 2, src: `<body>text` + blocks("p", 10, 0, "") + `</body>`},
		{name: "one block", k: 2, src: `<body><div>` + strings.Repeat("x", 1000) + `</div></body>`},
		{name: "nested past Chromium's depth", k: 2, src: `<body>` + strings.Repeat("<div>", 600) + blocks("p", 10, 0, "") + `</body>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := cutHTML(context.Background(), tc.src, tc.files, "index.html", cutting{slots: tc.k})
			if tc.want == nil {
				if err != errUnsplittable {
					t.Fatalf("cut: %v, want errUnsplittable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Slices) != len(tc.want) {
				t.Fatalf("%d slices, want %d", len(plan.Slices), len(tc.want))
			}
			if plan.Title != tc.title {
				t.Errorf("title %q, want %q", plan.Title, tc.title)
			}
			for i, s := range plan.Slices {
				at := 0
				for _, w := range tc.want[i] {
					j := strings.Index(s[at:], w)
					if j < 0 {
						t.Errorf("slice %d lacks %q (after offset %d)", i+1, w, at)
						continue
					}
					at += j
				}
				for o, other := range tc.want {
					for _, w := range other {
						if o != i && strings.HasPrefix(w, "block") && strings.Contains(s, w) {
							t.Errorf("slice %d holds %q of slice %d", i+1, w, o+1)
						}
					}
				}
			}
		})
	}
}

// TestCutHTMLLinks: every heading gets an ID and a heading; a slice links,
// hidden, to what it holds and stands in for what it links to elsewhere.
func TestCutHTMLLinks(t *testing.T) {
	src := `<!doctype html><html><head><title> A   ledger </title></head><body>` +
		`<h1>Top</h1><p><a href="#far%20away">to the end</a></p>` + blocks("p", 60, 0, "") +
		`<h2 id="docrender-h-1">Taken</h2>` + blocks("p", 60, 60, "") + `<h2 id="far away">End</h2></body></html>`
	plan, err := cutHTML(context.Background(), src, nil, "index.html", cutting{slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Title != "A ledger" {
		t.Errorf("title %q", plan.Title)
	}
	var dests []string
	for _, h := range plan.Headings {
		dests = append(dests, h.Title+"="+h.Dest)
	}
	if got := strings.Join(dests, " "); got != "Top=docrender-h-2 Taken=docrender-h-1 End=far away" {
		t.Errorf("headings %s", got)
	}
	first, second := plan.Slices[0], plan.Slices[1]
	if !strings.HasPrefix(first, "<!DOCTYPE html>") {
		t.Errorf("no doctype: %.40s", first)
	}
	if !strings.Contains(first, `<span id="far away"></span>`) || strings.Contains(second, `<span id="far away">`) {
		t.Error("the stand-in for the far target is not in the first slice alone")
	}
	if !strings.Contains(second, `<a href="#far%20away" tabindex="-1">`) || !strings.Contains(first, `<a href="#docrender-h-2" tabindex="-1">`) {
		t.Error("hidden links to the held targets missing")
	}
}

// TestCutHTMLBounds: what a hostile page makes the cut do stays bounded:
// past maxBreakRules its CSS is not read for breaks, titles are cut
// short, a fragment that is not UTF-8 escaped links as written, images
// weigh as pages (a page of scans is cut into slices of about 700), a
// page of too many elements is not cut here, a done context stops it.
func TestCutHTMLBounds(t *testing.T) {
	ctx := context.Background()
	var css strings.Builder
	for i := range maxBreakRules + 1 {
		fmt.Fprintf(&css, ".c%d{break-before:page}", i)
	}
	body := blocks("p", 30, 0, "") + `<p class="c3">C3</p>` + blocks("p", 50, 31, "")
	for _, tc := range []struct {
		css     string
		atBreak bool
	}{{".c3{break-before:page}", true}, {css.String(), false}} {
		plan, err := cutHTML(ctx, `<head><style>`+tc.css+`</style></head><body>`+body+`</body>`, nil, "index.html", cutting{slots: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(plan.Slices[1], "C3"); got != tc.atBreak {
			t.Errorf("%d bytes of CSS: cut at the break %v, want %v", len(tc.css), got, tc.atBreak)
		}
	}

	long := strings.Repeat("x", 5000)
	src := `<head><title>` + long + `</title></head><body><h1>` + long + `</h1>` + blocks("p", 40, 0, "") + `<p><a href="#%E9t%E9">bad</a></p></body>`
	plan, err := cutHTML(ctx, src, nil, "index.html", cutting{slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Title) != maxTitleBytes || len(plan.Headings[0].Title) != maxTitleBytes {
		t.Errorf("title %d bytes, heading %d, want %d", len(plan.Title), len(plan.Headings[0].Title), maxTitleBytes)
	}
	for _, sl := range plan.Slices {
		if !utf8.ValidString(sl) {
			t.Error("a slice is not UTF-8")
		}
	}

	// Whether the service cuts a page it was not asked to: by its
	// content's size, not by data: URLs.
	dataURL := `<img src="data:image/png;base64,` + strings.Repeat("A", 100_000) + `">`
	for _, tc := range []struct {
		name string
		src  string
		cut  bool
	}{{"short", blocks("p", 100, 0, ""), false}, {"short with a large data: image", blocks("p", 100, 0, "") + dataURL, false}, {"long", ledger.HTML(40), true}} {
		_, err := cutHTML(ctx, "<body>"+tc.src+"</body>", nil, "index.html", cutting{slots: 2, minPages: 4})
		if cut := err == nil; cut != tc.cut {
			t.Errorf("%s, at least 4 pages: cut %v (%v), want %v", tc.name, cut, err, tc.cut)
		}
	}

	var scans strings.Builder
	for i := range 12_000 {
		fmt.Fprintf(&scans, `<img src="s%d.jpg">`, i)
	}
	if plan, err = cutHTML(ctx, "<body>"+scans.String()+"</body>", nil, "index.html", cutting{slots: 2}); err != nil {
		t.Fatal(err)
	}
	if n := len(plan.Slices); n < 12_000/800 || n%2 != 0 {
		t.Errorf("12,000 images cut into %d slices, want at least 15, a multiple of 2", n)
	}
	// DOCRENDER_SLICE_PAGES bounds a slice of a source as it bounds one of
	// a loaded page: 1,200 images (a page each, by size: 7 MB) in slices
	// of at most 50 pages, not of sliceBytes.
	scans.Reset()
	for i := range 1_200 {
		fmt.Fprintf(&scans, `<img src="s%d.jpg">`, i)
	}
	for _, tc := range []struct{ slicePages, least, most int }{{0, 2, 8}, {50, 1_200 / 50, maxSlices}} {
		if plan, err = cutHTML(ctx, "<body>"+scans.String()+"</body>", nil, "index.html", cutting{slots: 2, slicePages: tc.slicePages}); err != nil {
			t.Fatal(err)
		}
		if n := len(plan.Slices); n < tc.least || n > tc.most || n%2 != 0 {
			t.Errorf("1,200 images, slices of %d pages: %d slices, want %d to %d, a multiple of 2", tc.slicePages, n, tc.least, tc.most)
		}
	}

	if _, err := cutHTML(ctx, "<body>"+strings.Repeat("<i></i>", maxCutElements)+"</body>", nil, "index.html", cutting{slots: 2}); err != errUnsplittable {
		t.Errorf("too many elements: %v, want errUnsplittable", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := cutHTML(done, ledger.HTML(40), nil, "index.html", cutting{slots: 2}); err != context.Canceled {
		t.Errorf("done context: %v", err)
	}
}

// checkCutReport checks the report of TestCutSlicesInTabs's page: each
// missing file once, the stylesheet every slice asked for too.
func checkCutReport(t *testing.T, out Output, run string) {
	t.Helper()
	rep := out.Report
	var failed []string
	for _, f := range rep.FailedRequests {
		failed = append(failed, f.Url)
	}
	slices.Sort(failed)
	if want := []string{"missing-1.png", "missing-2.png", "missing-3.png", "missing-4.png", "missing-bg.png"}; !slices.Equal(failed, want) || rep.FailedTotal != 5 {
		t.Errorf("%s: failed requests %q (total %d), want %q", run, failed, rep.FailedTotal, want)
	}
	noAlt := slices.Sorted(slices.Values(rep.ImagesWithoutAlt))
	if want := []string{"missing-1.png", "missing-2.png", "missing-3.png", "missing-4.png"}; !slices.Equal(noAlt, want) || rep.ImagesWithoutAltTotal != 4 {
		t.Errorf("%s: images without alt %q (total %d), want %q", run, noAlt, rep.ImagesWithoutAltTotal, want)
	}
}

// blocks writes n elements tag numbered from first, each about 100 bytes;
// inner wraps the text in an element of its own (a row's cell).
func blocks(tag string, n, first int, inner string) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		text := "block " + strconv.Itoa(i) + " " + strings.Repeat("·", 40)
		if inner != "" {
			text = "<" + inner + ">" + text + "</" + inner + ">"
		}
		b.WriteString("<" + tag + ">" + text + "</" + tag + ">")
	}
	return b.String()
}

// TestCutSlicesInTabs: a page cut before loading (split: true) prints its
// slices in two tabs at once and its bands in two halves; each slice is
// hooked and heard as the job's page is: the QR code in the last slice is
// drawn, the report names the missing file and the image without alt text
// of every slice, and failOnResourceErrors fails on a file the last slice
// lost.
func TestCutSlicesInTabs(t *testing.T) {
	bin, err := browser.FindChromium("")
	if err != nil {
		t.Skipf("no Chromium: %v", err)
	}
	testRenderer(t) // the shared egress proxy
	pool, err := browser.Start(context.Background(), browser.Config{Bin: bin, Proxy: testProxy.Addr(), HomeURL: egress.HomeURL, Tabs: 2,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), NewLane: func() (browser.Lane, error) { return testProxy.NewLane() }})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var logged syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := &Renderer{Pool: pool, Hooks: []PageHook{QRCodes, Accessibility}, SplitPages: 4, SplitSlots: 2, Log: log}
	defer func(old int) { spreadBands = old }(spreadBands)
	spreadBands = 2

	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Cut</title><style>h2{break-before:page;background-image:url(missing-bg.png)}</style></head><body>`)
	for s := 1; s <= 4; s++ {
		// Tall, in few bytes: long by its layout, short by its size.
		fmt.Fprintf(&b, `<h2>Part %d</h2><img src="missing-%d.png" width="10" height="10"><div style="height:1500px"></div>`, s, s)
		b.WriteString(blocks("p", 30, s*100, ""))
	}
	b.WriteString(`<img data-qr="https://example.test/cut" data-qr-size="150" alt="code"></body></html>`)
	footer := `<div style="font-size:9px;margin:auto">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>`
	maxPages := 0
	render := func(pr *jobspb.Print) (Output, error) {
		if pr.Split == jobspb.Split_SPLIT_AUTO {
			pr.Split = jobspb.Split_SPLIT_ON
		} else {
			pr.Split = jobspb.Split_SPLIT_AUTO
		}
		pr.HeaderTemplate, pr.FooterTemplate = "<span></span>", footer
		rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: pr, MaxPages: int32(maxPages)}
		return r.Render(context.Background(), egress.Bundle{"index.html": []byte(b.String())}, rj, 60*time.Second)
	}
	// Four slots' worth of slices on two tabs: the job's tab prints more
	// than the first, each heard once.
	for _, slots := range []int{4, 2} {
		r.SplitSlots = slots
		out, err := render(&jobspb.Print{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Report.Slices != int32(slots) {
			t.Errorf("%d slices, want %d", out.Report.Slices, slots)
		}
		checkCutReport(t, out, fmt.Sprintf("split: true, %d slots", slots))
	}
	// Not asked (split unset): under SplitPages × replacedWeight bytes the
	// page is measured by its layout and cut by planJS (its collector
	// heard the whole page, and no slice after it); long by its size, it
	// is cut before loading too.
	for _, splitPages := range []int{4, 1} {
		r.SplitPages = splitPages
		logged.Reset()
		out, err := render(&jobspb.Print{Split: jobspb.Split_SPLIT_OFF})
		if err != nil {
			t.Fatal(err)
		}
		if out.Report.Slices < 2 {
			t.Errorf("SplitPages %d: %d slices", splitPages, out.Report.Slices)
		}
		checkCutReport(t, out, fmt.Sprintf("split unset, SplitPages %d", splitPages))
		if cut := strings.Contains(logged.String(), "split: the source is cut before loading"); cut != (splitPages == 1) {
			t.Errorf("SplitPages %d, split unset: cut before loading %v", splitPages, cut)
		}
	}
	r.SplitPages = 4
	out, err := render(&jobspb.Print{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := pdfedit.PageCount(context.Background(), out.PDF)
	if err != nil || n < 4 {
		t.Fatalf("%d pages (%v)", n, err)
	}
	for i := 1; i <= n; i++ {
		if want := fmt.Sprintf("Page %d of %d", i, n); !strings.Contains(pageText(t, out.PDF, i), want) {
			t.Errorf("page %d lacks %q", i, want)
		}
	}
	png := pdfTool(t, out.PDF, "pdftoppm", "-f", strconv.Itoa(n), "-l", strconv.Itoa(n), "-r", "100", "-png", "PDF")
	cmd := exec.Command("zbarimg", "-q", "--raw", "-")
	cmd.Stdin = strings.NewReader(png)
	if got, err := cmd.Output(); err != nil || strings.TrimSpace(string(got)) != "https://example.test/cut" {
		t.Errorf("QR code on the last page: %q (%v)", got, err)
	}

	_, err = render(&jobspb.Print{FailOnResourceErrors: true})
	var ce *CheckError
	if !errors.As(err, &ce) || ce.Report.GetFailedTotal() != 5 {
		t.Errorf("err %v, want a *CheckError counting 5 failed requests", err)
	}

	// The plan's pages, counted over the slices.
	maxPages = n - 1
	_, err = render(&jobspb.Print{})
	var le *LimitError
	if !errors.As(err, &le) {
		t.Errorf("err %v, want a *LimitError past %d pages", err, maxPages)
	}
}
