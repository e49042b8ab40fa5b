package render

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/pdfedit"
)

// printParams are Page.printToPDF's parameters. rod's proto.PagePrintToPDF
// leaves out every false boolean (omitempty), and Chromium's default for
// a tagged PDF is "the embedder's choice" (untagged in the headless shell,
// measured): booleans are sent as the job says, always.
type printParams struct {
	Landscape               bool                             `json:"landscape"`
	DisplayHeaderFooter     bool                             `json:"displayHeaderFooter"`
	PrintBackground         bool                             `json:"printBackground"`
	Scale                   float64                          `json:"scale"`
	PaperWidth              float64                          `json:"paperWidth"`
	PaperHeight             float64                          `json:"paperHeight"`
	MarginTop               float64                          `json:"marginTop"`
	MarginBottom            float64                          `json:"marginBottom"`
	MarginLeft              float64                          `json:"marginLeft"`
	MarginRight             float64                          `json:"marginRight"`
	PageRanges              string                           `json:"pageRanges,omitempty"`
	HeaderTemplate          string                           `json:"headerTemplate,omitempty"`
	FooterTemplate          string                           `json:"footerTemplate,omitempty"`
	PreferCSSPageSize       bool                             `json:"preferCSSPageSize"`
	TransferMode            proto.PagePrintToPDFTransferMode `json:"transferMode"`
	GenerateTaggedPDF       bool                             `json:"generateTaggedPDF"`
	GenerateDocumentOutline bool                             `json:"generateDocumentOutline"`

	// maxBytes bounds the PDF read back (DESIGN §10); 0: unbounded.
	maxBytes int64
}

// printRequest is how the job's page is printed: rj.Page's paper and
// margins, rj.Print's options (DESIGN §6), m's header and footer.
func printRequest(pg *jobspb.Page, pr *jobspb.Print, m margins) printParams {
	scale := pr.GetScale()
	if scale == 0 {
		scale = 1
	}
	return printParams{
		Landscape:               pg.GetLandscape(),
		DisplayHeaderFooter:     m.on(),
		PrintBackground:         !pr.GetNoBackground(),
		Scale:                   scale,
		PaperWidth:              pg.GetWidthIn(),
		PaperHeight:             pg.GetHeightIn(),
		MarginTop:               pg.GetMarginTopIn(),
		MarginBottom:            pg.GetMarginBottomIn(),
		MarginLeft:              pg.GetMarginLeftIn(),
		MarginRight:             pg.GetMarginRightIn(),
		PageRanges:              pr.GetPageRanges(),
		HeaderTemplate:          m.header,
		FooterTemplate:          m.footer,
		PreferCSSPageSize:       pg.GetPreferCssPageSize(),
		TransferMode:            proto.PagePrintToPDFTransferModeReturnAsStream,
		GenerateTaggedPDF:       !pr.GetUntagged(),
		GenerateDocumentOutline: pr.GetOutline(),
	}
}

// printPDF prints the page as req says, the PDF streamed in chunks (a
// large one would not fit one CDP message). Pages that req.PageRanges asks
// for but the document lacks are an *InputError. printed, if not nil, is
// called once the page is printed, before the PDF is read.
func printPDF(ctx context.Context, p *rod.Page, req printParams, printed func()) ([]byte, error) {
	pdf, err := printOnce(p, req, printed)
	var cdpErr *cdp.Error
	var tooLarge *LimitError
	switch {
	case errors.As(err, &tooLarge):
		return nil, err
	case req.PageRanges != "" && errors.As(err, &cdpErr) && strings.Contains(cdpErr.Message, "exceeds page count"):
		// Chromium refuses ranges that select no page at all.
		return nil, beyondDocument(ctx, p, req)
	case err != nil:
		return nil, fmt.Errorf("%w: print: %v", ErrPage, err)
	case req.PageRanges == "":
		return pdf, nil
	}
	// Chromium quietly drops the pages of a range beyond the document: a
	// PDF with fewer pages than the ranges select has some of them.
	got, err := pdfedit.PageCount(ctx, pdf)
	if err != nil {
		return nil, fmt.Errorf("%w: count pages: %v", ErrPage, err)
	}
	if got < rangePages(req.PageRanges) {
		return nil, beyondDocument(ctx, p, req)
	}
	return pdf, nil
}

func printOnce(p *rod.Page, req printParams, printed func()) ([]byte, error) {
	raw, err := p.Call(p.GetContext(), string(p.SessionID), "Page.printToPDF", req)
	if err != nil {
		return nil, err
	}
	if printed != nil {
		printed()
	}
	var res proto.PagePrintToPDFResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	// The browser keeps a stream until it is closed: closed on the side,
	// not waited for, whatever becomes of the job's context.
	defer func() {
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(p.GetContext()), 5*time.Second)
			defer cancel()
			_ = proto.IOClose{Handle: res.Stream}.Call(p.Context(ctx))
		}()
	}()
	pdf, err := readStream(p, res.Stream, streamChunk, req.maxBytes)
	var tooLarge *LimitError
	if errors.As(err, &tooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read pdf: %w", err)
	}
	return pdf, nil
}

// streamChunk is how much of a stream one IO.read asks for: a few MiB of
// base64 make one CDP message of a size rod and Chromium handle well.
const streamChunk = 4 << 20

// readStream reads a browser stream to its end, a chunk of up to size
// bytes per IO.read; past max bytes (max > 0) it stops with a *LimitError,
// before holding more than max and a chunk. rod's StreamReader calls IO.read on every Read of its
// caller (io.ReadAll makes a dozen for a small PDF, each a round trip and
// JSON both ways).
func readStream(p *rod.Page, h proto.IOStreamHandle, size int, max int64) ([]byte, error) {
	var out []byte
	for {
		res, err := proto.IORead{Handle: h, Size: &size}.Call(p)
		if err != nil {
			return nil, err
		}
		if !res.Base64Encoded {
			out = append(out, res.Data...)
		} else if out, err = base64.StdEncoding.AppendDecode(out, []byte(res.Data)); err != nil {
			return nil, fmt.Errorf("stream chunk: %w", err)
		}
		if max > 0 && int64(len(out)) > max {
			return nil, tooManyBytes(max)
		}
		if res.EOF {
			return out, nil
		}
	}
}

// beyondDocument is the *InputError of ranges beyond the document, with
// the document's page count: the page is printed whole to learn it (on
// this error's path only).
func beyondDocument(ctx context.Context, p *rod.Page, req printParams) error {
	ranges := req.PageRanges
	req.PageRanges = ""
	msg := fmt.Sprintf("pageRanges %q is beyond the document.", ranges)
	if pdf, err := printOnce(p, req, nil); err == nil {
		if n, err := pdfedit.PageCount(ctx, pdf); err == nil {
			msg = fmt.Sprintf("pageRanges %q is beyond the document's %d %s.", ranges, n, plural(n, "page", "pages"))
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &InputError{Message: msg}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// rangePages is the number of distinct pages ranges selects ("1-3,5,2" is
// 4), ranges as pdfopts checked them ("1-3,5": pages from 1, ranges that
// end after they start).
func rangePages(ranges string) int {
	type span struct{ from, to int }
	var spans []span
	for _, part := range strings.Split(ranges, ",") {
		a, b, isRange := strings.Cut(strings.TrimSpace(part), "-")
		from, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			continue
		}
		to := from
		if isRange {
			if to, err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
				continue
			}
		}
		spans = append(spans, span{from, to})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	n, last := 0, 0 // last: the highest page counted so far
	for _, s := range spans {
		from := max(s.from, last+1)
		if s.to >= from {
			n += s.to - from + 1
			last = s.to
		}
	}
	return n
}

// retirePages is the shortest print after which a tab's renderer is
// replaced (browser.Tab.Retire) rather than the tab reused. Measured
// (bench/cmd/longdoc, docs/benchmarks.md "Session 18"): after a 1,145-page
// ledger printed in one piece, the next job, the same ledger in slices
// with one slice in that tab, took 14.4 s against 11.2 s on a fresh
// service; with the tab retired, 10.9 s. A fresh context costs ~0.1 s of
// the pool's time after the job, not the job's: a print of a few hundred
// pages takes seconds.
const retirePages = 300

// retireAfter retires t after the job when it printed pages pages (at
// least retirePages) of one laid-out document.
func retireAfter(t *browser.Tab, pages int) {
	if pages >= retirePages {
		t.Retire()
	}
}

// retireLong is retireAfter for pdf, printed in t.
func retireLong(t *browser.Tab, pdf []byte) {
	if n, ok := pdfedit.QuickPageCount(pdf); ok {
		retireAfter(t, n)
	}
}
