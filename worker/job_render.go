package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/render"
)

// handleRender renders rj's HTML to PDF, to job's output key: a single
// render, or a batch document. It returns a failure result for what the
// client must hear about, and an error for what should be retried.
func (w *Worker) handleRender(ctx context.Context, job *jobspb.Job, rj *jobspb.RenderJob) (*jobspb.Result, error) {
	b, rj, res, err := w.loadPage(ctx, job, rj)
	if res != nil || err != nil {
		return res, err
	}
	timeout := w.timeout(job)
	rctx, span := tracing.Child(ctx, "chromium render")
	// A stored template's documents fill a page kept warm (DESIGN §9): the
	// key is the account's and the version's, never shared across accounts.
	var warm string
	if rj.GetTemplate() != nil {
		warm = job.AccountId + "\x00" + rj.BundlePrefix + "\x00" + rj.Entry
	}
	out, err := w.renderer.RenderWith(rctx, b, rj, timeout, render.Options{Warm: warm, Farm: w.farmFor(job, rj)})
	tracing.End(span, err)
	if err != nil {
		return w.renderFailure(ctx, job, err, timeout)
	}
	pdf := out.PDF
	// The watermark (DESIGN §4.17), §6 metadata, §8's steps, encryption
	// last, or the client's stages (stages.go). Pages are counted on
	// out.PDF (pdfedit.PageCount cannot open a PDF encrypted with a user
	// password), or after a pages step.
	pdf, after, err := w.runSteps(ctx, pdf, renderSteps(rj))
	if err != nil {
		return stepsFailure(err, renderedWatermarkFailure)
	}
	return w.storeRendered(ctx, job, pdf, out, after)
}

// loadPage reads what rj's page is made of: the uploaded files, a stored
// template filled with the job's data (DESIGN §9), or Markdown turned into
// its page (job_markdown.go; rj is then the job with that page as its
// entry). A failure the client must hear about is res.
func (w *Worker) loadPage(ctx context.Context, job *jobspb.Job, rj *jobspb.RenderJob) (_ egress.Bundle, _ *jobspb.RenderJob, res *jobspb.Result, _ error) {
	lctx, span := tracing.Child(ctx, "load bundle", attribute.Int("docrender.files", len(rj.Files)))
	var b egress.Bundle
	var err error
	if rj.GetTemplate() != nil {
		b, err = w.fillTemplate(lctx, job, rj)
	} else {
		b, err = render.LoadBundle(lctx, w.blobs, rj.BundlePrefix, rj.Files)
	}
	tracing.End(span, err)
	if err != nil {
		var bad *templateFailure
		switch {
		case errors.As(err, &bad):
			return nil, nil, bad.res, nil
		case errors.Is(err, errTemplateGone):
			return nil, nil, failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "The template was deleted before the document was rendered."), nil
		case errors.Is(err, blob.ErrNotFound):
			// The gateway gave up on the job and cleaned up: nothing to do.
			return nil, nil, failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The uploaded files are gone."), nil
		}
		return nil, nil, nil, err
	}
	if rj.GetMarkdown() {
		b, rj, res = markdownPage(b, rj)
	}
	return b, rj, res, nil
}

// timeout is the time job's page may take: the job's, else the worker's.
func (w *Worker) timeout(job *jobspb.Job) time.Duration {
	if t := time.Duration(job.TimeoutMs) * time.Millisecond; t > 0 {
		return t
	}
	return w.cfg.RenderTimeout
}

// renderFailure sorts the error of loading a page and printing or
// capturing it (err not nil): what the client must fix or hear about is a
// failure result, anything else is returned, to be retried.
func (w *Worker) renderFailure(ctx context.Context, job *jobspb.Job, err error, timeout time.Duration) (*jobspb.Result, error) {
	var bad *render.InputError
	var option *invalid.Error
	var failedCheck *render.CheckError
	var tooLarge *render.LimitError
	switch {
	case errors.As(err, &tooLarge):
		// Past the plan's pages or the output bound (DESIGN §10).
		return failure(jobspb.ErrorKind_ERROR_KIND_TOO_LARGE, tooLarge.Message), nil
	case errors.As(err, &bad):
		// A page hook found something the client must fix (a bad data-qr).
		return failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, bad.Message), nil
	case errors.As(err, &option):
		// An option only the loaded page refutes (a screenshot's clip).
		return optionFailure(option.Field, option.Problem), nil
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
	}
	return nil, err
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
