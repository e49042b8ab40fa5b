package render

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"strings"
	"sync"

	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/pdfedit"
)

// Bands: a document printed in slices (DESIGN §10), each slice by its own
// tab, would number its header and footer per slice. So the slices are
// printed without header and footer, and the header and footer of the
// whole document come from a "bands" PDF: a document of as many empty
// pages as the joined slices have, printed with the job's templates,
// paper, margins and scale, whose page i carries the header and footer of
// page i of n (pageNumber, totalPages); pdfedit.StampBands draws its page
// i over page i of the joined content.
//
// Measured (BenchmarkBands; 1000 A4 pages, title header and "Page n of N"
// footer, Chromium 156, 2 busy cores): the bands print in 5.6-6.7 s (the
// same empty pages without header and footer in 1.1 s: the templates
// cost ~5.6 ms a page, as in any print); a tagged 1000-page ledger
// printed in one piece took 35-39 s with the header and footer, 34-37 s
// without.

// maxBands bounds the pages of a bands document.
const maxBands = 100_000

// bandsChunk is how many pages of the bands document one print returns:
// Chromium fails ("Printing failed") on very long prints, so more are
// printed in page ranges of the same laid-out document (pageNumber and
// totalPages stay those of the whole document) and joined.
const bandsChunk = 2000

// bands says what a bands document is.
type bands struct {
	// pages is its page count: the joined document's.
	pages int
	// title is the joined document's title: the templates' title class.
	title string
	// url is the address the bands document is written at, on the home
	// origin (browser.Tab.Open): the templates' url class. The job's own
	// written page's address (egress.Site.HomeURL of its entry) makes the
	// url class print what one print of the job would.
	url string
	// fonts are the templates' web fonts (margins.fonts).
	fonts []string
	// from and to, when set, print only the bands of pages from to to
	// (1-based, inclusive), numbered as pages of the whole document: the
	// bands of a long document can be printed by several tabs at once,
	// as its slices are (each tab lays out all its empty pages, which is
	// cheap; the header and footer of every printed page is the cost).
	from, to int
}

// printBands writes a bands document of b.pages empty pages into t and
// prints it as req says (the job's print request, printRequest), with the
// header and footer, untagged, without an outline, pages b.from to b.to
// (all by default). The PDF has exactly those pages (checked).
//
// The page boxes print no background (printBackground false): a band is
// drawn over the content, and only its header and footer may paint. The
// templates' own backgrounds still print, as in any job: marginTemplates
// gives them print-color-adjust: exact, which printBackground does not
// switch off.
func printBands(ctx context.Context, t *browser.Tab, req printParams, b bands) ([]byte, error) {
	if b.pages < 1 || b.pages > maxBands {
		return nil, fmt.Errorf("render: bands: %d pages, not 1 to %d", b.pages, maxBands)
	}
	from, to := max(b.from, 1), b.to
	if to == 0 {
		to = b.pages
	}
	if from > to || to > b.pages {
		return nil, fmt.Errorf("render: bands: pages %d to %d of %d", from, to, b.pages)
	}
	if !req.DisplayHeaderFooter {
		return nil, fmt.Errorf("render: bands: the job prints no header or footer")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var laid int
	if err := t.Open(b.url, bandsHTML(b.pages, b.title), bandsLaidJS, &laid); err != nil {
		return nil, fmt.Errorf("%w: bands: open: %v", ErrPage, err)
	}
	if laid != b.pages {
		return nil, fmt.Errorf("%w: bands: %d pages written, %d laid out", ErrPage, b.pages, laid)
	}
	p := t.Page().Context(ctx)
	release, err := preloadFonts(p, b.fonts)
	if err != nil {
		return nil, err
	}
	defer release()
	req.PrintBackground = false
	req.GenerateTaggedPDF = false
	req.GenerateDocumentOutline = false
	req.PreferCSSPageSize = false
	var parts [][]byte
	for first := from; first <= to; first += bandsChunk {
		last := min(first+bandsChunk-1, to)
		req.PageRanges = ""
		if first > 1 || last < b.pages {
			req.PageRanges = fmt.Sprintf("%d-%d", first, last)
		}
		pdf, err := printPDF(ctx, p, req, nil)
		if err != nil {
			return nil, fmt.Errorf("bands %d-%d: %w", first, last, err)
		}
		n, err := pdfedit.PageCount(ctx, pdf)
		if err != nil {
			return nil, fmt.Errorf("%w: bands: count pages: %v", ErrPage, err)
		}
		if n != last-first+1 {
			return nil, fmt.Errorf("%w: bands %d-%d: printed %d pages", ErrPage, first, last, n)
		}
		parts = append(parts, pdf)
	}
	retireAfter(t, to-from+1)
	if len(parts) == 1 {
		return parts[0], nil
	}
	return joinBands(ctx, parts, to-from+1)
}

// joinBands merges the chunks of a bands document.
func joinBands(ctx context.Context, parts [][]byte, pages int) ([]byte, error) {
	inputs := make([]pdfedit.Input, len(parts))
	for i, p := range parts {
		inputs[i] = pdfedit.Input{Name: fmt.Sprintf("bands-%d.pdf", i+1), R: bytes.NewReader(p)}
	}
	var out bytes.Buffer
	n, err := pdfedit.Merge(ctx, inputs, &out)
	if err != nil {
		return nil, fmt.Errorf("render: bands: join: %w", err)
	}
	if n != pages {
		return nil, fmt.Errorf("render: bands: joined %d pages, want %d", n, pages)
	}
	return out.Bytes(), nil
}

// bandsHTML is a document of n empty pages titled title: each page an
// empty paragraph, forced onto a page of its own. Nothing on it paints.
func bandsHTML(n int, title string) string {
	var b strings.Builder
	b.Grow(200 + 7*n)
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8">`)
	if title != "" {
		b.WriteString("<title>" + html.EscapeString(title) + "</title>")
	}
	b.WriteString(`<style>html,body{margin:0;padding:0;background:none}p{margin:0;height:1px;break-after:page}p:last-child{break-after:auto}</style></head><body>`)
	for range n {
		b.WriteString("<p></p>")
	}
	b.WriteString("</body></html>")
	return b.String()
}

// bandsLaidJS counts the bands document's pages as written.
const bandsLaidJS = `() => document.body.childElementCount`

// spreadBands is the fewest pages whose bands are printed by two tabs at
// once (printBandsSpread): below it a second tab's start costs more than
// half the print saves.
var spreadBands = 200

// printBandsSpread is printBands, the pages in two halves: the first half
// in t, the second in another tab of the pool at the same time (lent as
// a split's slices are, printSlices: a worker of one slot has two tabs),
// or in t after the first when no tab is free by then (another job has
// it). The bands print after the last slice, on the whole job's way:
// ~1.7 ms a page, the second largest step of a split after the slices
// (docs/benchmarks.md); a worker of one slot printing them alone took
// 2.2 s of a 9.8 s split scaled out.
func (r *Renderer) printBandsSpread(ctx context.Context, t *browser.Tab, req printParams, b bands) ([]byte, error) {
	if b.pages < spreadBands || b.from != 0 || b.to != 0 {
		return printBands(ctx, t, req, b)
	}
	first, second := b, b
	first.from, first.to = 1, b.pages/2
	second.from, second.to = b.pages/2+1, b.pages
	var (
		mu     sync.Mutex
		taken  bool
		other  []byte
		err2   error
		helper sync.WaitGroup
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		ok := !taken
		taken = true
		return ok
	}
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	helper.Go(func() {
		defer func() {
			// The pool's own panic: logged; the job's tab prints the half
			// if the helper had not taken it.
			if p := recover(); p != nil {
				r.log().ErrorContext(ctx, "bands: waiting for a tab panicked", "panic", p)
			}
		}()
		_ = r.Pool.TabFor(waitCtx, "", func(st *browser.Tab) (err error) {
			if !take() {
				return nil
			}
			defer func() {
				// A panic printing is the half's error, and the tab goes
				// back to the pool as any failed job's does.
				if p := recover(); p != nil {
					err = fmt.Errorf("%w: bands: panic: %v", ErrPage, p)
					mu.Lock()
					err2 = err
					mu.Unlock()
				}
			}()
			pdf, err := printBands(ctx, st, req, second)
			mu.Lock()
			other, err2 = pdf, err
			mu.Unlock()
			return nil
		})
	})
	// A tab's work is bound to the context it was lent under (waitCtx):
	// stopping the wait stops a helper's print too, so it is stopped only
	// when the helper has not taken the second half, or on failure.
	one, err := printBands(ctx, t, req, first)
	switch {
	case err != nil:
		stopWaiting()
	case take():
		// No tab came: this one prints the second half too.
		stopWaiting()
		pdf, err := printBands(ctx, t, req, second)
		mu.Lock()
		other, err2 = pdf, err
		mu.Unlock()
	}
	helper.Wait()
	if err == nil {
		err = err2
	}
	if err == nil && other == nil {
		err = fmt.Errorf("%w: bands %d-%d not printed", ErrPage, second.from, second.to)
	}
	if err != nil {
		return nil, err
	}
	return joinBands(ctx, [][]byte{one, other}, b.pages)
}
