package pdfedit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/docrender/docrender/pkg/limits"
)

// Input is one PDF to merge.
type Input struct {
	// Name is the client-side file name, used in errors.
	Name string
	// R holds the PDF; Merge seeks it freely.
	R io.ReadSeeker
}

// Merge concatenates inputs, in the given order, into one PDF written to w
// and returns its page count.
//
// Every input is read and validated (relaxed) before anything is written: the
// first unusable input, in input order, is reported as a *BadInputError
// naming it. Inputs are parsed concurrently (up to GOMAXPROCS at a time);
// the page trees are then appended in order without an optimisation pass,
// and the result is written once, with a classic xref table. Outlines
// (bookmarks) of the inputs are preserved. Cancelling ctx aborts the merge
// with ctx's error.
//
// Nothing is written to w when an input is rejected while reading. A defect
// found only while writing (rare: relaxed validation missed it) may leave
// partial output in w, so callers write to a temporary file or blob and
// discard it on error.
func Merge(ctx context.Context, inputs []Input, w io.Writer) (pages int, err error) {
	if len(inputs) == 0 {
		return 0, ErrNoInputs
	}
	if w == nil {
		return 0, errors.New("pdfedit: merge: nil writer")
	}
	if ctx == nil {
		ctx = context.Background()
	}

	pcs, err := readAll(ctx, inputs)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, pc := range pcs {
		total += pc.PageCount
	}
	if total > limits.MergePages {
		return 0, &BadInputError{Reason: fmt.Sprintf("the files have %d pages together; a merge takes at most %d", total, limits.MergePages)}
	}

	dest := pcs[0]
	pcs[0] = nil
	version := dest.XRefTable.Version()
	for i := 1; i < len(pcs); i++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if v := pcs[i].XRefTable.Version(); v > version {
			version = v
		}
		if err := appendPDF(inputs[i].Name, pcs[i], dest); err != nil {
			return 0, err
		}
		pcs[i] = nil // let the source context go
	}
	if version < model.V17 {
		version = model.V17
	}
	dest.RootVersion = &version

	if err := ctx.Err(); err != nil {
		return 0, err
	}
	pages = dest.PageCount
	if err := writePDF(dest, w); err != nil {
		if errors.Is(err, errContent) {
			return 0, blame(ctx, inputs, err)
		}
		return 0, err
	}
	return pages, nil
}

// blame finds the input behind a failure to write the merged document (a
// defect relaxed validation let through) by writing each input on its own.
// Only the failure path pays for it. When no single input fails alone, the
// inputs fail together (a page tree that breaks once appended, found by
// FuzzMerge): still the content's fault, so a bad input naming none, never
// an error the queue would retry.
func blame(ctx context.Context, inputs []Input, writeErr error) error {
	for _, in := range inputs {
		if ctx.Err() != nil {
			break
		}
		pc, err := readPDF(ctx, in.Name, in.R, newConf(model.MERGECREATE))
		if err != nil {
			return err
		}
		if err := writePDF(pc, io.Discard); err != nil && errors.Is(err, errContent) {
			return &BadInputError{Name: in.Name, Reason: contentReason(err)}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &BadInputError{Reason: "the files cannot be merged together: " + contentReason(writeErr)}
}

// readAll reads and validates every input, concurrently. The error returned
// is the one of the lowest-indexed input that failed, so the outcome does not
// depend on scheduling.
func readAll(ctx context.Context, inputs []Input) ([]*model.Context, error) {
	n := len(inputs)
	pcs := make([]*model.Context, n)
	errs := make([]error, n)

	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}

	var (
		mu       sync.Mutex
		next     int
		firstBad = n // lowest index that failed; inputs after it are skipped
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= n || next > firstBad {
			return 0, false
		}
		i := next
		next++
		return i, true
	}
	fail := func(i int) {
		mu.Lock()
		if i < firstBad {
			firstBad = i
		}
		mu.Unlock()
	}

	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i, ok := take()
				if !ok {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
					fail(i)
					continue
				}
				in := inputs[i]
				pcs[i], errs[i] = readPDF(ctx, in.Name, in.R, newConf(model.MERGECREATE))
				if errs[i] != nil {
					fail(i)
				}
			}
		})
	}
	wg.Wait()

	for i := range n {
		if errs[i] != nil {
			return nil, errs[i]
		}
	}
	return pcs, nil
}

// appendPDF appends src's pages to dest. pdfcpu failing on a validated input
// (or panicking) means the input is unusable: a *BadInputError.
func appendPDF(name string, src, dest *model.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &BadInputError{Name: name, Reason: fmt.Sprintf("cannot merge this PDF (%v)", r)}
		}
	}()
	if err := pdfcpu.MergeXRefTables(name, src, dest, false, false); err != nil {
		return &BadInputError{Name: name, Reason: "cannot merge this PDF: " + truncate(err.Error())}
	}
	return nil
}
