package render

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

// The load step every use of a page shares: a render prints the loaded
// page (Render), a screenshot captures it (Screenshot). Both serve the
// job's files to the tab alone, listen to the page for the report, load it
// (fetched, written, filled or navigated to), wait for it (DESIGN §6) and
// run the page hooks, so that one page looks the same in either.

// loadSpec is what loading a job's page takes.
type loadSpec struct {
	bundle egress.Bundle
	entry  string
	// html is the entry without scripts, written into the tab when static.
	html   string
	static bool
	// fetch: the page is fetched by URL instead.
	fetch *jobspb.PageURL
	print *jobspb.Print
	// media is the CSS media type the tab emulates ("screen", "print");
	// empty: the tab's own.
	media string
	// kept is the tab's warm document of the same key and head, filled in
	// place rather than written anew (warm.go); nil: none.
	kept *warmPage
	// selectors are the hooks' (r.Hooks, in order), and any after them
	// the caller asks about; the load tells which match.
	selectors []string
	// hooked collects what the hooks add to the report.
	hooked *jobspb.Report
	// before runs on the tab before anything loads (a viewport of the
	// job's own, say); nil: nothing.
	before func(t *browser.Tab) error
}

// load loads spec's page into t, waits for it and runs the hooks whose
// selectors matched, then calls use with the page's site, its report's
// collector and which of spec.selectors matched. The files are served and
// the collector listens until use returns. prog records the steps.
func (r *Renderer) load(ctx context.Context, t *browser.Tab, spec loadSpec, prog *progress,
	use func(site egress.Site, c *collector, matched []bool) error) error {
	lane, ok := t.Lane().(fileServer)
	if !ok {
		return fmt.Errorf("render: tab lane %T serves no files", t.Lane())
	}
	var site egress.Site
	var unserve func()
	if spec.kept != nil {
		site, unserve = lane.ServeAgain(spec.kept.site, spec.bundle)
	} else {
		site, unserve = lane.Serve(spec.bundle, spec.static)
	}
	defer unserve()
	p := t.Page()
	c := startCollector(ctx, p, site)
	defer c.close()
	if spec.before != nil {
		if err := spec.before(t); err != nil {
			return fmt.Errorf("%w: %v", ErrPage, err)
		}
	}
	if spec.media != "" {
		// Before loading: what loads may depend on the media type.
		if err := t.EmulateMedia(spec.media); err != nil {
			return fmt.Errorf("%w: media: %v", ErrPage, err)
		}
	}
	var matched []bool
	switch {
	case spec.fetch != nil:
		if err := openURL(ctx, t, site, spec.fetch); err != nil {
			return err
		}
		if err := browser.Evaluate(p, loadedJS, &matched, spec.selectors); err != nil {
			return fmt.Errorf("%w: load: %v", ErrPage, err)
		}
	case spec.kept != nil:
		prog.filled = true
		if err := t.Fill(fillJS, &matched, spec.html, spec.selectors); err != nil {
			return fmt.Errorf("%w: fill: %v", ErrPage, err)
		}
	case spec.static:
		if err := t.Open(site.HomeURL(spec.entry), spec.html, loadedJS, &matched, spec.selectors); err != nil {
			return fmt.Errorf("%w: open: %v", ErrPage, err)
		}
	default:
		if err := t.Navigate(site.URL(spec.entry)); err != nil {
			return fmt.Errorf("%w: navigate: %v", ErrPage, err)
		}
		if err := browser.Evaluate(p, loadedJS, &matched, spec.selectors); err != nil {
			return fmt.Errorf("%w: load: %v", ErrPage, err)
		}
	}
	prog.mark(stepLoad)
	if err := waitFor(ctx, p, spec.print); err != nil {
		return err
	}
	prog.mark(stepWait)
	for i, h := range r.Hooks {
		if i < len(matched) && matched[i] {
			if err := h.Run(ctx, p, spec.hooked); err != nil {
				return err
			}
		}
	}
	return use(site, c, matched)
}

// Steps of a render or a screenshot, indexes of stepNames.
const (
	stepTab = iota
	stepLoad
	stepWait
	stepHooks
	stepPrint
)

// progress is how far a job's use of a page went: when each step ended
// (from start; zero: not reached) and whether its page was filled in
// place. Its trace is made from it after the fact (traceSteps).
type progress struct {
	start  time.Time
	marks  [len(stepNames)]time.Duration
	filled bool
}

// mark notes that step ended now.
func (g *progress) mark(step int) { g.marks[step] = time.Since(g.start) }

// timings are the steps' durations for a debug log line, after args.
func (g *progress) timings(args ...any) []any {
	m := g.marks
	return append(args, "tab_ms", ms(m[stepTab]), "load_ms", ms(m[stepLoad]-m[stepTab]), "wait_ms", ms(m[stepWait]-m[stepLoad]),
		"hooks_ms", ms(m[stepHooks]-m[stepWait]), "print_ms", ms(time.Since(g.start)-m[stepHooks]))
}

// end traces the steps and turns err, the job's use of its tab, into what
// the job returns: a render that ran out of time is ErrTimeout, saying in
// which wait when it was in one. url and written say how the page loaded.
func (g *progress) end(ctx context.Context, err error, url, written bool, timeout time.Duration) error {
	kind := loadKind(url, written)
	if g.filled {
		kind = "filled"
	}
	traceSteps(ctx, g.start, err, kind, g.marks)
	if err == nil || errors.Is(err, browser.ErrBrowserGone) {
		return err
	}
	if ctx.Err() != nil {
		var wait *WaitError
		if errors.As(err, &wait) {
			return fmt.Errorf("%w after %s: %w", ErrTimeout, timeout, wait)
		}
		return fmt.Errorf("%w after %s", ErrTimeout, timeout)
	}
	return err
}
