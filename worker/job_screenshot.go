package worker

import (
	"context"

	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
)

// handleScreenshot loads a screenshot's page as a render loads its own
// (its files or URL, its waits and hooks) and stores the image Chromium
// captured (POST /pdf/screenshot, DESIGN §11). What the client must fix
// (a full page past the bounds, a clip off the page) is a BAD_INPUT naming
// the option.
func (w *Worker) handleScreenshot(ctx context.Context, job *jobspb.Job, sj *jobspb.ScreenshotJob) (*jobspb.Result, error) {
	b, _, res, err := w.loadPage(ctx, job, sj.GetSource())
	if res != nil || err != nil {
		return res, err
	}
	timeout := w.timeout(job)
	sctx, span := tracing.Child(ctx, "chromium screenshot")
	shot, err := w.renderer.Screenshot(sctx, b, sj, timeout)
	tracing.End(span, err)
	if err != nil {
		return w.renderFailure(ctx, job, err, timeout)
	}
	if res, err = w.store(ctx, job, shot.Image); err != nil {
		return nil, err
	}
	res.Report = shot.Report
	res.Tool = &jobspb.ToolOutput{ContentType: "image/" + sj.GetFormat()}
	return res, nil
}
