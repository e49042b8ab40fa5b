package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

// Split printing (DESIGN §10). One Chromium print of a long document holds
// one tab for minutes and fails past some thousands of pages; and a tab
// that loads the whole document and prints only its pageRanges saves
// almost nothing, Chromium 156 paints the whole document for any range
// (bench/cmd/split, docs/benchmarks.md). So the loaded page is cut into
// slices of its content, each slice a document of its own (the same head,
// a share of the body) printed by its own tab at the same time, and the
// slices' PDFs are joined (pdfedit.JoinStamped: pages, links, structure
// tree, outline). The header and footer, which would number pages per
// slice, are printed once for the whole document as bands (bands.go) and
// drawn over the joined pages.
//
// Cuts fall between the body's blocks, or between the rows of a long
// table (its head repeated, as on any printed page) or the children of a
// long container (one taller than a share), near equal shares of the
// page's height, at a forced page break where one is within half a share. A slice ends where its content ends: a cut that
// is not at a page break leaves the rest of that page empty, which a print
// in one piece would have filled (a page more per cut at most).
//
// Only a page without scripts (the static path) is split: a slice is the
// loaded document's own elements, written anew, and scripts would run
// again in every slice. A page with page references (data-page-of, toc)
// prints in one piece: its numbers need the passes of pagerefs.go.

// maxSlices bounds the slices of one document.
const maxSlices = 64

// planJS cuts the loaded document into about k slices and returns them as
// documents, with the headings (each given an ID if it had none) for the
// outline; null when the page cannot be cut (fewer than two blocks, text
// straight in the body). Every slice links, hidden, to each heading and
// link target it holds (Chromium writes a named destination only for an
// element a link points to) and holds a hidden stand-in for each target it
// links to but does not hold (a link to an element that is not in the
// document is no link at all); pdfedit.Join takes each destination from
// the slice that holds it.
const planJS = `(k) => {
	const body = document.body;
	if (!body || k < 2) return null;
	const textIn = (el) => Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim() !== '');
	if (textIn(body)) return null;
	let n = 0;
	const fresh = () => { let id; do { id = 'docrender-h-' + (++n); } while (document.getElementById(id)); return id; };
	const headings = [];
	for (const h of body.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
		const text = h.textContent.replace(/\s+/g, ' ').trim();
		if (!text) continue;
		if (!h.id) h.id = fresh();
		headings.push({ Level: Number(h.tagName[1]), Title: text, Dest: h.id });
	}
	const targets = new Set(headings.map(h => h.Dest));
	const linked = (root) => {
		const ids = new Set();
		for (const a of root.querySelectorAll('a[href^="#"]')) {
			let id = a.getAttribute('href').slice(1);
			try { id = decodeURIComponent(id); } catch (e) {}
			if (id) ids.add(id);
		}
		return ids;
	};
	for (const id of linked(body)) targets.add(id);

	const top = (el) => el.getBoundingClientRect().top + scrollY;
	const height = Math.max(body.scrollHeight, 1);
	const share = height / k;
	const units = [], shells = [];
	const visit = (el, depth) => {
		for (const c of Array.from(el.children)) {
			if (c.tagName === 'SCRIPT' || c.tagName === 'TEMPLATE') continue;
			if (depth < 4 && c.getBoundingClientRect().height > share) {
				if (c.tagName === 'TABLE') {
					const rows = [];
					for (const tb of c.tBodies) for (const r of tb.rows) rows.push(r);
					if (rows.length > 1) { shells.push(c); units.push(...rows); continue; }
				} else if (/^(DIV|SECTION|ARTICLE|MAIN)$/.test(c.tagName) && c.children.length > 1 && !textIn(c)) {
					shells.push(c);
					visit(c, depth + 1);
					continue;
				}
			}
			units.push(c);
		}
	};
	visit(body, 0);
	if (units.length < 2) return null;
	const forced = (u) => {
		const b = getComputedStyle(u).breakBefore;
		if (/^(page|left|right|recto|verso|always)$/.test(b)) return true;
		const prev = u.previousElementSibling;
		return prev !== null && /^(page|left|right|recto|verso|always)$/.test(getComputedStyle(prev).breakAfter);
	};
	// Cut before units[cuts[i]], near (i+1) shares down the page.
	const tops = units.map(top), cuts = [];
	let from = 1;
	for (let i = 1; i < k && from < units.length; i++) {
		const want = tops[0] + share * i, slack = share * 0.5;
		let at = -1, best = -1;
		for (let j = from; j < units.length && tops[j] <= want + slack; j++) {
			if (at < 0 && tops[j] >= want) at = j;
			if (tops[j] >= want - slack && forced(units[j]) && (best < 0 || Math.abs(tops[j] - want) < Math.abs(tops[best] - want))) best = j;
		}
		if (best >= 0) at = best;
		if (at < 0) { for (let j = from; j < units.length; j++) if (tops[j] >= want) { at = j; break; } }
		if (at < 0) break;
		cuts.push(at);
		from = at + 1;
	}
	if (!cuts.length) return null;
	units.forEach((u, i) => u.setAttribute('data-docrender-unit', String(i)));
	shells.forEach(s => s.setAttribute('data-docrender-shell', ''));
	const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '';
	const bounds = [0, ...cuts, units.length];
	const slices = [];
	try {
		for (let s = 0; s + 1 < bounds.length; s++) {
			const lo = bounds[s], hi = bounds[s + 1];
			const root = document.documentElement.cloneNode(true);
			for (const u of root.querySelectorAll('[data-docrender-unit]')) {
				const i = Number(u.getAttribute('data-docrender-unit'));
				if (i < lo || i >= hi) u.remove(); else u.removeAttribute('data-docrender-unit');
			}
			for (const sh of Array.from(root.querySelectorAll('[data-docrender-shell]')).reverse()) {
				const kept = sh.tagName === 'TABLE' ? Array.from(sh.tBodies).some(tb => tb.rows.length > 0) : sh.children.length > 0;
				if (kept) sh.removeAttribute('data-docrender-shell'); else sh.remove();
			}
			for (const sc of root.querySelectorAll('script')) sc.remove();
			const held = new Set(Array.from(root.querySelectorAll('[id]'), e => e.id));
			const refs = document.createElement('div');
			refs.setAttribute('aria-hidden', 'true');
			refs.setAttribute('data-docrender-refs', '');
			refs.setAttribute('style', 'display:none !important');
			for (const id of targets) {
				if (!held.has(id)) continue;
				const a = document.createElement('a');
				a.href = '#' + encodeURIComponent(id);
				a.tabIndex = -1;
				refs.appendChild(a);
			}
			const rbody = root.querySelector('body');
			for (const id of linked(rbody)) {
				if (held.has(id)) continue;
				const stand = document.createElement('span');
				stand.id = id;
				refs.appendChild(stand);
			}
			rbody.appendChild(refs);
			slices.push(doctype + root.outerHTML);
		}
	} finally {
		units.forEach(u => u.removeAttribute('data-docrender-unit'));
		shells.forEach(s => s.removeAttribute('data-docrender-shell'));
	}
	return { slices, headings, title: document.title };
}`

// slicePlan is planJS's answer.
type slicePlan struct {
	Slices   []string          `json:"slices"`
	Headings []pdfedit.Heading `json:"headings"`
	Title    string            `json:"title"`
}

// errUnsplittable is a page planJS cannot cut: it prints in one piece.
var errUnsplittable = errors.New("render: the page cannot be printed in slices")

// slicePages bounds the pages of one slice, as estimated: a print of
// thousands of pages fails in Chromium ("Printing failed": a ~5,700-page
// ledger in one piece, and in slices of 1,000 estimated pages, which the
// screen-layout estimate made larger than that), and is the minutes-long
// print splitting avoids.
const slicePages = 400

// sliceCount is how many slices a page of estimate pages is cut into: one
// per render slot (every slice costs a load and a print of its own, so
// more slices than can print at once cost more than they save, measured),
// more when a slice would pass slicePages; at least two.
func sliceCount(estimate float64, slots, perSlice int) int {
	if perSlice <= 0 {
		perSlice = slicePages
	}
	k := max(slots, int(math.Ceil(estimate/float64(perSlice))), 2)
	return min(k, maxSlices)
}

// splitJob is what printSplit needs of the job.
type splitJob struct {
	bundle   egress.Bundle
	entry    string
	rj       *jobspb.RenderJob
	req      printParams
	fonts    []string // the header's and footer's web fonts
	outline  bool
	maxPages int
	// farm shares the slices with other workers (farm.go); nil: this
	// worker's tabs print them all.
	farm SliceFarm
	// cut is the plan of a page cut before loading (cut.go), whose first
	// slice the job's tab has loaded; nil: the tab holds the whole page,
	// planJS cuts it. report is the job's collector, which the other
	// slices' tabs add what they heard to.
	cut    *slicePlan
	report *collector
	// run is the printing of a cut page's slices, started before the
	// job's tab loaded the first (startSlices).
	run *sliceRun
}

// sliceRequest is how the slices of a page printed as req are printed:
// without the header and footer (printed once as bands) and without an
// outline (the joined one is built from the headings).
func sliceRequest(req printParams) printParams {
	req.DisplayHeaderFooter, req.HeaderTemplate, req.FooterTemplate = false, "", ""
	req.GenerateDocumentOutline = false
	return req
}

// printSplit prints the page loaded in t (the job's written page at site)
// in about k slices (printSlices), joins them, and says how many slices
// it printed. errUnsplittable: print it in one piece.
func (r *Renderer) printSplit(ctx context.Context, t *browser.Tab, site egress.Site, k int, job splitJob) ([]byte, int, error) {
	start := time.Now()
	plan := job.cut
	if plan == nil {
		if job.report != nil {
			// The job's collector heard the whole page: planJS's clones
			// (an image cloned loads again) and the slices, loaded anew in
			// this tab and others, would only repeat it.
			job.report.finish(ctx, t.Scripted())
		}
		if err := browser.Evaluate(t.Page(), planJS, &plan, k); err != nil {
			return nil, 0, fmt.Errorf("%w: plan slices: %v", ErrPage, err)
		}
	}
	if plan == nil || len(plan.Slices) < 2 {
		return nil, 0, errUnsplittable
	}
	req := sliceRequest(job.req)
	planned := time.Since(start)
	var parts [][]byte
	var err error
	if job.run != nil {
		parts, err = job.run.finish(t, job.report)
	} else {
		parts, err = r.printSlices(ctx, t, plan.Slices, job, req)
	}
	if err != nil {
		return nil, 0, err
	}
	printed := time.Since(start)
	pages := 0
	for _, p := range parts {
		n, err := pdfedit.PageCount(ctx, p)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: count pages: %v", ErrPage, err)
		}
		pages += n
	}
	if job.maxPages > 0 && pages > job.maxPages {
		return nil, 0, tooManyPages(job.maxPages)
	}
	var band []byte
	if job.req.DisplayHeaderFooter {
		if t.Scripted() {
			// The bands are written: a navigated tab goes home first.
			if err := t.GoHome(); err != nil {
				return nil, 0, fmt.Errorf("%w: bands: home: %v", ErrPage, err)
			}
		}
		var err error
		band, err = r.printBandsSpread(ctx, t, job.req, bands{pages: pages, title: plan.Title, url: site.HomeURL(job.entry), fonts: job.fonts})
		if err != nil {
			return nil, 0, err
		}
	}
	banded := time.Since(start)
	var outline []pdfedit.Heading
	if job.outline {
		outline = plan.Headings
	}
	var out bytes.Buffer
	if _, err := pdfedit.JoinStamped(ctx, parts, outline, band, pages, &out); err != nil {
		return nil, 0, fmt.Errorf("%w: join slices: %v", ErrPage, err)
	}
	r.log().DebugContext(ctx, "split", "slices", len(plan.Slices), "pages", pages, "plan_ms", ms(planned), "slices_ms", ms(printed-planned),
		"bands_ms", ms(banded-printed), "join_ms", ms(time.Since(start)-banded))
	if job.req.maxBytes > 0 && int64(out.Len()) > job.req.maxBytes {
		return nil, 0, tooManyBytes(job.req.maxBytes)
	}
	return out.Bytes(), len(plan.Slices), nil
}

// printSlice serves slice s as the job's entry file, with the job's other
// files, to t's lane, loads it (written into the tab, or navigated to when
// too large to be written or the tab navigated already: a slice has no
// scripts either way) and prints it. A slice of a page cut before loading
// (s.Cut) is a page the hooks have not run on and no report has heard: it
// loads as the job's page does (load: waited for, hooked, heard), and what
// its tab heard and its hooks found are returned for the job's report
// (heardReport); nil for another.
func (r *Renderer) printSlice(ctx context.Context, t *browser.Tab, job splitJob, s Slice, req printParams) (pdf []byte, heard *jobspb.Report, err error) {
	html := s.HTML
	b := maps.Clone(job.bundle)
	b[job.entry] = []byte(html)
	// A tab that navigated (the job's own, for a page too large to be
	// written) is not on the home document a write needs.
	written := len(html) <= maxWrittenHTML && !t.Scripted()
	if s.Cut {
		hooked := &jobspb.Report{}
		spec := loadSpec{bundle: b, entry: job.entry, html: html, static: written, print: job.rj.GetPrint(),
			selectors: r.selectors(), hooked: hooked}
		if job.rj.GetPrint().GetMediaScreen() {
			spec.media = "screen"
		}
		prog := &progress{start: time.Now()}
		err = r.load(ctx, t, spec, prog, func(_ egress.Site, c *collector, _ []bool) error {
			prog.mark(stepHooks)
			if pdf, err = printPDF(ctx, t.Page(), req, nil); err != nil {
				return fmt.Errorf("slice of %d bytes: %w", len(html), err)
			}
			retireLong(t, pdf)
			c.finish(ctx, t.Scripted())
			heard = heardReport(c, hooked)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		r.log().DebugContext(ctx, "split: a slice printed in another tab", prog.timings("bytes", len(html))...)
		return pdf, heard, nil
	}
	lane, ok := t.Lane().(fileServer)
	if !ok {
		return nil, nil, fmt.Errorf("render: tab lane %T serves no files", t.Lane())
	}
	site, unserve := lane.Serve(b, written)
	defer unserve()
	if job.rj.GetPrint().GetMediaScreen() {
		// Another tab than the job's has the print media type still.
		if err := t.EmulateMedia("screen"); err != nil {
			return nil, nil, fmt.Errorf("%w: media: %v", ErrPage, err)
		}
	}
	var matched []bool
	if written {
		if err := t.Open(site.HomeURL(job.entry), html, loadedJS, &matched, []string{}); err != nil {
			return nil, nil, fmt.Errorf("%w: open slice: %v", ErrPage, err)
		}
	} else {
		if err := t.Navigate(site.URL(job.entry)); err != nil {
			return nil, nil, fmt.Errorf("%w: navigate to slice: %v", ErrPage, err)
		}
		if err := browser.Evaluate(t.Page(), loadedJS, &matched, []string{}); err != nil {
			return nil, nil, fmt.Errorf("%w: load slice: %v", ErrPage, err)
		}
	}
	if pdf, err = printPDF(ctx, t.Page(), req, nil); err != nil {
		return nil, nil, fmt.Errorf("slice of %d bytes: %w", len(html), err)
	}
	retireLong(t, pdf)
	return pdf, nil, nil
}
