package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/docrender/docrender/pkg/batch"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/proto/jobspb"
)

// webhookSlots is how many webhook deliveries one worker process makes at
// once; they wait on the network, not on Chromium.
const webhookSlots = 4

// errNoSharedState refuses batch jobs on a worker that has no state store
// shared with the gateways (split mode without Redis).
const errNoSharedState = "Batches need a state store shared by gateways and workers: set DOCRENDER_REDIS_URL."

// batchSupport is what a worker needs for batches: the shared progress
// state and the webhook deliverer.
type batchSupport struct {
	batches *batch.Tracker
	hooks   *batch.Deliverer
}

// newBatchSupport returns nil when st is nil: the worker then renders and
// merges but refuses batch documents.
func newBatchSupport(st state.Store, w *Worker) *batchSupport {
	if st == nil {
		return nil
	}
	return &batchSupport{
		batches: batch.New(st, w.q, files.New(st, w.blobs), w.blobs, w.log.With("component", "batch")),
		hooks:   batch.NewDeliverer(netguard.New(w.cfg.WebhookAllowHosts)),
	}
}

// runWithWebhooks consumes render jobs and, alongside, webhook deliveries.
func (w *Worker) runWithWebhooks(ctx context.Context) error {
	var wg sync.WaitGroup
	if w.batch != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.q.ConsumeWebhooks(ctx, webhookSlots, w.batch.hooks.Deliver); err != nil {
				w.log.Error("webhook consumer stopped", "err", err)
			}
		}()
	}
	slots := map[string]int{}
	for _, kind := range w.cfg.Kinds() {
		if w.takes(kind) {
			slots[kind] = w.cfg.Workers
		}
	}
	err := w.q.ConsumeKinds(ctx, slots, w.Handle, w.settleDead)
	wg.Wait()
	return err
}

// handleBatchDoc renders one document of a batch (or converts its office
// file, or runs a tool on its PDF) and advances the batch:
// done (and, for the last one, the ZIP job queued), failed (the batch ends
// in error), or skipped because the batch already failed. Every outcome is
// recorded idempotently, so a redelivered job changes nothing twice.
func (w *Worker) handleBatchDoc(ctx context.Context, job *jobspb.Job, doc *jobspb.BatchDocumentJob, d queue.Delivery) (*jobspb.Result, error) {
	if w.batch == nil {
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, errNoSharedState), nil
	}
	bt := w.batch.batches
	var (
		r      *batch.Record
		failed bool
	)
	err := w.patiently(ctx, "reading the batch", func() (err error) {
		if r, err = bt.Get(ctx, doc.BatchId); err != nil {
			return err
		}
		failed, err = bt.Failed(ctx, r)
		return err
	})
	if errors.Is(err, batch.ErrNotFound) {
		// Expired before its turn came: nobody is left to tell.
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The batch is gone."), nil
	}
	if err != nil {
		return nil, err
	}
	i := int(doc.Index)
	if failed {
		return w.skipBatchDoc(ctx, r, i, d)
	}
	convert := func() (*jobspb.Result, error) { return w.handleRender(ctx, job, doc.Render) }
	switch {
	case doc.GetOffice() != nil:
		// An office document (DESIGN §11), on a worker of the office kind.
		convert = func() (*jobspb.Result, error) { return w.handleOffice(ctx, job, doc.GetOffice()) }
	case doc.GetTool() != nil:
		// A PDF of the client's through a tool (DESIGN §11), on the pdf kind.
		convert = func() (*jobspb.Result, error) {
			res, err := w.handleTool(ctx, job, doc.GetTool())
			// The tool's options sit under the document's pdf.tool: its
			// refusal names them there (a select past the last page).
			if f := res.GetErrorField(); f != "" && f != "files" && !strings.HasPrefix(f, "stages") {
				res.ErrorMessage = strings.Replace(res.ErrorMessage, f, "pdf.tool."+f, 1)
				res.ErrorField = "pdf.tool." + f
			}
			return res, err
		}
	}
	res, err := w.contained(ctx, convert)
	if err != nil && d.Last {
		w.log.ErrorContext(ctx, "batch document failed on its last try", "batch_id", r.ID, "index", i, "err", err)
		res, err = failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The document could not be rendered."), nil
	}
	if err != nil {
		return nil, err
	}
	if res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_NONE {
		return res, w.patiently(ctx, "failing the batch", func() error { return w.failBatchDoc(ctx, r, i, res.ErrorMessage) })
	}
	if r.Report {
		if err := w.keepDocReport(ctx, r, i, res.Report); err != nil {
			return nil, err
		}
	}
	var n int
	err = w.patiently(ctx, "counting the document", func() (err error) {
		n, err = bt.DocDone(ctx, r, i)
		return err
	})
	if err != nil {
		return nil, err
	}
	w.metrics.BatchDocument("done")
	if n == r.Total {
		if err := w.patiently(ctx, "queuing the ZIP", func() error { return w.queueZip(ctx, r) }); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Outages a batch job waits out. Its state lives in Redis and its next
// step goes through NATS: when either is away for a while (a restart, a
// failover), a job that gave up would use its deliveries up within seconds
// (RetryDelay) and leave its batch unsettled for good. Recording an outcome
// is idempotent, so trying it again is safe; meanwhile the queue's
// heartbeat keeps the job this worker's.
const (
	outageWait     = 3 * time.Minute
	outageMaxDelay = 5 * time.Second
)

// patiently runs op until it succeeds, fails for a reason other than the
// state store or the queue being unreachable, ctx ends, or the outage has
// lasted outageWait.
func (w *Worker) patiently(ctx context.Context, what string, op func() error) error {
	deadline := time.Now().Add(outageWait)
	delay := 250 * time.Millisecond
	for try := 1; ; try++ {
		err := op()
		if err == nil || !(errors.Is(err, state.ErrUnavailable) || errors.Is(err, queue.ErrUnavailable)) || time.Now().After(deadline) {
			return err
		}
		if try == 1 {
			w.log.WarnContext(ctx, "store or queue unreachable; waiting for it", "step", what, "err", err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, outageMaxDelay)
	}
}

// queueZip queues the ZIP job of a batch whose documents are all done. Its
// message ID deduplicates the job when two workers both see the last
// document done (a redelivery).
func (w *Worker) queueZip(ctx context.Context, r *batch.Record) error {
	job := &jobspb.Job{
		Id:        "zip-" + r.ID,
		RequestId: r.RequestID,
		AccountId: r.OwnerID,
		Kind:      &jobspb.Job_Zip{Zip: &jobspb.ZipJob{BatchId: r.ID}},
	}
	if err := w.q.Publish(ctx, job); err != nil {
		return fmt.Errorf("worker: queue zip: %w", err)
	}
	return nil
}

// skipBatchDoc gives back the conversion of a document of a failed batch.
// A redelivered job may belong to the worker that failed the batch and died
// before queuing its webhook: queuing it again is harmless (deduplicated).
func (w *Worker) skipBatchDoc(ctx context.Context, r *batch.Record, i int, d queue.Delivery) (*jobspb.Result, error) {
	err := w.patiently(ctx, "skipping the document", func() error {
		if d.Attempt > 1 {
			if err := w.batch.batches.Notify(ctx, r); err != nil {
				return err
			}
		}
		return w.batch.batches.DocNotDone(ctx, r, i)
	})
	if err != nil {
		return nil, err
	}
	w.metrics.BatchDocument("skipped")
	return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "Skipped: the batch already failed."), nil
}

// failBatchDoc ends the batch in error naming the document, then gives its
// conversion back. Ending the batch first stops the queued documents sooner.
func (w *Worker) failBatchDoc(ctx context.Context, r *batch.Record, i int, reason string) error {
	name := fmt.Sprintf("documents[%d]", i)
	if names, err := w.batch.batches.EntryNamesOf(ctx, r); err == nil {
		name = fmt.Sprintf("%q (documents[%d])", names[i], i)
	}
	msg := fmt.Sprintf("Document %s failed: %s", name, reason)
	if _, err := w.batch.batches.Fail(ctx, r, msg); err != nil {
		return err
	}
	if err := w.batch.batches.DocNotDone(ctx, r, i); err != nil {
		return err
	}
	w.metrics.BatchDocument("failed")
	return nil
}
