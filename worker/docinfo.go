package worker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
)

// docStepError is a failure of one of finishDocument's steps; what names
// the step for the client ("set the document information").
type docStepError struct {
	what string
	err  error
}

func (e *docStepError) Error() string { return "worker: " + e.what + ": " + e.err.Error() }
func (e *docStepError) Unwrap() error { return e.err }

// finishDocument applies DESIGN §6's metadata and then its encryption to a
// finished PDF (rendered or merged, watermark stamped); either nil is
// skipped. Encryption comes last because nothing can edit the PDF after it:
// whatever still reads the output (a page count, say) must do so before, or
// hold the owner password. Errors are for finishFailure to sort.
func finishDocument(ctx context.Context, pdf []byte, info *jobspb.DocInfo, enc *jobspb.Encryption) ([]byte, error) {
	if info != nil {
		ctx, span := tracing.Child(ctx, "metadata")
		out, err := rewritePDF(pdf, func(in io.ReadSeeker, w io.Writer) error { return pdfedit.SetInfo(ctx, in, w, info) })
		tracing.End(span, err)
		if err != nil {
			return nil, &docStepError{"set the document information", err}
		}
		pdf = out
	}
	if enc != nil {
		ctx, span := tracing.Child(ctx, "encrypt")
		out, err := rewritePDF(pdf, func(in io.ReadSeeker, w io.Writer) error { return pdfedit.Encrypt(ctx, in, w, enc) })
		tracing.End(span, err)
		if err != nil {
			return nil, &docStepError{"encrypt the PDF", err}
		}
		pdf = out
	}
	return pdf, nil
}

// rewritePDF runs one pdfedit step from pdf into a new buffer; pdfcpu
// writes a document about as large as it read (encryption pads each
// stream by at most one AES block and adds its dictionary).
func rewritePDF(pdf []byte, step func(io.ReadSeeker, io.Writer) error) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(pdf) + 4096)
	if err := step(bytes.NewReader(pdf), &out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// finishFailure sorts a finishDocument error. The PDF is the worker's own
// output (Chromium's or a merge pdfcpu already wrote), so pdfcpu failing on
// it is ours: INTERNAL, not retried, since it would fail the same way.
// Bad options are the client's (the gateway validates them, so this means
// the two disagree). Anything else (cancellation) is returned as an error.
func finishFailure(err error) (*jobspb.Result, error) {
	var step *docStepError
	var bad *pdfedit.BadInputError
	switch {
	case !errors.As(err, &step):
		return nil, err
	case errors.Is(err, pdfedit.ErrInvalidEncryption):
		return failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, sentence(step.err.Error())), nil
	case errors.As(err, &bad):
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, sentence("could not "+step.what)), nil
	}
	return nil, err
}

// sentence capitalises s and ends it with a full stop.
func sentence(s string) string {
	s = strings.TrimRight(s, ". ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}
