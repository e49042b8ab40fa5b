package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
)

// steps are a job's post-processing steps (DESIGN §6, §8, §11): the same
// for every job kind that outputs a PDF (renders, batch documents, merges,
// the PDF tools).
type steps struct {
	// order is the client's stages when ordered, else §8's fixed order
	// applies.
	order   []string
	ordered bool
	pages   *jobspb.PagesTool
	wm      *jobspb.Watermark
	info    *jobspb.DocInfo
	enc     *jobspb.Encryption
	rec     *jobspb.Record
}

func renderSteps(rj *jobspb.RenderJob) steps {
	return steps{order: rj.GetStages(), ordered: rj.GetStepsOrdered(), pages: rj.GetPagesStage(),
		wm: rj.GetWatermark(), info: rj.GetInfo(), enc: rj.GetEncryption(), rec: rj.GetRecord()}
}

func mergeSteps(mj *jobspb.MergeJob) steps {
	return steps{order: mj.GetStages(), ordered: mj.GetStepsOrdered(), pages: mj.GetPagesStage(),
		wm: mj.GetWatermark(), info: mj.GetInfo(), enc: mj.GetEncryption(), rec: mj.GetRecord()}
}

func toolSteps(tj *jobspb.ToolJob) steps {
	return steps{order: tj.GetStages(), ordered: tj.GetStepsOrdered(), pages: tj.GetPagesStage(),
		wm: tj.GetWatermark(), info: tj.GetInfo(), enc: tj.GetEncryption(), rec: tj.GetRecord()}
}

// stepFailure is a failed step: which sorting of its error applies
// (renderedWatermarkFailure, finishFailure, toolFailure).
type stepFailure struct {
	op  string
	at  int // its index in the stages; -1 without stages
	err error
}

func (e *stepFailure) Error() string { return e.err.Error() }
func (e *stepFailure) Unwrap() error { return e.err }

// runSteps applies s to pdf: §8's fixed order (watermark, then metadata,
// XMP, attachments, PDF/A and PDF/UA in one read and write, then
// encryption or the signature), or the client's stages in theirs. Steps
// in a row that pdfedit.Finish does in one pass (metadata, attachments,
// pdfa, pdfua, and a sign after them) are done in one pass: their order
// among themselves changes nothing. pages is the page count after a pages
// step, 0 when none ran (the printed count stands).
func (w *Worker) runSteps(ctx context.Context, pdf []byte, s steps) (out []byte, pages int, err error) {
	if !s.ordered {
		if s.wm != nil {
			if pdf, err = w.stampWatermark(ctx, pdf, s.wm, s.rec); err != nil {
				return nil, 0, &stepFailure{pdfopts.StageWatermark, -1, err}
			}
		}
		if pdf, err = w.finishDocument(ctx, pdf, s.info, s.enc, s.rec); err != nil {
			return nil, 0, &stepFailure{pdfopts.StageMetadata, -1, err}
		}
		return pdf, 0, nil
	}
	finishing := []string{pdfopts.StageMetadata, pdfopts.StageAttachments, pdfopts.StagePDFA, pdfopts.StagePDFUA, pdfopts.StageSign}
	for i := 0; i < len(s.order); {
		switch op := s.order[i]; op {
		case pdfopts.StagePages:
			ctx, span := tracing.Child(ctx, "pages")
			var buf bytes.Buffer
			rotate := make(map[string]int, len(s.pages.GetRotate()))
			for k, v := range s.pages.GetRotate() {
				rotate[k] = int(v)
			}
			pages, err = pdfedit.Pages(ctx, bytes.NewReader(pdf), s.pages.GetSelect(), rotate, s.pages.GetDelete(), &buf)
			tracing.End(span, err)
			if err != nil {
				return nil, 0, &stepFailure{op, i, err}
			}
			pdf = buf.Bytes()
			i++
		case pdfopts.StageWatermark:
			if pdf, err = w.stampWatermark(ctx, pdf, s.wm, s.rec); err != nil {
				return nil, 0, &stepFailure{op, i, err}
			}
			i++
		case pdfopts.StageEncrypt:
			if pdf, err = w.finishDocument(ctx, pdf, nil, s.enc, nil); err != nil {
				return nil, 0, &stepFailure{op, i, err}
			}
			i++
		default:
			j := i
			for j < len(s.order) && slices.Contains(finishing, s.order[j]) {
				j++
			}
			group := s.order[i:j]
			var info *jobspb.DocInfo
			if slices.Contains(group, pdfopts.StageMetadata) {
				info = s.info
			}
			if pdf, err = w.finishDocument(ctx, pdf, info, nil, groupRecord(s.rec, group)); err != nil {
				return nil, 0, &stepFailure{op, i, err}
			}
			i = j
		}
	}
	return pdf, pages, nil
}

// groupRecord is the part of rec that the steps of group set; nil when
// none (the language goes with every part: it is the document's).
func groupRecord(rec *jobspb.Record, group []string) *jobspb.Record {
	if rec == nil {
		return nil
	}
	out := proto.CloneOf(rec)
	if !slices.Contains(group, pdfopts.StageAttachments) {
		out.Attachments, out.AttachmentRelationship = nil, ""
	}
	if !slices.Contains(group, pdfopts.StagePDFA) {
		out.Pdfa = ""
	}
	if !slices.Contains(group, pdfopts.StagePDFUA) {
		out.Pdfua = false
	}
	if !slices.Contains(group, pdfopts.StageSign) {
		out.Sign = nil
	}
	out.Einvoice = nil // never with stages (pdfopts.ApplyStages)
	if proto.Equal(out, &jobspb.Record{Lang: out.Lang}) && !slices.Contains(group, pdfopts.StageMetadata) {
		return nil
	}
	return out
}

// stepsFailure sorts a runSteps error for the job's result, by the step
// that failed; watermark sorts a watermark's (a render's and a merge's
// differ: the merge's inputs are the client's).
func stepsFailure(err error, watermark func(error) (*jobspb.Result, error)) (*jobspb.Result, error) {
	var sf *stepFailure
	switch {
	case errors.As(err, &sf) && sf.op == pdfopts.StageWatermark:
		return watermark(sf.err)
	case errors.As(err, &sf) && sf.op == pdfopts.StagePages:
		// A page the document does not have: named as the client wrote it.
		res, err := toolFailure("the document", sf.err)
		if res != nil && res.ErrorField != "" && res.ErrorField != "files" {
			field := fmt.Sprintf("stages[%d].%s", sf.at, res.ErrorField)
			res.ErrorMessage = strings.Replace(res.ErrorMessage, res.ErrorField, field, 1)
			res.ErrorField = field
		}
		return res, err
	case errors.As(err, &sf):
		return finishFailure(sf.err)
	}
	return finishFailure(err)
}
