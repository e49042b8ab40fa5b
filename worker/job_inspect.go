package worker

import (
	"bytes"
	"context"
	"errors"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
)

// handleInspect reads the uploaded PDF and reports what it is and claims
// (DESIGN §8, POST /pdf/inspect). It writes nothing; an unusable input is
// the client's BAD_INPUT naming the file.
func (w *Worker) handleInspect(ctx context.Context, job *jobspb.Job) (*jobspb.Result, error) {
	ij := job.GetInspect()
	data, err := w.readBlob(ctx, ij.InputKey)
	if errors.Is(err, blob.ErrNotFound) {
		// The gateway gave up on the job and cleaned up: nothing to do.
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The uploaded file is gone."), nil
	}
	if err != nil {
		return nil, err
	}
	ictx, span := tracing.Child(ctx, "inspect")
	report, err := pdfedit.Inspect(ictx, ij.InputName, bytes.NewReader(data))
	tracing.End(span, err)
	if res, err := editFailure(err); res != nil || err != nil {
		return res, err
	}
	return &jobspb.Result{Inspect: report, Pages: report.Pages}, nil
}
