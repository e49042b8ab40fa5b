package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/office"
	"github.com/docrender/docrender/worker/pdfedit"
)

// officeMaxMemory bounds each LibreOffice slot's address space: an idle
// slot maps ~620 MiB, so this leaves a document a few GiB before its slot
// dies (ErrCrashed: that document fails alone) rather than the machine.
const officeMaxMemory = 4 << 30

// handleOffice converts the uploaded office documents (DESIGN §11) with
// LibreOffice: one PDF per file, or with merge one PDF of them all in
// upload order, each through the steps every PDF-output kind shares
// (runSteps). A file LibreOffice cannot use is the client's BAD_INPUT
// naming it; one that hangs or crashes LibreOffice fails this job alone
// (its slot restarts) and is not retried: it would do the same again.
// A batch's office document (handleBatchDoc) is converted the same way,
// its PDF stored at its job's output key.
func (w *Worker) handleOffice(ctx context.Context, job *jobspb.Job, oj *jobspb.OfficeJob) (*jobspb.Result, error) {
	if len(oj.InputKeys) == 0 {
		return filesFailure("No office files were provided."), nil
	}
	eng, err := w.office.get(ctx)
	if err != nil {
		return nil, err
	}
	lctx, span := tracing.Child(ctx, "load inputs", attribute.Int("docrender.files", len(oj.InputKeys)))
	inputs := make([]office.Input, len(oj.InputKeys))
	for i, key := range oj.InputKeys {
		if inputs[i].Data, err = w.readBlob(lctx, key); err != nil {
			break
		}
		inputs[i].Name = key
		if i < len(oj.InputNames) {
			inputs[i].Name = oj.InputNames[i]
		}
	}
	tracing.End(span, err)
	if errors.Is(err, blob.ErrNotFound) {
		// The gateway gave up on the job and cleaned up: nothing to do.
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The uploaded files are gone."), nil
	}
	if err != nil {
		return nil, err
	}
	opt := office.Options{Landscape: oj.Landscape, PageRanges: oj.PageRanges}
	st := officeSteps(oj)
	nativePDFA := false
	if lvl := oj.GetRecord().GetPdfa(); lvl == "2b" || lvl == "3b" {
		// LibreOffice writes PDF/A-2b and -3b itself (fonts embedded whole,
		// its own XMP and output intent); our step then runs only when
		// another step or a merge changed the file after it.
		opt.PDFA, nativePDFA = lvl, true
	}
	pdfs, pages, err := w.convertAll(ctx, eng, inputs, opt)
	if err != nil {
		return officeFailure(err)
	}
	if sum := sumPages(pages); oj.MaxPages > 0 && sum > int(oj.MaxPages) {
		return failure(jobspb.ErrorKind_ERROR_KIND_TOO_LARGE, fmt.Sprintf(
			"The documents have %d pages together, more than %d, the most this account's plan renders.", sum, oj.MaxPages)), nil
	}
	if oj.Merge && len(pdfs) > 1 {
		var merged bytes.Buffer
		mctx, span := tracing.Child(ctx, "merge")
		in := make([]pdfedit.Input, len(pdfs))
		for i, p := range pdfs {
			in[i] = pdfedit.Input{Name: inputs[i].Name, R: bytes.NewReader(p)}
		}
		n, err := pdfedit.Merge(mctx, in, &merged)
		tracing.End(span, err)
		if res, err := editFailure(err); res != nil || err != nil {
			return res, err
		}
		pdfs, pages = [][]byte{merged.Bytes()}, []int{n}
	}
	onlyNative := nativePDFA && len(pdfs) == len(inputs) && st.onlyPDFA()
	total := 0
	for i := range pdfs {
		if !onlyNative {
			out, after, err := w.runSteps(ctx, pdfs[i], st)
			if err != nil {
				return stepsFailure(err, editFailure)
			}
			pdfs[i] = out
			if after > 0 {
				pages[i] = after
			}
		}
		total += pages[i]
	}
	out := &toolOutput{data: pdfs[0], pages: total, meta: &jobspb.ToolOutput{ContentType: "application/pdf"}}
	if len(pdfs) > 1 {
		names := make([]string, len(inputs))
		for i, in := range inputs {
			names[i] = strings.TrimSuffix(path.Base(in.Name), path.Ext(in.Name)) + ".pdf"
		}
		if out, err = zipOutput(out, uniqueNames(names), pdfs); err != nil {
			return nil, err
		}
	}
	res, err := w.store(ctx, job, out.data)
	if err != nil {
		return nil, err
	}
	res.Pages, res.Tool = int32(out.pages), out.meta
	return res, nil
}

// convertAll converts every input at once, as many in parallel as the
// engine has slots (the rest wait for one). The error is that of the first
// failed file in upload order, so the answer names the same file each time.
func (w *Worker) convertAll(ctx context.Context, eng *office.Engine, inputs []office.Input, opt office.Options) ([][]byte, []int, error) {
	ctx, span := tracing.Child(ctx, "convert", attribute.Int("docrender.files", len(inputs)))
	pdfs := make([][]byte, len(inputs))
	pages := make([]int, len(inputs))
	errs := make([]error, len(inputs))
	var wg sync.WaitGroup
	for i, in := range inputs {
		wg.Go(func() { pdfs[i], pages[i], errs[i] = eng.Convert(ctx, in, opt) })
	}
	wg.Wait()
	err := firstError(errs)
	tracing.End(span, err)
	return pdfs, pages, err
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// officeFailure sorts a conversion's error: a file the client must fix is
// a BAD_INPUT naming it; a hang or a crash is this document's alone (a 500
// not retried: it would hang again); the rest (the context's end) is
// returned for the queue to handle.
func officeFailure(err error) (*jobspb.Result, error) {
	var bad *office.BadInputError
	switch {
	case errors.As(err, &bad):
		return filesFailure(fmt.Sprintf("Invalid office file %q: %s.", bad.File, strings.TrimRight(bad.Reason, ". "))), nil
	case errors.Is(err, office.ErrTimeout):
		// The engine's error names the file first ("a.docx: LibreOffice ...").
		return failure(jobspb.ErrorKind_ERROR_KIND_TIMEOUT, sentence("Could not convert "+err.Error())), nil
	case errors.Is(err, office.ErrCrashed):
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, sentence("Could not convert "+err.Error())), nil
	}
	return nil, err
}

// uniqueNames makes names distinct for a ZIP: a second "a.pdf" becomes
// "a-2.pdf" (two uploads may share a name).
func uniqueNames(names []string) []string {
	seen := map[string]bool{}
	out := make([]string, len(names))
	for i, n := range names {
		cand := n
		for k := 2; seen[cand]; k++ {
			cand = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(n, ".pdf"), k, ".pdf")
		}
		seen[cand] = true
		out[i] = cand
	}
	return out
}

func officeSteps(oj *jobspb.OfficeJob) steps {
	return steps{order: oj.GetStages(), ordered: oj.GetStepsOrdered(), pages: oj.GetPagesStage(),
		wm: oj.GetWatermark(), info: oj.GetInfo(), enc: oj.GetEncryption(), rec: oj.GetRecord()}
}

// onlyPDFA says whether s asks for nothing but PDF/A: LibreOffice's own
// PDF/A output then stands as it is.
func (s steps) onlyPDFA() bool {
	return !s.ordered && s.wm == nil && s.info == nil && s.enc == nil &&
		proto.Equal(s.rec, &jobspb.Record{Pdfa: s.rec.GetPdfa()})
}

func sumPages(pages []int) int {
	n := 0
	for _, p := range pages {
		n += p
	}
	return n
}
