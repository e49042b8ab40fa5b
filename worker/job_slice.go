package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/render"
	"google.golang.org/protobuf/proto"
)

// The slices of a long document on every worker (DESIGN §10, render's
// farm.go). Who prints a slice is a claim in the shared state store: a
// printer's token while it prints, kept alive every claimRenew, and
// sliceDone once the slice's PDF is in the blob store. A printer that dies
// stops renewing; its claim expires after claimTTL and the slice is free
// again, for the job's own tab or for the slice job JetStream redelivers.

const (
	// A killed printer's slice waits claimTTL at most before the job
	// prints it: short against a job's time (30 s by default).
	claimTTL   = 6 * time.Second
	claimRenew = 2 * time.Second
	// doneTTL keeps a printed slice's mark for a job that is tried again.
	doneTTL = time.Hour
)

var sliceDone = []byte("done")

// sliceFarm is render.SliceFarm for one job, on the state store and the
// blob store shared by the workers and the queue.
type sliceFarm struct {
	w      *Worker
	st     state.Store
	parent string // the job split into the slices
	// account and request are the parent's: the slices wait in the
	// account's lane (fair scheduling) and log with its request.
	account, request string
	token            []byte // this printer's claim
	mu               sync.Mutex
	kept             map[string]context.CancelFunc // claims being renewed
	// keys are the marks of the slices offered or claimed here, which
	// Close forgets.
	keys map[string]bool
}

// newSliceFarm returns the farm of job parent's slices (only its ID when
// printing a slice of it); nil when the worker shares no state store with
// the others: its own tabs print them all.
func (w *Worker) newSliceFarm(parent *jobspb.Job) *sliceFarm {
	if w.state == nil {
		return nil
	}
	return &sliceFarm{w: w, st: w.state, parent: parent.Id, account: parent.AccountId, request: parent.RequestId,
		token: []byte("p:" + rand.Text()), kept: map[string]context.CancelFunc{}, keys: map[string]bool{}}
}

// farmFor is the farm of job's slices, should it be printed in slices;
// nil (this worker's tabs print them all) in the embedded service, whose
// only worker is this one, without a shared state store, and for a stored
// template's documents, whose files are the template's (a slice's printer
// loads the job's uploaded files).
func (w *Worker) farmFor(job *jobspb.Job, rj *jobspb.RenderJob) render.SliceFarm {
	if w.cfg.Embedded() || rj.GetTemplate() != nil {
		return nil
	}
	if f := w.newSliceFarm(job); f != nil {
		return f
	}
	return nil
}

func (f *sliceFarm) claimKey(s render.Slice) string { return "slice:" + f.parent + ":" + s.Key }
func (f *sliceFarm) htmlKey(s render.Slice) string  { return blob.JobSlices(f.parent) + s.Key + ".html" }
func (f *sliceFarm) pdfKey(s render.Slice) string   { return blob.JobSlices(f.parent) + s.Key + ".pdf" }
func (f *sliceFarm) heardKey(s render.Slice) string {
	return blob.JobSlices(f.parent) + s.Key + ".heard"
}

// maxHeard bounds a slice's report read back: a report keeps at most 100
// entries a list of at most 2 KiB each (render's report.go).
const maxHeard = 4 << 20

// remember adds s's mark to those Close forgets.
func (f *sliceFarm) remember(s render.Slice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[f.claimKey(s)] = true
}

// Offer stores each slice's HTML and queues a SliceJob for it.
func (f *sliceFarm) Offer(ctx context.Context, slices []render.Slice, rj *jobspb.RenderJob, deadline time.Time) error {
	// What a slice's printer needs of the job: its files and how it prints.
	rj = &jobspb.RenderJob{BundlePrefix: rj.GetBundlePrefix(), Files: rj.GetFiles(), Entry: rj.GetEntry(), Page: rj.GetPage(), Print: rj.GetPrint()}
	var until int64
	if !deadline.IsZero() {
		until = deadline.UnixMilli()
	}
	f.w.splitting.Store(f.parent, true)
	for _, s := range slices {
		f.remember(s)
		if err := f.w.blobs.Put(ctx, f.htmlKey(s), strings.NewReader(s.HTML), int64(len(s.HTML))); err != nil {
			return fmt.Errorf("worker: store slice: %w", err)
		}
		job := &jobspb.Job{Id: f.parent + "-slice-" + s.Key, AccountId: f.account, RequestId: f.request,
			Kind: &jobspb.Job_Slice{Slice: &jobspb.SliceJob{ParentId: f.parent, Index: int32(s.Index), Key: s.Key,
				HtmlKey: f.htmlKey(s), Render: rj, DeadlineUnixMs: until, Cut: s.Cut}}}
		if err := f.w.q.Publish(ctx, job); err != nil {
			return fmt.Errorf("worker: queue slice %d: %w", s.Index+1, err)
		}
	}
	return nil
}

// Claim takes s and keeps it taken, renewed every claimRenew, until Finish
// or Release.
func (f *sliceFarm) Claim(ctx context.Context, s render.Slice) (bool, error) {
	key := f.claimKey(s)
	ok, err := f.st.SetNX(ctx, key, f.token, claimTTL)
	if err != nil || !ok {
		return false, err
	}
	f.remember(s)
	kctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	f.mu.Lock()
	f.kept[key] = stop
	f.mu.Unlock()
	go func() {
		t := time.NewTicker(claimRenew)
		defer t.Stop()
		for {
			select {
			case <-kctx.Done():
				return
			case <-t.C:
				if ok, err := f.st.Swap(kctx, key, f.token, f.token, claimTTL); err == nil && !ok {
					return // lost (expired and taken): the other printer's now
				}
			}
		}
	}()
	return true, nil
}

// stopKeeping ends the renewal of s's claim.
func (f *sliceFarm) stopKeeping(s render.Slice) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if stop := f.kept[f.claimKey(s)]; stop != nil {
		stop()
		delete(f.kept, f.claimKey(s))
	}
}

// Finish stores what s's tab heard (a slice cut before loading) and its
// PDF, then marks it done (in that order: a done mark always has them).
func (f *sliceFarm) Finish(ctx context.Context, s render.Slice, pdf []byte, heard *jobspb.Report) error {
	defer f.stopKeeping(s)
	if s.Cut {
		b, err := proto.Marshal(heard)
		if err != nil {
			return fmt.Errorf("worker: encode slice report: %w", err)
		}
		if err := f.w.blobs.Put(ctx, f.heardKey(s), bytes.NewReader(b), int64(len(b))); err != nil {
			return fmt.Errorf("worker: store slice report: %w", err)
		}
	}
	if err := f.w.blobs.Put(ctx, f.pdfKey(s), bytes.NewReader(pdf), int64(len(pdf))); err != nil {
		return fmt.Errorf("worker: store slice PDF: %w", err)
	}
	if err := f.st.Set(ctx, f.claimKey(s), sliceDone, doneTTL); err != nil {
		return fmt.Errorf("worker: mark slice printed: %w", err)
	}
	return nil
}

// Release frees s at once for another printer.
func (f *sliceFarm) Release(ctx context.Context, s render.Slice) {
	f.stopKeeping(s)
	if _, err := f.st.Swap(ctx, f.claimKey(s), f.token, nil, 0); err != nil {
		f.w.log.WarnContext(ctx, "slice: release failed (it expires)", "slice", s.Index+1, "err", err)
	}
}

// Result reads s's mark: done (its PDF, and what its tab heard for a
// slice cut before loading), absent (free), or a printer's.
func (f *sliceFarm) Result(ctx context.Context, s render.Slice) ([]byte, *jobspb.Report, bool, error) {
	v, err := f.st.Get(ctx, f.claimKey(s))
	switch {
	case errors.Is(err, state.ErrNotFound):
		return nil, nil, true, nil
	case err != nil:
		return nil, nil, false, err
	case !bytes.Equal(v, sliceDone):
		return nil, nil, false, nil
	}
	pdf, err := blob.ReadAll(ctx, f.w.blobs, f.pdfKey(s), f.w.sliceLimit())
	var heard *jobspb.Report
	if err == nil && s.Cut {
		var b []byte
		if b, err = blob.ReadAll(ctx, f.w.blobs, f.heardKey(s), maxHeard); err == nil {
			heard = &jobspb.Report{}
			if perr := proto.Unmarshal(b, heard); perr != nil {
				// Unreadable: printed again, as if gone.
				f.w.log.WarnContext(ctx, "slice: its report cannot be read; printing it again", "slice", s.Index+1, "err", perr)
				err = blob.ErrNotFound
			}
		}
	}
	if errors.Is(err, blob.ErrNotFound) {
		// A mark whose files are gone (a try of the job before this one
		// closed its farm) or unreadable: the slice is free again.
		if _, err := f.st.Swap(ctx, f.claimKey(s), sliceDone, nil, 0); err != nil {
			return nil, nil, false, err
		}
		return nil, nil, true, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("worker: read slice: %w", err)
	}
	return pdf, heard, false, nil
}

// Close deletes the slices' marks and files (best effort: the sweeper of
// jobs/ takes what is left).
func (f *sliceFarm) Close(ctx context.Context) {
	f.w.splitting.Delete(f.parent)
	f.mu.Lock()
	for _, stop := range f.kept {
		stop()
	}
	f.kept = map[string]context.CancelFunc{}
	f.mu.Unlock()
	// The files first: a slice job taken after this finds no HTML and
	// prints nothing, rather than claiming a mark just forgotten.
	if err := f.w.blobs.DeletePrefix(ctx, blob.JobSlices(f.parent)); err != nil {
		f.w.log.WarnContext(ctx, "slice: deleting the files failed (the sweeper will)", "err", err)
	}
	f.mu.Lock()
	keys := slices.Collect(maps.Keys(f.keys))
	f.mu.Unlock()
	if len(keys) > 0 {
		if err := f.st.Delete(ctx, keys...); err != nil {
			f.w.log.WarnContext(ctx, "slice: forgetting the marks failed (they expire)", "err", err)
		}
	}
}

// sliceLimit bounds a slice's PDF or HTML read back: the output bound, or
// a generous one when there is none.
func (w *Worker) sliceLimit() int64 {
	if w.cfg.MaxOutputBytes > 0 {
		return w.cfg.MaxOutputBytes
	}
	return 1 << 30
}

// handleSlice prints one slice of another job's document, unless that job
// or another printer has it. The slice is claimed only once this worker
// has a tab for it: a claim held while waiting for a tab would keep the
// job from taking the slice back. Whatever goes wrong here (a panic too),
// the claim is released and the job prints the slice itself; nothing is
// retried.
func (w *Worker) handleSlice(ctx context.Context, job *jobspb.Job, sj *jobspb.SliceJob) (_ *jobspb.Result, err error) {
	done := &jobspb.Result{}
	f := w.newSliceFarm(&jobspb.Job{Id: sj.ParentId})
	var deadline time.Time
	if sj.DeadlineUnixMs > 0 {
		deadline = time.UnixMilli(sj.DeadlineUnixMs)
		if time.Now().After(deadline) {
			return done, nil
		}
	}
	if _, mine := w.splitting.Load(sj.ParentId); f == nil || mine {
		// Its job is on this worker: its tabs print it.
		return done, nil
	}
	if err := checkSliceJob(job, sj); err != nil {
		w.log.ErrorContext(ctx, "dropping a slice job that is not one of ours", "err", err)
		return done, nil
	}
	s := render.Slice{Index: int(sj.Index), Key: sj.Key, Cut: sj.Cut}
	claimed, finished := false, false
	defer func() {
		if p := recover(); p != nil {
			w.log.ErrorContext(ctx, "printing a slice panicked; its job prints it", "parent_id", sj.ParentId, "slice", s.Index+1, "panic", p)
			err = nil
		}
		if claimed && !finished {
			f.Release(context.WithoutCancel(ctx), s)
		}
	}()
	claim := func() (bool, error) {
		ok, err := f.Claim(ctx, s)
		claimed = ok
		if ok {
			w.log.InfoContext(ctx, "printing slice", "parent_id", sj.ParentId, "slice", s.Index+1)
		}
		return ok, err
	}
	pdf, heard, err := w.printSlice(ctx, sj, s, deadline, claim)
	switch {
	case errors.Is(err, render.ErrSliceTaken):
		return done, nil
	case err != nil:
		w.log.WarnContext(ctx, "slice not printed here; its job prints it", "parent_id", sj.ParentId, "slice", s.Index+1, "err", err)
		return done, nil
	}
	if err := f.Finish(ctx, s, pdf, heard); err != nil {
		w.log.WarnContext(ctx, "slice printed but not stored; its job prints it", "parent_id", sj.ParentId, "slice", s.Index+1, "err", err)
		return done, nil
	}
	finished = true
	w.log.InfoContext(ctx, "slice printed", "parent_id", sj.ParentId, "slice", s.Index+1, "bytes", len(pdf))
	return done, nil
}

// checkSliceJob checks that a slice job names only what its parent's
// Offer would: its own ID, its HTML under the parent's slices, the
// parent's files under a job's or a batch's inputs. Only workers publish
// slice jobs; this keeps one wrong message from reading another job's
// files into a page.
func checkSliceJob(job *jobspb.Job, sj *jobspb.SliceJob) error {
	prefix := sj.GetRender().GetBundlePrefix()
	switch {
	case sj.ParentId == "" || sj.Key == "" || strings.ContainsAny(sj.ParentId+sj.Key, "/."):
		return fmt.Errorf("slice job %q: parent %q, key %q", job.Id, sj.ParentId, sj.Key)
	case job.Id != sj.ParentId+"-slice-"+sj.Key:
		return fmt.Errorf("slice job %q is not %s's slice %s", job.Id, sj.ParentId, sj.Key)
	case sj.HtmlKey != blob.JobSlices(sj.ParentId)+sj.Key+".html":
		return fmt.Errorf("slice job %q: HTML at %q", job.Id, sj.HtmlKey)
	case !strings.HasPrefix(prefix, blob.JobsPrefix) && !strings.HasPrefix(prefix, blob.BatchesPrefix):
		return fmt.Errorf("slice job %q: files under %q", job.Id, prefix)
	}
	return nil
}

// printSlice loads slice s's HTML and its job's files and prints it,
// claiming it with claim once a tab is in hand.
func (w *Worker) printSlice(ctx context.Context, sj *jobspb.SliceJob, s render.Slice, deadline time.Time, claim func() (bool, error)) ([]byte, *jobspb.Report, error) {
	html, err := blob.ReadAll(ctx, w.blobs, sj.HtmlKey, w.sliceLimit())
	if err != nil {
		return nil, nil, err
	}
	rj := sj.GetRender()
	b, err := render.LoadBundle(ctx, w.blobs, rj.GetBundlePrefix(), rj.GetFiles())
	if err != nil {
		return nil, nil, err
	}
	s.HTML = string(html)
	return w.renderer.PrintSlice(ctx, b, rj, s, deadline, claim)
}
