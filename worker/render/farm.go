package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/pdfedit"
)

// Slices on several workers (DESIGN §10: "on several workers when scaled
// out"). A SliceFarm offers a job's slices to the queue, where any worker's
// free render slot takes one as it takes a batch document (in the
// account's lane: fair scheduling holds), and keeps who prints which. The
// job's own tab prints slices too, from the last one back while the queue
// hands them out from the first, then waits for the rest: a slice nobody
// holds (its printer died, or no slot was free to take it) is printed by
// the job itself. So the job never waits on a slot it cannot get, and a
// worker killed mid-slice loses nothing.

// Slice is one slice of a split job.
type Slice struct {
	Index int
	// Key names the slice under its job: the same content gets the same
	// key, so a job tried again finds the slices printed for its last try.
	Key  string
	HTML string
	// Cut says the slice is a share of the job's source cut before any tab
	// loaded it (cut.go): its printer loads it as the job's page is
	// loaded (waited for, hooked, heard) and hands what it heard over
	// with its PDF. Otherwise it was cut from the loaded, hooked page
	// (planJS), whose report the job's tab heard.
	Cut bool
}

// SliceFarm shares one job's slices with the render slots of every worker.
type SliceFarm interface {
	// Offer queues slices for other slots: not every slice of the job
	// (the one its tab begins with is not offered). An error leaves them
	// to the job's own tab.
	Offer(ctx context.Context, slices []Slice, rj *jobspb.RenderJob, deadline time.Time) error
	// Claim takes s for the caller to print, and keeps it taken until
	// Finish or Release; false: another printer holds it or printed it.
	Claim(ctx context.Context, s Slice) (bool, error)
	// Finish stores the PDF of a claimed slice and, for a slice cut
	// before loading, what its tab heard (heardReport; nil otherwise).
	Finish(ctx context.Context, s Slice, pdf []byte, heard *jobspb.Report) error
	// Release gives up a claimed slice that could not be printed.
	Release(ctx context.Context, s Slice)
	// Result is s's PDF once printed, with what its tab heard as Finish
	// stored it. nil and free: nobody holds s (its printer is gone): claim
	// it and print it here; nil, not free: it is being printed.
	Result(ctx context.Context, s Slice) (pdf []byte, heard *jobspb.Report, free bool, err error)
	// Close forgets the job's slices and their files.
	Close(ctx context.Context)
}

// sliceKey names slice i of content html.
func sliceKey(i int, html string) string {
	h := sha256.Sum256([]byte(html))
	return fmt.Sprintf("%03d-%s", i, hex.EncodeToString(h[:8]))
}

// farmPoll is how often the job looks for the slices others print.
const farmPoll = 100 * time.Millisecond

// printSlices prints each slice once, by whichever printer claims it
// first: t (the job's tab), the tabs of the pool that come free (at most
// SplitSlots at once: the pool keeps two a slot, so the worker's other
// jobs keep theirs, DESIGN §5) and, with a farm, the slots of other
// workers through the queue. This worker's tabs take the slices from the
// last one back (the queue hands them out from the first); when none is
// left unclaimed, t waits for the others' and prints any whose printer is
// gone. The job never waits for a tab it needs, and a panic in any tab is
// that slice's error.
func (r *Renderer) printSlices(ctx context.Context, t *browser.Tab, htmls []string, job splitJob, req printParams) ([][]byte, error) {
	return r.startSlices(ctx, htmls, job, req).finish(t, job.report)
}

// sliceRun is the printing of one page's slices: started (startSlices)
// before the job's tab joins it (finish), so that the other tabs print
// while the job's tab still loads its own slice (a page cut before
// loading, cut.go: its first slice is the job's page).
type sliceRun struct {
	r      *Renderer
	ctx    context.Context
	cancel context.CancelFunc
	job    splitJob
	req    printParams
	farm   SliceFarm
	slices []Slice

	mu    sync.Mutex
	parts [][]byte
	first error // the first failure, which stops every printer
	// heard is what the slices printed in other tabs (and workers) heard
	// and their hooks found, for the job's report (a page cut before
	// loading).
	heard []heardSlice
	// pages is how many pages the slices printed so far have.
	pages int

	stopWaiting context.CancelFunc
	helpers     sync.WaitGroup
	finished    bool
}

type heardSlice struct {
	index int
	rep   *jobspb.Report
}

// keep keeps slice i's PDF and what its tab heard.
func (run *sliceRun) keep(i int, pdf []byte, heard *jobspb.Report) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.parts[i] = pdf
	if heard != nil {
		run.heard = append(run.heard, heardSlice{i, heard})
	}
}

// startSlices offers the slices to the farm and starts the pool's other
// tabs printing them.
func (r *Renderer) startSlices(ctx context.Context, htmls []string, job splitJob, req printParams) *sliceRun {
	run := &sliceRun{r: r, job: job, req: req, farm: job.farm, slices: make([]Slice, len(htmls)), parts: make([][]byte, len(htmls))}
	if run.farm == nil {
		run.farm = newLocalFarm()
	}
	for i, h := range htmls {
		run.slices[i] = Slice{Index: i, Key: sliceKey(i, h), HTML: h, Cut: job.cut != nil}
	}
	// The job's tab begins with the first slice of a page cut before
	// loading (its page), with the last of another (walk).
	offered := run.slices[:len(run.slices)-1]
	if job.cut != nil {
		offered = run.slices[1:]
	}
	deadline, _ := ctx.Deadline()
	if err := run.farm.Offer(ctx, offered, job.rj, deadline); err != nil {
		// Nobody else prints them: this worker's tabs do.
		r.log().WarnContext(ctx, "split: slices not offered to other workers", "err", err)
	}
	run.ctx, run.cancel = context.WithCancel(ctx)
	// Helpers wait for a tab until the job's tab is done (waiting ends then).
	waitCtx, stopWaiting := context.WithCancel(run.ctx)
	run.stopWaiting = stopWaiting
	for range min(len(run.slices), max(r.SplitSlots, 2)) - 1 {
		run.helpers.Go(func() {
			defer func() {
				// The pool's own panic (a slice's is printHere's): logged, the
				// slices go on in the other tabs.
				if p := recover(); p != nil {
					r.log().ErrorContext(ctx, "split: waiting for a tab panicked", "panic", p)
				}
			}()
			_ = r.Pool.TabFor(waitCtx, "", func(st *browser.Tab) error {
				if err := run.walk(st); err != nil {
					run.fail(err)
				}
				return nil
			})
		})
	}
	return run
}

func (run *sliceRun) fail(err error) {
	run.mu.Lock()
	if run.first == nil {
		run.first = err
	}
	run.mu.Unlock()
	run.cancel()
}

func (run *sliceRun) printed(i int) bool {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.parts[i] != nil
}

// printHere claims s and prints it in tab, unless another printer has it;
// loaded: tab holds s loaded already (the job's page).
func (run *sliceRun) printHere(tab *browser.Tab, s Slice, loaded bool) (err error) {
	ctx := run.ctx
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: slice %d: panic: %v", ErrPage, s.Index+1, p)
		}
	}()
	ok, err := run.farm.Claim(ctx, s)
	if err != nil || !ok {
		return err
	}
	var pdf []byte
	var heard *jobspb.Report
	if loaded {
		start := time.Now()
		if pdf, err = printPDF(ctx, tab.Page(), run.req, nil); err == nil {
			retireLong(tab, pdf)
		}
		run.r.log().DebugContext(ctx, "split: the job's slice printed", "print_ms", ms(time.Since(start)))
	} else {
		pdf, heard, err = run.r.printSlice(ctx, tab, run.job, s, run.req)
	}
	if err != nil {
		run.farm.Release(context.WithoutCancel(ctx), s)
		return fmt.Errorf("slice %d: %w", s.Index+1, err)
	}
	if max := run.job.maxPages; max > 0 {
		// Past the account's pages already: the other slices need not
		// print for the job to fail.
		n, err := pdfedit.PageCount(ctx, pdf)
		if err != nil {
			return fmt.Errorf("%w: slice %d: count pages: %v", ErrPage, s.Index+1, err)
		}
		run.mu.Lock()
		run.pages += n
		over := run.pages > max
		run.mu.Unlock()
		if over {
			return tooManyPages(max)
		}
	}
	run.keep(s.Index, pdf, heard)
	// The job has the PDF: a store that fails to keep it for a retry
	// of the job costs that retry a print, not this job its answer.
	if err := run.farm.Finish(ctx, s, pdf, heard); err != nil {
		run.r.log().WarnContext(ctx, "split: a printed slice not kept for a retry", "slice", s.Index+1, "err", err)
	}
	return nil
}

// walk prints in tab the slices nobody has, from the last. The first
// slice of a page cut before loading is the job's tab's alone (finish):
// its load is the job's page, heard by the job's report.
func (run *sliceRun) walk(tab *browser.Tab) error {
	lowest := 0
	if run.job.cut != nil {
		lowest = 1
	}
	for i := len(run.slices) - 1; i >= lowest && run.ctx.Err() == nil; i-- {
		if !run.printed(i) {
			if err := run.printHere(tab, run.slices[i], false); err != nil {
				return err
			}
		}
	}
	return run.ctx.Err()
}

// finish prints in t (the job's tab) what is left, waits for the other
// printers and returns the slices' PDFs in order. A page cut before
// loading has its first slice loaded in t, and what the other slices'
// tabs heard goes into report, the job's collector, which stops
// listening once the first slice is printed: the other slices t may
// print after it are heard by their own collectors (counted once).
func (run *sliceRun) finish(t *browser.Tab, report *collector) ([][]byte, error) {
	err := error(nil)
	if run.job.cut != nil {
		err = run.printHere(t, run.slices[0], true)
		if report != nil {
			report.finish(run.ctx, t.Scripted())
		}
	}
	if err == nil {
		err = run.walk(t)
	}
	if err != nil {
		run.fail(err)
	} else if err := run.r.collect(run.ctx, run.farm, run.slices, run.printed, func(s Slice) error { return run.printHere(t, s, false) }, run.keep); err != nil {
		run.fail(err)
	}
	run.end(false)
	if report != nil {
		slices.SortFunc(run.heard, func(a, b heardSlice) int { return a.index - b.index })
		for _, h := range run.heard {
			report.absorb(h.rep)
		}
	}
	if run.first != nil {
		return nil, run.first
	}
	return run.parts, nil
}

// stop ends a run its job's tab never finished (the job failed before):
// its printers are stopped and waited for. A no-op after finish.
func (run *sliceRun) stop() { run.end(true) }

// end ends the run once: the helpers stop waiting for tabs and are waited
// for (stopped first when abort: when finished, every slice is printed
// and a helper is only leaving its walk), the farm closed.
func (run *sliceRun) end(abort bool) {
	run.mu.Lock()
	done := run.finished
	run.finished = true
	run.mu.Unlock()
	if done {
		return
	}
	if abort {
		run.cancel()
	}
	run.stopWaiting()
	run.helpers.Wait()
	run.cancel()
	run.farm.Close(context.WithoutCancel(run.ctx))
}

// collect waits for the slices printed elsewhere, keeps each with keep,
// and prints with here any whose printer is gone.
func (r *Renderer) collect(ctx context.Context, farm SliceFarm, slices []Slice, printed func(int) bool, here func(Slice) error, keep func(int, []byte, *jobspb.Report)) error {
	for {
		waiting := 0
		for i, s := range slices {
			if printed(i) {
				continue
			}
			pdf, heard, free, err := farm.Result(ctx, s)
			switch {
			case err != nil:
				// The state or blob store hiccuped: looked at again next
				// time, until the job's time is up.
				r.log().WarnContext(ctx, "split: reading a slice's state failed", "slice", i+1, "err", err)
				waiting++
			case pdf != nil:
				keep(i, pdf, heard)
			case free:
				// Never taken, or its printer is gone (its claim lapsed).
				r.log().InfoContext(ctx, "split: printing a slice nobody holds", "slice", i+1)
				if err := here(s); err != nil {
					return err
				}
				if !printed(i) {
					waiting++ // taken by another in between
				}
			default:
				waiting++
			}
		}
		if waiting == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for %d slices printed elsewhere", ctx.Err(), waiting)
		case <-time.After(farmPoll):
		}
	}
}

// localFarm is the farm of a worker alone: its tabs claim the slices in
// memory, and nobody else prints them.
type localFarm struct {
	mu      sync.Mutex
	claimed map[string]bool
	done    map[string][]byte
	heard   map[string]*jobspb.Report
}

func newLocalFarm() *localFarm {
	return &localFarm{claimed: map[string]bool{}, done: map[string][]byte{}, heard: map[string]*jobspb.Report{}}
}

func (*localFarm) Offer(context.Context, []Slice, *jobspb.RenderJob, time.Time) error { return nil }

func (f *localFarm) Claim(_ context.Context, s Slice) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed[s.Key] {
		return false, nil
	}
	f.claimed[s.Key] = true
	return true, nil
}

func (f *localFarm) Finish(_ context.Context, s Slice, pdf []byte, heard *jobspb.Report) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done[s.Key], f.heard[s.Key] = pdf, heard
	return nil
}

func (f *localFarm) Release(_ context.Context, s Slice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.claimed, s.Key)
}

func (f *localFarm) Result(_ context.Context, s Slice) ([]byte, *jobspb.Report, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done[s.Key], f.heard[s.Key], !f.claimed[s.Key], nil
}

func (*localFarm) Close(context.Context) {}

// ErrSliceLate is a slice taken after its job stopped waiting for it.
var ErrSliceLate = errors.New("render: the slice's job stopped waiting")

// ErrSliceTaken is a slice that another printer claimed first.
var ErrSliceTaken = errors.New("render: another printer has the slice")

// PrintSlice prints slice s of rj's document, a SliceJob's, in a tab of
// the pool: the job's files with s's HTML as its entry file, printed as
// the job's slices are (no header and footer, no outline), and what its
// tab heard for the job's report (printSlice). claim is called once a tab
// is in hand; false: ErrSliceTaken, nothing printed.
func (r *Renderer) PrintSlice(ctx context.Context, b egress.Bundle, rj *jobspb.RenderJob, s Slice, deadline time.Time, claim func() (bool, error)) ([]byte, *jobspb.Report, error) {
	if !deadline.IsZero() {
		if time.Until(deadline) <= 0 {
			return nil, nil, ErrSliceLate
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	margins, err := marginTemplates(b, rj.GetPage(), rj.GetPrint())
	if err != nil {
		return nil, nil, err
	}
	req := sliceRequest(printRequest(rj.GetPage(), rj.GetPrint(), margins))
	req.maxBytes = r.MaxOutputBytes
	job := splitJob{bundle: b, entry: rj.GetEntry(), rj: rj}
	var pdf []byte
	var heard *jobspb.Report
	err = r.Pool.TabFor(ctx, "", func(t *browser.Tab) error {
		if ok, err := claim(); err != nil || !ok {
			if err == nil {
				err = ErrSliceTaken
			}
			return err
		}
		var err error
		pdf, heard, err = r.printSlice(ctx, t, job, s, req)
		return err
	})
	return pdf, heard, err
}
