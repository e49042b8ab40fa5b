package pdfedit

import (
	"bytes"
	"context"
	"fmt"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// PageCount returns the number of pages of pdf, a PDF this worker made
// (Chromium's print): its page tree's /Count, read without validating the
// rest, which the render report needs and nothing else. A pdfcpu panic is
// an error, as everywhere here.
func PageCount(ctx context.Context, pdf []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("pdfedit: page count: %v", r)
		}
	}()
	pc, err := pdfcpu.ReadWithContext(ctx, bytes.NewReader(pdf), newConf(model.LISTINFO))
	if err != nil {
		return 0, fmt.Errorf("pdfedit: page count: %w", err)
	}
	if err := pc.EnsurePageCount(); err != nil {
		return 0, fmt.Errorf("pdfedit: page count: %w", err)
	}
	return pc.PageCount, nil
}
