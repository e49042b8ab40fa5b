// Package render turns a RenderJob into a PDF: it loads the uploaded files
// from the blob store, serves them to an isolated tab through the egress
// proxy, prints the page with Chromium and stores the result.
package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

// ErrTimeout is a render that exceeded its time: the page's fault, not retried.
var ErrTimeout = errors.New("render: timed out")

// ErrPage is a page that could not be loaded or printed.
var ErrPage = errors.New("render: page failed")

// PageHook runs on the loaded page before printing (inline QR codes, say).
type PageHook func(ctx context.Context, page *rod.Page) error

// Renderer renders HTML bundles.
type Renderer struct {
	Blobs blob.Store
	Pool  *browser.Pool
	Proxy *egress.Proxy
	Hooks []PageHook
}

// LoadBundle reads a job's uploaded files.
func LoadBundle(ctx context.Context, blobs blob.Store, prefix string, files []string) (egress.Bundle, error) {
	b := make(egress.Bundle, len(files))
	for _, name := range files {
		rc, _, err := blobs.Get(ctx, prefix+name)
		if err != nil {
			return nil, fmt.Errorf("render: load %s: %w", name, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("render: load %s: %w", name, err)
		}
		b[name] = data
	}
	return b, nil
}

// Render prints the job's entry page to PDF bytes. timeout bounds loading
// and printing together.
func (r *Renderer) Render(ctx context.Context, b egress.Bundle, entry string, page *jobspb.Page, timeout time.Duration) ([]byte, error) {
	base, unregister := r.Proxy.Register(b)
	defer unregister()
	target := base + escapePath(entry)

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out []byte
	err := r.Pool.Tab(ctx, func(p *rod.Page) error {
		if err := p.Navigate(target); err != nil {
			return fmt.Errorf("%w: navigate: %v", ErrPage, err)
		}
		if err := p.WaitLoad(); err != nil {
			return fmt.Errorf("%w: load: %v", ErrPage, err)
		}
		// Web fonts load lazily; print only once they are in.
		if _, err := p.Eval(`() => document.fonts.ready.then(() => true)`); err != nil {
			return fmt.Errorf("%w: fonts: %v", ErrPage, err)
		}
		for _, h := range r.Hooks {
			if err := h(ctx, p); err != nil {
				return err
			}
		}
		req := printRequest(page)
		s, err := p.PDF(req)
		if err != nil {
			return fmt.Errorf("%w: print: %v", ErrPage, err)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, s); err != nil {
			return fmt.Errorf("%w: read pdf: %v", ErrPage, err)
		}
		out = buf.Bytes()
		return nil
	})
	if err != nil {
		if errors.Is(err, browser.ErrBrowserGone) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w after %s", ErrTimeout, timeout)
		}
		return nil, err
	}
	return out, nil
}

func printRequest(pg *jobspb.Page) *proto.PagePrintToPDF {
	f := func(v float64) *float64 { return &v }
	return &proto.PagePrintToPDF{
		Landscape:         pg.Landscape,
		PrintBackground:   true,
		PaperWidth:        f(pg.WidthIn),
		PaperHeight:       f(pg.HeightIn),
		MarginTop:         f(pg.MarginTopIn),
		MarginRight:       f(pg.MarginRightIn),
		MarginBottom:      f(pg.MarginBottomIn),
		MarginLeft:        f(pg.MarginLeftIn),
		PreferCSSPageSize: pg.PreferCssPageSize,
	}
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
