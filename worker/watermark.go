package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/limits"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
)

// errWatermarkGone is a job whose watermark image (ImageKey) the blob store
// no longer has: the request's temporary files were removed (its gateway
// gave up, or its batch ended). Retrying cannot bring it back.
var errWatermarkGone = errors.New("worker: the watermark image is gone")

// stampWatermark returns pdf with wm stamped on the pages it selects
// (DESIGN §4.17). An image named by ImageKey is read from the blob store
// first; image_png inline (jobs of older gateways) is still accepted.
// For a document of record (rec asks for PDF/A or PDF/UA, DESIGN §8) the
// text is set in an embedded font (pdfedit.WatermarkOptions.Record).
// Errors are pdfedit's or errWatermarkGone, for editFailure to sort.
func (w *Worker) stampWatermark(ctx context.Context, pdf []byte, wm *jobspb.Watermark, rec *jobspb.Record) (_ []byte, err error) {
	ctx, span := tracing.Child(ctx, "watermark")
	defer func() { tracing.End(span, err) }()
	wm, err = w.loadWatermark(ctx, wm)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(pdf) + 4096)
	opts := pdfedit.WatermarkOptions{Record: ofRecord(rec)}
	if err := pdfedit.WatermarkWith(ctx, bytes.NewReader(pdf), &out, wm, opts); err != nil {
		return nil, fmt.Errorf("worker: watermark: %w", err)
	}
	return out.Bytes(), nil
}

// ofRecord reports whether rec asks for a document of record whose every
// font must be embedded: PDF/A (an e-invoice's is, the gateway sets it) or
// PDF/UA.
func ofRecord(rec *jobspb.Record) bool {
	return rec.GetPdfa() != "" || rec.GetPdfua()
}

// loadWatermark reads the image of wm's ImageKey, bounded like an inline
// one: the store's object is as hostile as a job's bytes, so nothing over
// limits.WatermarkImageBytes is read or allocated. pdfedit checks the
// image's bytes, header and pixels again before decoding it.
func (w *Worker) loadWatermark(ctx context.Context, wm *jobspb.Watermark) (*jobspb.Watermark, error) {
	if wm.GetImageKey() != "" && len(wm.GetImagePng()) > 0 {
		return nil, fmt.Errorf("%w: give the image inline or by key, not both", pdfedit.ErrInvalidWatermark)
	}
	loaded, err := blob.LoadWatermark(ctx, w.blobs, wm, limits.WatermarkImageBytes)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return nil, fmt.Errorf("%w: %w", errWatermarkGone, err)
	case errors.Is(err, blob.ErrTooLarge):
		return nil, fmt.Errorf("%w: image is over %d bytes", pdfedit.ErrInvalidWatermark, limits.WatermarkImageBytes)
	case err != nil:
		return nil, fmt.Errorf("worker: watermark: %w", err)
	}
	return loaded, nil
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
