package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfcheck"
	"github.com/docrender/docrender/worker/pdfedit"
	"github.com/docrender/docrender/worker/sign"
)

// docStepError is a failure of one of finishDocument's steps; what names
// the step for the client ("set the document information").
type docStepError struct {
	what string
	err  error
}

func (e *docStepError) Error() string { return "worker: " + e.what + ": " + e.err.Error() }
func (e *docStepError) Unwrap() error { return e.err }

// finishDocument applies DESIGN §6's metadata and §8's documents-of-record
// steps to a finished PDF (rendered or merged, watermark stamped), in §8's
// fixed order: metadata, XMP, attachments, PDF/A and PDF/UA (one pdfcpu
// read and write, pdfedit.Finish, whose written model is checked for the
// level asked for), then encryption or the signature. Encryption and the signature
// come last because nothing can edit the PDF after them: whatever still
// reads the output (a page count, say) must do so before. Errors are for
// finishFailure to sort.
func (w *Worker) finishDocument(ctx context.Context, pdf []byte, info *jobspb.DocInfo, enc *jobspb.Encryption, rec *jobspb.Record) ([]byte, error) {
	var err error
	if rec, err = w.loadRecord(ctx, rec); err != nil {
		return nil, &docStepError{"read the attachments", err}
	}
	signer, err := w.signer(rec.GetSign())
	if err != nil {
		return nil, &docStepError{"sign the PDF", err}
	}
	spec := pdfedit.RecordSpec{Info: info, Record: rec}
	if signer != nil {
		spec.Prepare = func(pc *model.Context) error { return sign.Prepare(pc, rec.Sign, signer, time.Now()) }
	}
	var violations []pdfcheck.Violation
	if lvl := (pdfcheck.Level{PDFA: rec.GetPdfa(), PDFUA: rec.GetPdfua()}); lvl != (pdfcheck.Level{}) {
		// The check runs on the model pdfcpu just wrote, not on a second
		// parse of its bytes: the byte-level rules are the writer's
		// (pdfcpu's header, xref, trailer ID; sign.Seal's ByteRange), which
		// the tests check on every PDF/A and PDF/UA they make
		// (pdfcheck.Check). The signature's CMS is not there yet.
		spec.Written = func(pc *model.Context) error {
			_, span := tracing.Child(ctx, "conformance check")
			vs, err := pdfcheck.CheckContext(pc, nil, lvl)
			tracing.End(span, err)
			for _, v := range vs {
				if signer != nil && strings.HasPrefix(v.Rule, "6.4.3-") {
					continue
				}
				violations = append(violations, v)
			}
			return err
		}
	}
	if info != nil || rec != nil {
		ctx, span := tracing.Child(ctx, "metadata")
		out, err := pdfedit.Finish(ctx, pdf, spec)
		tracing.End(span, err)
		if err != nil {
			return nil, &docStepError{"set the document information", err}
		}
		pdf = out
	}
	if len(violations) > 0 {
		return nil, &conformanceError{rec: rec, violations: violations}
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
	if signer != nil {
		ctx, span := tracing.Child(ctx, "sign")
		out, err := sign.Seal(ctx, pdf, rec.Sign, signer, w.tsa)
		tracing.End(span, err)
		if err != nil {
			return nil, &docStepError{"sign the PDF", err}
		}
		pdf = out
	}
	return pdf, nil
}

// conformanceError is a document that does not meet the PDF/A or PDF/UA
// level its request asked for: something in the input (a merged PDF's
// unembedded font, an image without alternative text) that our steps
// cannot mend.
type conformanceError struct {
	rec        *jobspb.Record
	violations []pdfcheck.Violation
}

func (e *conformanceError) Error() string {
	var want []string
	if e.rec.GetPdfa() != "" {
		want = append(want, "PDF/A-"+strings.ToUpper(e.rec.GetPdfa()))
	}
	if e.rec.GetPdfua() {
		want = append(want, "PDF/UA-1")
	}
	const shown = 5
	var rules []string
	for i, v := range e.violations {
		if i == shown {
			rules = append(rules, fmt.Sprintf("and %d more", len(e.violations)-shown))
			break
		}
		rules = append(rules, v.String())
	}
	return fmt.Sprintf("The PDF cannot be made %s: %s", strings.Join(want, " and "), strings.Join(rules, "; "))
}

// loadRecord reads back the bytes of rec's attachments and e-invoice, at
// most the upload limit together (the gateway bounded them by it).
func (w *Worker) loadRecord(ctx context.Context, rec *jobspb.Record) (*jobspb.Record, error) {
	if rec == nil {
		return nil, nil
	}
	limit := w.cfg.MaxUpload
	if limit <= 0 {
		limit = 50 << 20
	}
	return blob.LoadRecord(ctx, w.blobs, rec, limit)
}

// errUnknownIdentity is a signature by an identity this worker did not load.
var errUnknownIdentity = errors.New("signing identity not loaded")

// signer is the identity sig names; nil without a signature.
func (w *Worker) signer(sig *jobspb.Signature) (*sign.Identity, error) {
	if sig == nil {
		return nil, nil
	}
	id := w.identities[sig.Identity]
	if id == nil {
		return nil, fmt.Errorf("%w: %q (is DOCRENDER_SIGNING_DIR the same on gateways and workers?)", errUnknownIdentity, sig.Identity)
	}
	return id, nil
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
	var opt *pdfedit.OptionError
	var box *sign.BadBoxError
	var conf *conformanceError
	switch {
	case errors.As(err, &conf):
		res := failure(jobspb.ErrorKind_ERROR_KIND_CHECK_FAILED, sentence(conf.Error()))
		res.Report = &jobspb.Report{}
		for _, v := range conf.violations {
			res.Report.ConformanceViolations = append(res.Report.ConformanceViolations, v.String())
		}
		return res, nil
	case !errors.As(err, &step):
		return nil, err
	case errors.As(err, &opt):
		return optionFailure(opt.Field, opt.Problem), nil
	case errors.As(err, &box):
		return optionFailure(box.Field, box.Reason), nil
	case errors.Is(err, sign.ErrTSA):
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The time-stamp authority is unavailable; the PDF was not signed."), nil
	case errors.Is(err, errUnknownIdentity):
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, sentence(step.err.Error())), nil
	case errors.Is(err, blob.ErrNotFound):
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The attachments are gone."), nil
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
