package worker

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
	"github.com/docrender/docrender/worker/sign"
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
	if err == nil && !report.Encrypted {
		// An encrypted file's strings (a signature's /Reason) are
		// ciphertext: it reports encrypted and no more.
		report.Signatures = signatures(data)
	}
	tracing.End(span, err)
	if res, err := editFailure(err); res != nil || err != nil {
		return res, err
	}
	return &jobspb.Result{Inspect: report, Pages: report.Pages}, nil
}

// signatures are the PAdES/CMS signatures of an inspected PDF (DESIGN §8),
// each checked over the bytes it signs; sign.Read never fails the
// inspection, a broken signature is reported as not valid.
func signatures(pdf []byte) []*jobspb.InspectReport_Signature {
	found, _ := sign.Read(pdf)
	var out []*jobspb.InspectReport_Signature
	for _, f := range found {
		s := &jobspb.InspectReport_Signature{
			Signer:              f.Signer,
			Level:               f.Level,
			CoversWholeDocument: f.CoversWholeDocument,
			Valid:               f.Valid,
			Reason:              f.Reason,
		}
		if !f.SignedAt.IsZero() {
			s.SignedAt = f.SignedAt.UTC().Format(time.RFC3339)
		}
		out = append(out, s)
	}
	return out
}
