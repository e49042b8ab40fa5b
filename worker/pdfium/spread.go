package pdfium

import (
	"context"
	"errors"
	"runtime"
	"sync"

	gopdfium "github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
)

// minSpreadPages: fewer pages than this a spare instance are read on the
// caller's instance alone; opening the document again (parsing its
// cross-reference table and page tree, a few ms) would cost more than
// reading them.
const minSpreadPages = 8

// spread calls page(in, doc, k) for each k in [0, n), the pages of a
// document open on in. When other instances are idle (at most one an
// available core, and one per minSpreadPages pages), the pages are cut in
// contiguous ranges and the later ranges are read at the same time on
// those, each opening pdf again; the caller's instance reads the first. A
// busy worker thus reads as before, an idle one in a fraction of the time.
// page must be safe to call from several goroutines for different k. The
// first error in page order is returned; the other ranges stop at their
// next page.
func (e *Engine) spread(ctx context.Context, pdf []byte, in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, n int,
	page func(ctx context.Context, in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, k int) error) error {
	extra := e.takeIdle(min(runtime.GOMAXPROCS(0), n/minSpreadPages) - 1)
	if extra == 0 {
		return pageRange(ctx, in, doc, 0, n, page)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := extra + 1
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		from, to := p*n/parts, (p+1)*n/parts
		wg.Go(func() {
			defer func() { e.idle <- struct{}{} }()
			errs[p] = e.runTaken(ctx, pdf, func(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT) error {
				return pageRange(ctx, in, doc, from, to, page)
			})
			if errs[p] != nil {
				cancel()
			}
		})
	}
	errs[0] = pageRange(ctx, in, doc, 0, n/parts, page)
	if errs[0] != nil {
		cancel()
	}
	wg.Wait()
	if err := parent.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		// A range stopped because another failed is not the answer.
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

// takeIdle takes up to n idle tokens without waiting; spread gives them
// back.
func (e *Engine) takeIdle(n int) int {
	k := 0
	for ; k < n; k++ {
		select {
		case <-e.idle:
		default:
			return k
		}
	}
	return k
}

func pageRange(ctx context.Context, in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, from, to int,
	page func(ctx context.Context, in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, k int) error) error {
	for k := from; k < to; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := page(ctx, in, doc, k); err != nil {
			return err
		}
	}
	return nil
}
