package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
)

// stampWatermark returns pdf with wm stamped on the pages it selects
// (DESIGN §4.17). Errors are pdfedit's, for editFailure to sort.
func (w *Worker) stampWatermark(ctx context.Context, pdf []byte, wm *jobspb.Watermark) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(pdf) + 4096)
	if err := pdfedit.Watermark(ctx, bytes.NewReader(pdf), &out, wm); err != nil {
		return nil, fmt.Errorf("worker: watermark: %w", err)
	}
	return out.Bytes(), nil
}

// renderedWatermarkFailure sorts a failure to stamp a PDF Chromium printed:
// bad options are the client's (the gateway validates them, so this means
// the two disagree); a PDF pdfcpu cannot edit is ours, not the client's.
func renderedWatermarkFailure(err error) (*jobspb.Result, error) {
	var bad *pdfedit.BadInputError
	if errors.As(err, &bad) {
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The watermark could not be applied to the rendered PDF."), nil
	}
	return editFailure(err)
}
