package render

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/worker/browser"
)

// stepNames are the steps of a render, in order, each ending at one of
// Render's marks.
var stepNames = [...]string{"chromium tab", "chromium load", "chromium wait", "page hooks", "chromium print"}

// traceSteps records a render's steps as spans under ctx's span (DESIGN §7)
// after the fact, from the marks Render takes anyway, measured from start:
// Render's code keeps its shape, and with tracing off this is one check. A
// step not reached has a zero mark: the first such one is where err ended
// the render, and the later ones did not happen. how says how the page was
// loaded (written, navigated, url).
func traceSteps(ctx context.Context, start time.Time, err error, how string, marks [len(stepNames)]time.Duration) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	end := time.Now()
	tr := tracing.From(ctx)
	from := start
	for i, name := range stepNames {
		opts := []trace.SpanStartOption{trace.WithTimestamp(from)}
		if i == 1 {
			opts = append(opts, trace.WithAttributes(attribute.String("docrender.render.load", how)))
		}
		_, span := tr.Start(ctx, name, opts...)
		if marks[i] <= 0 {
			if err != nil {
				tracing.Fail(span, failureKind(ctx, err))
			}
			span.End(trace.WithTimestamp(end))
			return
		}
		from = start.Add(marks[i])
		span.End(trace.WithTimestamp(from))
	}
}

// failureKind names a render's failure for its span, without its text.
func failureKind(ctx context.Context, err error) string {
	var wait *WaitError
	var input *InputError
	var check *CheckError
	switch {
	case errors.Is(err, browser.ErrBrowserGone):
		return "browser_gone"
	case ctx.Err() != nil && errors.As(err, &wait):
		return "timeout_waiting"
	case ctx.Err() != nil:
		return "timeout"
	case errors.As(err, &input):
		return "bad_input"
	case errors.As(err, &check):
		return "check_failed"
	case errors.Is(err, ErrPage):
		return "page_failed"
	}
	return "error"
}

// loadKind says how Render loads a page: fetched by URL, written into the
// tab (no scripts), or navigated to.
func loadKind(url, written bool) string {
	switch {
	case url:
		return "url"
	case written:
		return "written"
	}
	return "navigated"
}
