package render

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

// Shot is a screenshot's result.
type Shot struct {
	// Image is encoded as the job asked (png, jpeg or webp).
	Image []byte
	// Width and Height are the image's pixels.
	Width, Height int
	// Report is what happened while the page loaded (DESIGN §6).
	Report *jobspb.Report
}

// Screenshot loads sj's page (its source: bundle b's entry, or a URL) as
// Render loads a page to print, in a view of sj's width and height, waits
// as it says, and captures the view, the whole page or a clip of it
// (POST /pdf/screenshot, DESIGN §11). timeout bounds loading, waiting and
// capturing together. What only the loaded page shows is too large (a
// full page or a clip past the bounds of pdfopts) is an *invalid.Error
// naming the option.
func (r *Renderer) Screenshot(ctx context.Context, b egress.Bundle, sj *jobspb.ScreenshotJob, timeout time.Duration) (Shot, error) {
	rj := sj.GetSource()
	entry, pr, fetch := rj.GetEntry(), rj.GetPrint(), rj.GetUrl()
	html, static := withoutScripts(b, entry)
	// As in RenderWith: the client's script runs on the page's own origin.
	static = static && pr.GetWaitForExpression() == "" && fetch == nil
	var media string
	if sj.GetMediaPrint() {
		media = "print"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	prog := &progress{start: time.Now()}
	hooked := &jobspb.Report{}
	var shot Shot
	var report *collector
	// No warm key: a screenshot's tab changes its view, and its document
	// is never filled in place.
	err := r.Pool.TabFor(ctx, "", func(t *browser.Tab) error {
		prog.mark(stepTab)
		spec := loadSpec{bundle: b, entry: entry, html: html, static: static, fetch: fetch, print: pr, media: media,
			selectors: r.selectors(), hooked: hooked,
			before: func(t *browser.Tab) error {
				return t.Show(int(sj.GetWidth()), int(sj.GetHeight()), sj.GetOmitBackground())
			}}
		return r.load(ctx, t, spec, prog, func(_ egress.Site, c *collector, _ []bool) error {
			prog.mark(stepHooks)
			var err error
			if shot, err = capture(t.Page(), sj); err != nil {
				return err
			}
			if r.MaxOutputBytes > 0 && int64(len(shot.Image)) > r.MaxOutputBytes {
				return &LimitError{Message: fmt.Sprintf("The image is larger than %s, the most this service makes.", sizeText(r.MaxOutputBytes))}
			}
			prog.mark(stepPrint)
			c.finish(ctx, t.Scripted())
			report = c
			return nil
		})
	})
	if err := prog.end(ctx, err, fetch != nil, static, timeout); err != nil {
		return Shot{}, err
	}
	o, err := report.output(shot.Image, time.Since(prog.start), pr, hooked)
	shot.Report = o.Report
	return shot, err
}

// capture takes the image sj asks for of the loaded page p: the view, the
// whole page (captured beyond the view, which keeps the page's layout,
// where growing the view to the page's height would change what a page
// sized to its window shows) or the clip. The page's size is checked
// first: a page of a million pixels is the client's to clip, not an image
// that fills the worker's memory.
func capture(p *rod.Page, sj *jobspb.ScreenshotJob) (Shot, error) {
	lm, err := proto.PageGetLayoutMetrics{}.Call(p)
	if err != nil || lm.CSSContentSize == nil {
		return Shot{}, fmt.Errorf("%w: layout metrics: %v", ErrPage, err)
	}
	pageW, pageH := math.Ceil(lm.CSSContentSize.Width), math.Ceil(lm.CSSContentSize.Height)
	area := &proto.PageViewport{X: 0, Y: 0, Width: float64(sj.GetWidth()), Height: float64(sj.GetHeight()), Scale: 1}
	switch c := sj.GetClip(); {
	case c != nil:
		if c.X+c.Width > pageW || c.Y+c.Height > pageH {
			return Shot{}, invalid.Field("clip", fmt.Sprintf("the rectangle from (%g, %g) to (%g, %g) lies outside the page, %g × %g pixels",
				c.X, c.Y, c.X+c.Width, c.Y+c.Height, pageW, pageH))
		}
		area = &proto.PageViewport{X: c.X, Y: c.Y, Width: c.Width, Height: c.Height, Scale: 1}
	case sj.GetFullPage():
		if pageH > pdfopts.MaxShotHeight || pageW > pdfopts.MaxShotWidth || pageW*pageH > pdfopts.MaxShotPixels {
			return Shot{}, invalid.Field("fullPage", fmt.Sprintf("the page is %g × %g pixels; a full page may be at most %d × %d, %d pixels in all",
				pageW, pageH, pdfopts.MaxShotWidth, pdfopts.MaxShotHeight, pdfopts.MaxShotPixels)).
				WithHint("Capture a part of it with clip, or the view alone without fullPage.")
		}
		area.Width, area.Height = pageW, pageH
	}
	req := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormat(sj.GetFormat()), Clip: area, CaptureBeyondViewport: true}
	if q := int(sj.GetQuality()); q > 0 {
		req.Quality = &q
	}
	res, err := req.Call(p)
	if err != nil {
		return Shot{}, fmt.Errorf("%w: capture: %v", ErrPage, err)
	}
	return Shot{Image: res.Data, Width: int(area.Width), Height: int(area.Height)}, nil
}
