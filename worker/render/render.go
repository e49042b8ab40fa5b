// Package render turns a RenderJob into a PDF: it loads the uploaded files
// from the blob store, serves them to an isolated tab through the egress
// proxy, prints the page with Chromium and stores the result.
package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/go-rod/rod"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

// ErrTimeout is a render that exceeded its time: the page's fault, not retried.
var ErrTimeout = errors.New("render: timed out")

// ErrPage is a page that could not be loaded or printed.
var ErrPage = errors.New("render: page failed")

// PageHook runs on the loaded page before printing (inline QR codes, say),
// when the page has an element matching Selector, or a frame that could:
// the load's own round trip finds out, so a page without any costs nothing.
// rep is the job's render report, which Run may add what it found to (the
// images without alternative text, say); the URLs in it are made relative
// to the bundle and cut short as the report's own are.
type PageHook struct {
	Selector string
	Run      func(ctx context.Context, page *rod.Page, rep *jobspb.Report) error
}

// Renderer renders HTML bundles.
type Renderer struct {
	Blobs blob.Store
	// Pool's tabs must talk through egress lanes (*egress.Lane), which
	// serve each job's files to its own tab only.
	Pool  *browser.Pool
	Hooks []PageHook
	// Log receives per-step timings at debug level; nil discards them.
	Log *slog.Logger
	// MaxOutputBytes bounds a printed PDF (DESIGN §10): past it the render
	// is a *LimitError. 0: unbounded.
	MaxOutputBytes int64
	// SplitPages is the length past which a page is printed in slices
	// (split.go); 0: never. SplitSlots is how many slices print at once
	// (the worker's render slots).
	SplitPages, SplitSlots int
	// SlicePages bounds the estimated pages of one slice; 0: slicePages.
	SlicePages int
}

func (r *Renderer) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// LoadBundle reads a job's uploaded files.
func LoadBundle(ctx context.Context, blobs blob.Store, prefix string, files []string) (egress.Bundle, error) {
	b := make(egress.Bundle, len(files))
	for _, name := range files {
		rc, _, err := blobs.Get(ctx, prefix+name)
		if err != nil {
			return nil, fmt.Errorf("render: load %s: %w", name, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("render: load %s: %w", name, err)
		}
		b[name] = data
	}
	return b, nil
}

// Output is a render's result.
type Output struct {
	PDF []byte
	// Report is what happened in the render (DESIGN §6); the caller adds
	// the page count.
	Report *jobspb.Report
}

// Render prints rj's entry page (rj.Entry of bundle b) to PDF, as rj.Page
// and rj.Print say. timeout bounds loading, waiting and printing together.
func (r *Renderer) Render(ctx context.Context, b egress.Bundle, rj *jobspb.RenderJob, timeout time.Duration) (Output, error) {
	return r.RenderWarm(ctx, b, rj, timeout, "")
}

// RenderWarm is Render for a page that others of key will follow, differing
// only in their data (a stored template's version, of one account: key
// must say both, and never be another account's). A tab that printed a
// page of key keeps its document, and the next page of key fills it in
// place rather than write a document anew (warm.go), when both have no
// scripts and the same head. An empty key is Render.
func (r *Renderer) RenderWarm(ctx context.Context, b egress.Bundle, rj *jobspb.RenderJob, timeout time.Duration, key string) (Output, error) {
	return r.RenderWith(ctx, b, rj, timeout, Options{Warm: key})
}

// Options are what a render may use beyond the job itself.
type Options struct {
	// Warm is RenderWarm's key.
	Warm string
	// Farm shares the job's slices with other workers when it is printed
	// in slices (farm.go); nil: this worker's tabs print them.
	Farm SliceFarm
}

// RenderWith is RenderWarm with opts.
func (r *Renderer) RenderWith(ctx context.Context, b egress.Bundle, rj *jobspb.RenderJob, timeout time.Duration, opts Options) (Output, error) {
	key := opts.Warm
	entry, page, pr := rj.GetEntry(), rj.GetPage(), rj.GetPrint()
	html, static := withoutScripts(b, entry)
	// noScripts: a page without scripts, written or (too large to be
	// written) navigated to; only such a page is cut into slices.
	noScripts := func() bool { _, ok := scriptFree(b, entry); return static || ok }
	// waitForExpression is the client's script: it runs on the page's own
	// origin, never in the home document that every job shares. A page
	// fetched by URL is always navigated to.
	fetch := rj.GetUrl()
	static = static && pr.GetWaitForExpression() == "" && fetch == nil
	var head string
	// The screen media type is the tab's, set before loading: such a job
	// writes its page anew.
	warmable := key != "" && static && !pr.GetMediaScreen()
	if warmable {
		head, warmable = headKey(html)
	}
	if !warmable {
		key = ""
	}
	margins, err := marginTemplates(b, page, pr)
	if err != nil {
		return Output{}, err
	}

	// The hooks' selectors, then the page references' (pagerefs.go).
	selectors := r.selectors(refsSelector)

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// A page that asks for slices is cut before any tab loads it (cut.go):
	// the job's tab loads its first slice as the job's page, the other
	// slices printing in the pool's other tabs meanwhile.
	cut := r.cutSource(ctx, b, entry, rj, warmable)
	var run *sliceRun
	startSlices := func() {}
	if cut != nil {
		slicesJob := splitJob{bundle: b, entry: entry, rj: rj, cut: cut, maxPages: int(rj.GetMaxPages()), farm: opts.Farm}
		// Once the job has its tab: its helpers never queue for tabs
		// ahead of the job's own.
		startSlices = func() {
			req := printRequest(page, pr, margins)
			req.maxBytes = r.MaxOutputBytes
			run = r.startSlices(ctx, cut.Slices, slicesJob, sliceRequest(req))
		}
		defer func() {
			if run != nil {
				run.stop()
			}
		}()
		b = maps.Clone(b)
		b[entry] = []byte(cut.Slices[0])
		html, static = cut.Slices[0], len(cut.Slices[0]) <= maxWrittenHTML
	}
	var out []byte
	prog := &progress{start: time.Now()}
	var report *collector
	hooked := &jobspb.Report{}
	passes := 1
	sliced := 0 // the slices the page was printed in (split.go)
	err = r.Pool.TabFor(ctx, key, func(t *browser.Tab) error {
		prog.mark(stepTab)
		startSlices()
		var kept *warmPage
		if w := t.Warm(); warmable && w != nil && w.Key == key {
			if wp, ok := w.Data.(*warmPage); ok && wp.head == head {
				kept = wp
			}
		}
		var media string
		if pr.GetMediaScreen() {
			media = "screen"
		}
		spec := loadSpec{bundle: b, entry: entry, html: html, static: static, fetch: fetch, print: pr, media: media,
			kept: kept, selectors: selectors, hooked: hooked}
		return r.load(ctx, t, spec, prog, func(site egress.Site, c *collector, matched []bool) error {
			p := t.Page()
			refs := false
			if i := len(r.Hooks); i < len(matched) && matched[i] {
				found, err := prepareRefs(p, pr.GetToc())
				if err != nil {
					return err
				}
				refs = found
			}
			prog.mark(stepHooks)
			req := printRequest(page, pr, margins)
			req.maxBytes = r.MaxOutputBytes
			if err := checkPages(ctx, p, req, int(rj.GetMaxPages())); err != nil {
				return err
			}
			// A long page without scripts or page references prints in slices
			// (split.go, DESIGN §10).
			slices := 0
			if cut != nil {
				slices = len(cut.Slices)
			} else if r.SplitPages > 0 && (static || fetch == nil && noScripts()) && kept == nil && !refs && req.PageRanges == "" && pr.GetSplit() != jobspb.Split_SPLIT_OFF {
				estimate, err := estimatePages(p, req)
				if err != nil {
					return err
				}
				if pr.GetSplit() == jobspb.Split_SPLIT_ON || estimate > float64(r.SplitPages) {
					slices = sliceCount(estimate, r.SplitSlots, r.SlicePages)
				}
			}
			release, err := preloadFonts(p, margins.fonts)
			if err != nil {
				return err
			}
			// The report's end mark goes out as soon as the page is printed,
			// while the PDF is read: everything the page did is before it.
			finished, scripted, marking := make(chan struct{}), t.Scripted(), false
			finish := sync.OnceFunc(func() {
				marking = true
				go func() {
					defer close(finished)
					c.finish(ctx, scripted)
				}()
			})
			split := false
			if slices > 0 {
				var n int
				out, n, err = r.printSplit(ctx, t, site, slices, splitJob{bundle: b, entry: entry, rj: rj, req: req, fonts: margins.fonts,
					outline: pr.GetOutline(), maxPages: int(rj.GetMaxPages()), farm: opts.Farm, cut: cut, report: c, run: run})
				if errors.Is(err, errUnsplittable) {
					r.log().DebugContext(ctx, "split: the page cannot be cut; printed in one piece", "slices_asked", slices)
					err = nil
				} else {
					// Printed in slices, or failed doing so: either way the tab
					// holds a slice now, not the job's document.
					split, sliced, warmable = true, n, false
				}
			}
			switch {
			case split:
			case refs:
				out, passes, err = printWithRefs(ctx, p, req, finish)
			default:
				out, err = printPDF(ctx, p, req, finish)
			}
			release()
			if err == nil && !split {
				// A split's slices and bands retire their own tabs.
				retireLong(t, out)
			}
			if err == nil {
				err = checkPrinted(ctx, out, int(rj.GetMaxPages()))
			}
			if err == nil {
				prog.mark(stepPrint)
				finish() // a no-op when printPDF called it
			}
			if marking {
				<-finished // not past the job's use of its tab
			}
			if err != nil {
				return err
			}
			report = c
			// Kept warm only after a clean load: a filled document does not load
			// the kept head's stylesheets, fonts and images again, so a head
			// whose requests failed or were blocked would go unreported (and
			// pass failOnResourceErrors) in every document filled after it.
			if f := c.findings(); warmable && f.nFailed == 0 && f.nBlocked == 0 {
				t.KeepWarm(&browser.Warm{Key: key, Data: &warmPage{site: site, head: head}})
			}
			r.log().DebugContext(ctx, "rendered", prog.timings("scripts", !static, "filled", prog.filled)...)
			return nil
		})
	})
	if err := prog.end(ctx, err, fetch != nil, static, timeout); err != nil {
		return Output{}, err
	}
	o, err := report.output(out, time.Since(prog.start), rj.GetPrint(), hooked)
	if o.Report != nil {
		o.Report.Passes = int32(passes)
		o.Report.Slices = int32(sliced)
	}
	return o, err
}

// selectors are the hooks' selectors, in order, then more.
func (r *Renderer) selectors(more ...string) []string {
	out := make([]string, len(r.Hooks), len(r.Hooks)+len(more))
	for i, h := range r.Hooks {
		out[i] = h.Selector
	}
	return append(out, more...)
}

// fileServer is a tab's lane that serves the job's files (*egress.Lane).
type fileServer interface {
	Serve(b egress.Bundle, written bool) (egress.Site, func())
	ServeAgain(site egress.Site, b egress.Bundle) (egress.Site, func())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// loadedJS waits for the load event (a written document has had it), then
// for web fonts (they load lazily, at layout), and tells which of the
// hooks' selectors match, all in one round trip.
const loadedJS = `async (selectors) => {
	if (document.readyState !== 'complete') {
		await new Promise(r => addEventListener('load', r, { once: true }));
	}
	document.documentElement.getBoundingClientRect();
	await document.fonts.ready;
	return selectors.map(s => document.querySelector(s + ', iframe, frame') !== null);
}`
