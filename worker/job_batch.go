package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
	err := w.q.Consume(ctx, w.cfg.Workers, w.Handle, w.settleDead)
	wg.Wait()
	return err
}

// handleBatchDoc renders one document of a batch and advances the batch:
// done (and, for the last one, the ZIP job queued), failed (the batch ends
// in error), or skipped because the batch already failed. Every outcome is
// recorded idempotently, so a redelivered job changes nothing twice.
func (w *Worker) handleBatchDoc(ctx context.Context, job *jobspb.Job, d queue.Delivery) (*jobspb.Result, error) {
	if w.batch == nil {
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, errNoSharedState), nil
	}
	bt := w.batch.batches
	r, err := bt.Get(ctx, job.BatchId)
	if errors.Is(err, batch.ErrNotFound) {
		// Expired before its turn came: nobody is left to tell.
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The batch is gone."), nil
	}
	if err != nil {
		return nil, err
	}
	i := int(job.BatchIndex)
	failed, err := bt.Failed(ctx, r)
	if err != nil {
		return nil, err
	}
	if failed {
		return w.skipBatchDoc(ctx, r, i, d)
	}
	res, err := w.contained(ctx, func() (*jobspb.Result, error) { return w.handleRender(ctx, job) })
	if err != nil && d.Last {
		w.log.ErrorContext(ctx, "batch document failed on its last try", "batch_id", r.ID, "index", i, "err", err)
		res, err = failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The document could not be rendered."), nil
	}
	if err != nil {
		return nil, err
	}
	if res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_NONE {
		return res, w.failBatchDoc(ctx, r, i, res.ErrorMessage)
	}
	n, err := bt.DocDone(ctx, r, i)
	if err != nil {
		return nil, err
	}
	w.metrics.BatchDocument("done")
	if n == r.Total {
		if err := bt.QueueZip(ctx, r); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// skipBatchDoc gives back the conversion of a document of a failed batch.
// A redelivered job may belong to the worker that failed the batch and died
// before queuing its webhook: queuing it again is harmless (deduplicated).
func (w *Worker) skipBatchDoc(ctx context.Context, r *batch.Record, i int, d queue.Delivery) (*jobspb.Result, error) {
	if d.Attempt > 1 {
		if err := w.batch.batches.Notify(ctx, r); err != nil {
			return nil, err
		}
	}
	if err := w.batch.batches.DocNotDone(ctx, r, i); err != nil {
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
	won, err := w.batch.batches.Fail(ctx, r, msg)
	if err != nil {
		return err
	}
	if won {
		w.metrics.BatchFinished("error")
	}
	if err := w.batch.batches.DocNotDone(ctx, r, i); err != nil {
		return err
	}
	w.metrics.BatchDocument("failed")
	return nil
}
