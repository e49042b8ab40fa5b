package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
	"github.com/docrender/docrender/worker/pdfium"
	"github.com/docrender/docrender/worker/poppler"
)

// toolOutput is what a tool made, before it is stored.
type toolOutput struct {
	data  []byte
	pages int
	meta  *jobspb.ToolOutput
}

// handleTool runs one of DESIGN §11's PDF tools on the uploaded PDF and
// stores its output. Whatever the document makes of the options (a page
// past the last) is the client's BAD_INPUT naming the field. A batch's PDF
// document (handleBatchDoc) runs the same way, its output stored at its
// job's output key.
func (w *Worker) handleTool(ctx context.Context, job *jobspb.Job, tj *jobspb.ToolJob) (*jobspb.Result, error) {
	data, err := w.readBlob(ctx, tj.InputKey)
	if errors.Is(err, blob.ErrNotFound) {
		// The gateway gave up on the job and cleaned up: nothing to do.
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The uploaded file is gone."), nil
	}
	if err != nil {
		return nil, err
	}
	// A hostile PDF may keep pdfcpu or PDFium busy: the job's time bounds
	// it as it bounds a render.
	timeout := w.timeout(job)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tctx, span := tracing.Child(tctx, tj.Op())
	out, err := w.runTool(tctx, tj, data)
	tracing.End(span, err)
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		return failure(jobspb.ErrorKind_ERROR_KIND_TIMEOUT, fmt.Sprintf("The PDF tool exceeded the time limit of %s.", timeout)), nil
	}
	var sf *stepFailure
	if errors.As(err, &sf) {
		return stepsFailure(err, editFailure)
	}
	if err != nil {
		return toolFailure(tj.InputName, err)
	}
	res, err := w.store(ctx, job, out.data)
	if err != nil {
		return nil, err
	}
	res.Pages, res.Tool = int32(out.pages), out.meta
	return res, nil
}

// runTool does what tj asks of the PDF data.
func (w *Worker) runTool(ctx context.Context, tj *jobspb.ToolJob, data []byte) (*toolOutput, error) {
	out := &toolOutput{meta: &jobspb.ToolOutput{ContentType: "application/pdf"}}
	var buf bytes.Buffer
	var err error
	switch t := tj.Tool.(type) {
	case *jobspb.ToolJob_Split:
		var parts [][]byte
		if parts, err = pdfedit.Split(ctx, bytes.NewReader(data), t.Split.Ranges, int(t.Split.Every), pdfopts.MaxSplitParts); err != nil {
			return nil, err
		}
		// The stages run on each part: a part is a document of its own.
		for i := range parts {
			if parts[i], _, err = w.runSteps(ctx, parts[i], toolSteps(tj)); err != nil {
				return nil, err
			}
		}
		names := numbered(tj.FileName, len(parts), func(i int) int { return i + 1 }, "pdf")
		return zipOutput(out, names, parts)
	case *jobspb.ToolJob_Pages:
		rotate := make(map[string]int, len(t.Pages.Rotate))
		for k, v := range t.Pages.Rotate {
			rotate[k] = int(v)
		}
		out.pages, err = pdfedit.Pages(ctx, bytes.NewReader(data), t.Pages.Select, rotate, t.Pages.Delete, &buf)
	case *jobspb.ToolJob_Flatten:
		err = pdfedit.Flatten(ctx, bytes.NewReader(data), &buf)
	case *jobspb.ToolJob_Optimize:
		var before int64
		before, _, err = pdfedit.Optimize(ctx, bytes.NewReader(data), &buf, int(t.Optimize.ImageQuality), int(t.Optimize.MaxImageDpi))
		out.meta.BytesBefore = before
	case *jobspb.ToolJob_Metadata:
		err = pdfedit.SetMetadata(ctx, bytes.NewReader(data), &buf, t.Metadata.Info)
	case *jobspb.ToolJob_Text:
		return w.text(ctx, out, data, t.Text)
	case *jobspb.ToolJob_Images:
		return w.images(ctx, out, tj.FileName, data, t.Images)
	case nil:
		// A batch's PDF as sent, through the batch's steps alone: read as
		// the tools read theirs, so that a corrupt file is named as they
		// name it before any step sees it, and passed on unchanged.
		out.pages, err = pdfedit.Check(ctx, data)
		buf.Write(data)
	default:
		return nil, &pdfedit.OptionError{Field: "options", Problem: "no tool was asked for"}
	}
	if err != nil {
		return nil, err
	}
	data, after, err := w.runSteps(ctx, buf.Bytes(), toolSteps(tj))
	if err != nil {
		return nil, err
	}
	if after > 0 {
		out.pages = after
	}
	out.data = data
	return out, nil
}

// text is /pdf/text: pdftotext's plain text where it reads the PDF
// (plainText), else PDFium's; PDFium's Markdown.
func (w *Worker) text(ctx context.Context, out *toolOutput, data []byte, t *jobspb.TextTool) (*toolOutput, error) {
	pages, err := pdfopts.ExpandPages("pages", t.Pages, pdfopts.MaxToolPages)
	if err != nil {
		return nil, err
	}
	out.meta.ContentType = "text/plain; charset=utf-8"
	if t.Markdown {
		out.meta.ContentType = "text/markdown; charset=utf-8"
	} else if b, err := w.plainText(ctx, data, pages); !errors.Is(err, poppler.ErrNotRead) {
		out.data = b
		return out, err
	}
	eng, err := w.pdfium.get(ctx)
	if err != nil {
		return nil, err
	}
	var s string
	if t.Markdown {
		s, err = eng.Markdown(ctx, data, pages)
	} else {
		s, err = eng.Text(ctx, data, pages)
	}
	if err != nil {
		return nil, err
	}
	out.data = []byte(s)
	return out, nil
}

// plainText is the text of pages (nil: all) read by pdftotext.
// poppler.ErrNotRead: no pdftotext here, or a PDF or pages it does not
// read as expected (pages that do not exist among them): PDFium reads it,
// or refuses it in its words. The page count is only read where that costs
// nothing (Chromium's layout): any other upload is never parsed here, only
// by pdftotext under its bounds.
func (w *Worker) plainText(ctx context.Context, data []byte, pages []int) ([]byte, error) {
	if w.pdftotext == nil {
		return nil, poppler.ErrNotRead
	}
	count, _ := pdfedit.QuickPageCount(data)
	b, err := w.pdftotext.Text(ctx, data, pages, count, pdfium.DefaultMaxPages)
	var large *poppler.TooLargeError
	if errors.As(err, &large) {
		return nil, &pdfium.BadInputError{Param: "pages", Msg: large.Error(), Err: err}
	}
	if errors.Is(err, poppler.ErrNotRead) {
		w.log.DebugContext(ctx, "pdf/text: PDFium reads it", "why", err)
	}
	return b, err
}

// images is /pdf/images: one image when there is one page to show, else a
// ZIP of one a page, each named by its page number.
func (w *Worker) images(ctx context.Context, out *toolOutput, base string, data []byte, t *jobspb.ImagesTool) (*toolOutput, error) {
	eng, pages, err := w.pdfiumFor(ctx, t.Pages)
	if err != nil {
		return nil, err
	}
	imgs, err := eng.Images(ctx, data, pages, t.Format, int(t.Dpi), 0)
	if err != nil {
		return nil, err
	}
	out.pages = len(imgs)
	if len(imgs) == 1 {
		out.data = imgs[0]
		out.meta.ContentType = "image/" + t.Format
		return out, nil
	}
	page := func(i int) int { return i + 1 }
	if pages != nil {
		page = func(i int) int { return pages[i] }
	}
	return zipOutput(out, numbered(base+"-page", len(imgs), page, t.Format), imgs)
}

// pdfiumFor is the PDFium engine, started on first use, and the pages
// spec asks for (nil: all).
func (w *Worker) pdfiumFor(ctx context.Context, spec string) (*pdfium.Engine, []int, error) {
	pages, err := pdfopts.ExpandPages("pages", spec, pdfopts.MaxToolPages)
	if err != nil {
		return nil, nil, err
	}
	eng, err := w.pdfium.get(ctx)
	return eng, pages, err
}

// numbered names n files base-<number>.ext, the numbers zero-padded to one
// width so that the names sort in order.
func numbered(base string, n int, number func(int) int, ext string) []string {
	if base == "" {
		base = "document"
	}
	width := 1
	for i := range n {
		width = max(width, len(fmt.Sprint(number(i))))
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%0*d.%s", base, width, number(i), ext)
	}
	return names
}

// zipOutput makes out the ZIP of files under names, stored (storedZip).
func zipOutput(out *toolOutput, names []string, files [][]byte) (*toolOutput, error) {
	data, err := storedZip(names, files, time.Now())
	if err != nil {
		return nil, err
	}
	out.data = data
	out.meta.ContentType = "application/zip"
	out.meta.Files = int32(len(files))
	return out, nil
}

// toolFailure sorts a tool's error: the client's (a bad option for this
// document, a PDF that cannot be used) is a BAD_INPUT naming the field to
// fix; anything else is returned, to be retried.
func toolFailure(name string, err error) (*jobspb.Result, error) {
	var (
		opt  *pdfedit.OptionError
		bad  *pdfedit.BadInputError
		pbad *pdfium.BadInputError
		ibad *invalid.Error
	)
	switch {
	case errors.As(err, &opt):
		return optionFailure(opt.Field, opt.Problem), nil
	case errors.As(err, &ibad):
		return optionFailure(ibad.Field, ibad.Problem), nil
	case errors.As(err, &bad):
		if bad.Name == "" {
			named := *bad
			named.Name = name
			bad = &named
		}
		return filesFailure(badInputMessage(bad)), nil
	case errors.As(err, &pbad) && pbad.Param == "file":
		return filesFailure(fmt.Sprintf("Invalid PDF file %q: %s.", name, strings.TrimRight(pbad.Msg, ". "))), nil
	case errors.As(err, &pbad):
		return optionFailure(pbad.Param, pbad.Msg), nil
	}
	return nil, err
}

// optionFailure is a BAD_INPUT naming field, with the gateway's words for
// a refused option ("Invalid value for dpi: ...").
func optionFailure(field, problem string) *jobspb.Result {
	res := failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, sentence("Invalid value for "+field+": "+problem))
	res.ErrorField = field
	return res
}

// filesFailure is a BAD_INPUT blaming the uploaded file.
func filesFailure(msg string) *jobspb.Result {
	res := failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, msg)
	res.ErrorField = "files"
	return res
}

// lazy is an engine started on the first job that needs it (PDFium:
// compiling its WebAssembly takes seconds and its instances tens of MiB;
// LibreOffice: a second and ~90 MiB per slot), which a worker that never
// gets such a job should not pay. A start that fails is not kept: the next
// job tries again.
type lazy[T any] struct {
	start func(context.Context) (T, error)
	stop  func(T)
	mu    sync.Mutex
	eng   T
	ok    bool
}

func (l *lazy[T]) get(ctx context.Context) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ok {
		return l.eng, nil
	}
	eng, err := l.start(ctx)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("worker: %w", err)
	}
	l.eng, l.ok = eng, true
	return eng, nil
}

// peek is the engine if it has started, without starting it or waiting
// for a start under way (a metrics scrape must not wait out a compile).
func (l *lazy[T]) peek() (T, bool) {
	if !l.mu.TryLock() {
		var zero T
		return zero, false
	}
	defer l.mu.Unlock()
	return l.eng, l.ok
}

func (l *lazy[T]) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ok {
		l.stop(l.eng)
		var zero T
		l.eng, l.ok = zero, false
	}
}
