package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/docrender/docrender/pkg/batch"
	"github.com/docrender/docrender/proto/jobspb"
)

// What a job may do to its worker is end itself (DESIGN §5): a panic in a
// job step becomes that job's failure, and a job that took its worker down
// on every try is settled as failed without running again. The queue
// recovers too (pkg/queue), as the last line; the recovers here are where a
// failure must also be recorded: a batch document fails its batch.

// errInternal is what a client is told of a job that panicked.
const errInternal = "The document could not be rendered (internal error)."

// contained runs step, turning a panic into the job's failure.
func (w *Worker) contained(ctx context.Context, step func() (*jobspb.Result, error)) (res *jobspb.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			w.log.ErrorContext(ctx, "job step panicked", "panic", r, "stack", string(debug.Stack()))
			res, err = failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, errInternal), nil
		}
	}()
	return step()
}

// errDied is what a client is told of a job no worker finished.
const errDied = "The document stopped its worker on every try; it is not retried."

// settleDead is the queue's DeadHandler: it ends a job whose tries all
// ended without an answer. A single render or merge is answered with a
// failure (its gateway gives the conversion back); a batch document fails
// its batch and gives back its conversion; a ZIP job fails its batch. nil:
// the state store could not be reached, and the job stays.
func (w *Worker) settleDead(ctx context.Context, job *jobspb.Job) *jobspb.Result {
	res := failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, errDied)
	batchID, index := job.BatchRef()
	if batchID == "" || w.batch == nil {
		return res
	}
	bt := w.batch.batches
	var r *batch.Record
	err := w.patiently(ctx, "reading the batch", func() (err error) {
		r, err = bt.Get(ctx, batchID)
		return err
	})
	if errors.Is(err, batch.ErrNotFound) {
		return res
	}
	if err != nil {
		w.log.ErrorContext(ctx, "dead job: batch not reachable", "err", err)
		return nil
	}
	err = w.patiently(ctx, "settling the batch", func() error {
		if job.GetZip() != nil {
			return w.failZip(ctx, r, "The ZIP archive could not be assembled: its worker stopped on every try.")
		}
		return w.failBatchDoc(ctx, r, int(index), errDied)
	})
	if err != nil {
		w.log.ErrorContext(ctx, "dead job: settling its batch", "err", fmt.Errorf("worker: %w", err))
		return nil
	}
	return res
}
