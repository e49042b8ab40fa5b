package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
)

// msgNoPDFs is spec 4.2's answer when a merge has nothing to merge.
const msgNoPDFs = "No PDF files were provided for merging."

// handleMerge concatenates the uploaded PDFs in upload order (spec 4.2),
// stamps the watermark if one was asked for, and stores the result. The
// merged PDF is built in memory and stored only when everything succeeded,
// so a rejected input never leaves a partial file under the output key.
func (w *Worker) handleMerge(ctx context.Context, job *jobspb.Job) (*jobspb.Result, error) {
	mj := job.GetMerge()
	if len(mj.InputKeys) == 0 {
		return failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, msgNoPDFs), nil
	}
	lctx, span := tracing.Child(ctx, "load inputs", attribute.Int("docrender.files", len(mj.InputKeys)))
	inputs, err := w.loadMergeInputs(lctx, mj)
	tracing.End(span, err)
	if errors.Is(err, blob.ErrNotFound) {
		// The gateway gave up on the job and cleaned up: nothing to do.
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The uploaded files are gone."), nil
	}
	if err != nil {
		return nil, err
	}
	var merged bytes.Buffer
	mctx, span := tracing.Child(ctx, "merge")
	pages, err := pdfedit.Merge(mctx, inputs, &merged)
	tracing.End(span, err)
	if res, err := editFailure(err); res != nil || err != nil {
		return res, err
	}
	// The watermark, DESIGN §6 metadata, §8's steps, encryption last, or
	// the client's stages (stages.go).
	out, after, err := w.runSteps(ctx, merged.Bytes(), mergeSteps(mj))
	if err != nil {
		return stepsFailure(err, editFailure)
	}
	if after > 0 {
		pages = after
	}
	res, err := w.store(ctx, job, out)
	if err != nil {
		return nil, err
	}
	res.Pages = int32(pages)
	return res, nil
}

// loadMergeInputs reads every input into memory: pdfedit reads them whole
// anyway (pdfcpu seeks per object), and the gateway bounds the upload size.
func (w *Worker) loadMergeInputs(ctx context.Context, mj *jobspb.MergeJob) ([]pdfedit.Input, error) {
	inputs := make([]pdfedit.Input, len(mj.InputKeys))
	for i, key := range mj.InputKeys {
		name := key
		if i < len(mj.InputNames) {
			name = mj.InputNames[i]
		}
		data, err := w.readBlob(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("worker: merge input %q: %w", name, err)
		}
		inputs[i] = pdfedit.Input{Name: name, R: bytes.NewReader(data)}
	}
	return inputs, nil
}

func (w *Worker) readBlob(ctx context.Context, key string) ([]byte, error) {
	rc, info, err := w.blobs.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := bytes.NewBuffer(make([]byte, 0, max(info.Size, 0)+bytes.MinRead))
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// editFailure sorts a pdfedit error: the client's fault (a bad input PDF,
// bad watermark options, nothing to merge) becomes a BAD_INPUT result that
// the gateway answers with 400 and this message; a watermark image that is
// gone fails the job; anything else is returned as an error, to be retried.
func editFailure(err error) (*jobspb.Result, error) {
	var bad *pdfedit.BadInputError
	switch {
	case err == nil:
		return nil, nil
	case errors.Is(err, errWatermarkGone):
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The watermark image is gone."), nil
	case errors.As(err, &bad):
		return failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, badInputMessage(bad)), nil
	case errors.Is(err, pdfedit.ErrInvalidWatermark):
		return failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "Invalid watermark: "+err.Error()), nil
	case errors.Is(err, pdfedit.ErrNoInputs):
		return failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, msgNoPDFs), nil
	}
	return nil, err
}

// badInputMessage is the client's message for an unusable input PDF: it
// names the file, as uploaded, so the caller knows which one to fix.
func badInputMessage(bad *pdfedit.BadInputError) string {
	reason := strings.TrimRight(bad.Reason, ". ")
	if bad.Name == "" {
		return fmt.Sprintf("Invalid PDF: %s.", reason)
	}
	return fmt.Sprintf("Invalid PDF file %q: %s.", bad.Name, reason)
}
