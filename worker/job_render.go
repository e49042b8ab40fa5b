package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/render"
)

// handleRender renders rj's HTML to PDF, to job's output key: a single
// render, or a batch document. It returns a failure result for what the
// client must hear about, and an error for what should be retried.
func (w *Worker) handleRender(ctx context.Context, job *jobspb.Job, rj *jobspb.RenderJob) (*jobspb.Result, error) {
	lctx, span := tracing.Child(ctx, "load bundle", attribute.Int("docrender.files", len(rj.Files)))
	var b egress.Bundle
	var err error
	if rj.GetTemplate() != nil {
		// A stored template filled with the job's data (DESIGN §9).
		b, err = w.fillTemplate(lctx, job, rj)
	} else {
		b, err = render.LoadBundle(lctx, w.blobs, rj.BundlePrefix, rj.Files)
	}
	tracing.End(span, err)
	if err != nil {
		var bad *templateFailure
		switch {
		case errors.As(err, &bad):
			return bad.res, nil
		case errors.Is(err, errTemplateGone):
			return failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "The template was deleted before the document was rendered."), nil
		}
		if errors.Is(err, blob.ErrNotFound) {
			// The gateway gave up on the job and cleaned up: nothing to do.
			return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The uploaded files are gone."), nil
		}
		return nil, err
	}
	timeout := time.Duration(job.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = w.cfg.RenderTimeout
	}
	rctx, span := tracing.Child(ctx, "chromium render")
	// A stored template's documents fill a page kept warm (DESIGN §9): the
	// key is the account's and the version's, never shared across accounts.
	var warm string
	if rj.GetTemplate() != nil {
		warm = job.AccountId + "\x00" + rj.BundlePrefix + "\x00" + rj.Entry
	}
	out, err := w.renderer.RenderWith(rctx, b, rj, timeout, render.Options{Warm: warm, Farm: w.farmFor(job, rj)})
	tracing.End(span, err)
	pdf := out.PDF
	var bad *render.InputError
	var failedCheck *render.CheckError
	var tooLarge *render.LimitError
	switch {
	case errors.As(err, &tooLarge):
		// Past the plan's pages or the output bound (DESIGN §10).
		return failure(jobspb.ErrorKind_ERROR_KIND_TOO_LARGE, tooLarge.Message), nil
	case errors.As(err, &bad):
		// A page hook found something the client must fix (a bad data-qr).
		return failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, bad.Message), nil
	case errors.Is(err, render.ErrTimeout):
		return failure(jobspb.ErrorKind_ERROR_KIND_TIMEOUT, timeoutMessage(err, timeout)), nil
	case errors.As(err, &failedCheck):
		// failOnConsoleErrors, failOnResourceErrors (DESIGN §6),
		// failOnAccessibilityErrors (§8): no PDF.
		return checkFailure(failedCheck), nil
	case errors.Is(err, render.ErrPage):
		// What Chromium said stays in the log: the client hears no internals.
		w.log.WarnContext(ctx, "render failed", "job_id", job.Id, "err", err)
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The HTML could not be rendered."), nil
	case err != nil:
		return nil, err
	}
	if rj.Watermark != nil {
		// Generate and every batch document (DESIGN §4.17): stamped after printing.
		if pdf, err = w.stampWatermark(ctx, pdf, rj.Watermark, rj.Record); err != nil {
			return renderedWatermarkFailure(err)
		}
	}
	// DESIGN §6 metadata, then encryption: the last edit of the PDF. Count
	// pages before it (or on out.PDF): pdfedit.PageCount cannot open a PDF
	// encrypted with a user password.
	if pdf, err = w.finishDocument(ctx, pdf, rj.Info, rj.Encryption, rj.Record); err != nil {
		return finishFailure(err)
	}
	return w.storeRendered(ctx, job, pdf, out)
}

// timeoutMessage says the render ran out of time, and in which wait of the
// job's (DESIGN §6), when it was in one.
func timeoutMessage(err error, timeout time.Duration) string {
	var wait *render.WaitError
	if errors.As(err, &wait) {
		return fmt.Sprintf("Rendering exceeded the time limit of %s waiting for %s.", timeout, wait.Wait)
	}
	return fmt.Sprintf("Rendering exceeded the time limit of %s.", timeout)
}
