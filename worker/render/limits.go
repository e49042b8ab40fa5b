package render

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"

	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/pdfedit"
)

// Bounds on what one render makes (DESIGN §10): the pages of the account's
// plan (the job's MaxPages), and the bytes of the printed PDF, which the
// worker holds in memory (Renderer.MaxOutputBytes). A document past either
// is a *LimitError, never a PDF.

// LimitError is a document past a bound on its pages or its size.
type LimitError struct {
	Message string
}

func (e *LimitError) Error() string { return "render: too large: " + e.Message }

func tooManyPages(max int) *LimitError {
	return &LimitError{Message: fmt.Sprintf("The document has more than %d pages, the most this account's plan renders.", max)}
}

func tooManyBytes(max int64) *LimitError {
	return &LimitError{Message: fmt.Sprintf("The PDF is larger than %s, the most this service renders.", sizeText(max))}
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// estimateJS guesses the printed page count from the page's layout on the
// screen: its height, reflowed from the window's width to the printed
// content's (text keeps its area), over the printed content's height; all
// in CSS pixels.
const estimateJS = `(contentWidth, contentHeight) => {
	const root = document.documentElement;
	const width = Math.max(innerWidth, 1), height = Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0);
	return Math.ceil(height * Math.max(width / contentWidth, 1) / contentHeight);
}`

// probeShare is how close to the bound the estimate must come for the page
// count to be checked before printing: the estimate may be a few times off
// (print styles, page breaks), and the check costs a layout for print.
const probeShare = 4

// checkPages refuses, before printing, a page that would print to more than
// max pages: one print of page max+1, which Chromium refuses, after laying
// the document out for print but before painting it, when the document has
// no such page. A page whose estimate is far below max is not checked here;
// the printed PDF's count is (checkPrinted) — a check that costs a layout
// is spent only where the estimate says it could fail.
func checkPages(ctx context.Context, p *rod.Page, req printParams, max int) error {
	if max <= 0 || req.PageRanges != "" && rangePages(req.PageRanges) <= max {
		// pageRanges asks for few enough pages: the PDF has no more.
		return nil
	}
	estimate, err := estimatePages(p, req)
	if err != nil {
		return err
	}
	if estimate*probeShare < float64(max) {
		return nil
	}
	probe := req
	probe.PageRanges = strconv.Itoa(max + 1)
	probe.DisplayHeaderFooter, probe.GenerateTaggedPDF, probe.GenerateDocumentOutline = false, false, false
	_, err = printOnce(p, probe, nil)
	var cdpErr *cdp.Error
	switch {
	case err == nil:
		return tooManyPages(max)
	case errors.As(err, &cdpErr) && strings.Contains(cdpErr.Message, "exceeds page count"):
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%w: count pages: %v", ErrPage, err)
}

// estimatePages is estimateJS for the page printed as req says; 0 for
// margins that leave no room (Chromium refuses those itself).
func estimatePages(p *rod.Page, req printParams) (float64, error) {
	w, h := req.PaperWidth, req.PaperHeight
	if req.Landscape {
		w, h = h, w
	}
	scale := max1(req.Scale)
	cw := (w - req.MarginLeft - req.MarginRight) * 96 / scale
	ch := (h - req.MarginTop - req.MarginBottom) * 96 / scale
	if cw <= 0 || ch <= 0 {
		return 0, nil
	}
	var estimate float64
	if err := browser.Evaluate(p, estimateJS, &estimate, cw, ch); err != nil {
		return 0, fmt.Errorf("%w: estimate pages: %v", ErrPage, err)
	}
	return estimate, nil
}

func max1(scale float64) float64 {
	if scale <= 0 {
		return 1
	}
	return scale
}

// checkPrinted is the bound on a printed PDF's pages, exact: what
// checkPages did not look at (print styles the estimate missed) ends here.
func checkPrinted(ctx context.Context, pdf []byte, max int) error {
	if max <= 0 {
		return nil
	}
	n, err := pdfedit.PageCount(ctx, pdf)
	if err != nil {
		return fmt.Errorf("%w: count pages: %v", ErrPage, err)
	}
	if n > max {
		return tooManyPages(max)
	}
	return nil
}
