package pdfium

import (
	"context"
	"strings"
	"sync/atomic"

	gopdfium "github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
)

// Text returns the plain text of the pages asked (1-based; none: all), in
// the reading order PDFium gives, each page followed by a form feed as
// pdftotext writes it.
// MaxOutput bounds the text in bytes, the same whichever way it was read
// (one instance or several, in-process or in children): each page is
// checked on PDFium's character count before it is copied, and the whole
// here.
func (e *Engine) Text(ctx context.Context, pdf []byte, pages []int) (s string, err error) {
	if e.procs != nil {
		s, err = e.procs.text(ctx, pdf, pages)
	} else {
		s, err = e.textPart(ctx, pdf, pages, 0, 0)
	}
	if err == nil && int64(len(s)) > e.cfg.MaxOutput {
		return "", badInput("pages", "the text of these pages is larger than %d bytes: ask for fewer pages", e.cfg.MaxOutput)
	}
	return s, err
}

// textPart is Text of a part of the pages asked: with parts > 0, the pages
// are cut in contiguous ranges as spread cuts them (at most one per
// minSpreadPages pages, so fewer than parts for a short document) and only
// range part is read, "" when there is no such range. A child reads one
// part of a Text its parent spread over several children (procs.text).
func (e *Engine) textPart(ctx context.Context, pdf []byte, pages []int, part, parts int) (string, error) {
	var texts []string
	err := e.run(ctx, pdf, func(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT) error {
		idx, err := e.pageList(in, doc, pages)
		if err != nil {
			return err
		}
		if parts > 0 {
			n := len(idx)
			if cut := min(parts, max(1, n/minSpreadPages)); part < cut {
				idx = idx[part*n/cut : (part+1)*n/cut]
			} else {
				idx = nil
			}
		}
		texts = make([]string, len(idx))
		var used atomic.Int64 // bytes of text so far, on all instances
		return e.spread(ctx, pdf, in, doc, len(idx), func(_ context.Context, in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, k int) error {
			t, err := e.pageText(in, doc, idx[k], e.cfg.MaxOutput-used.Load())
			if err != nil {
				return err
			}
			used.Add(int64(len(t)) + 1)
			texts[k] = t
			return nil
		})
	})
	if err != nil {
		return "", err
	}
	var out strings.Builder
	n := 0
	for _, t := range texts {
		n += len(t) + 1
	}
	out.Grow(n)
	for _, t := range texts {
		out.WriteString(t)
		out.WriteByte('\f')
	}
	return out.String(), nil
}

// pageText is one page's text, lines ended by "\n". room bounds it in
// bytes, checked on PDFium's character count before the text is copied.
func (e *Engine) pageText(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, i int, room int64) (string, error) {
	tp, err := in.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: pageByIndex(doc, i)})
	if err != nil {
		return "", fail(err)
	}
	defer in.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	n, err := in.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil {
		return "", fail(err)
	}
	if n.Count <= 0 {
		return "", nil
	}
	if int64(n.Count) > room {
		return "", badInput("pages", "the text of these pages is larger than %d bytes: ask for fewer pages", e.cfg.MaxOutput)
	}
	// One call for the whole page: per-character calls cost a wasm call each.
	t, err := in.FPDFText_GetText(&requests.FPDFText_GetText{TextPage: tp.TextPage, Count: n.Count})
	if err != nil {
		return "", fail(err)
	}
	return cleanText(t.Text), nil
}

// cleanText makes PDFium's text plain: its "\r\n" line ends become "\n",
// the control characters it keeps from the content (NUL, 0x02 for a hyphen
// at a line end, …) are dropped, and the page ends with one "\n".
func cleanText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r':
			return '\n'
		case r == 0x02:
			return '-' // PDFium's mark for a hyphen that ends a line
		case r < 0x20 || r == 0x7f || r == 0xfffe || r == 0xffff:
			return -1
		}
		return r
	}, s)
	s = strings.TrimRight(s, " \n")
	if s == "" {
		return ""
	}
	return s + "\n"
}
