package pdfium

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"

	"github.com/gen2brain/webp"
	gopdfium "github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/enums"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
)

// Images renders the pages asked (1-based; none: all) at dpi (0: 72) and
// encodes each as format: "png" (default), "jpeg" or "webp", at quality
// 1–100 for JPEG and WebP (0: 90; WebP at 100 is lossless). A page's size in
// pixels is checked against Config.MaxPixels before it is rendered.
func (e *Engine) Images(ctx context.Context, pdf []byte, pages []int, format string, dpi, quality int) ([][]byte, error) {
	if e.procs != nil {
		_, imgs, err := e.procs.one(ctx, request{op: opImages, pages: pages, format: format, dpi: dpi, quality: quality}, pdf)
		if err != nil {
			return nil, err
		}
		// The child's answer is trusted no further than its frame: an image
		// a page asked (or at most MaxPages), within MaxOutput in all.
		var total int64
		for _, img := range imgs {
			total += int64(len(img))
		}
		if (pages != nil && len(imgs) != len(pages)) || len(imgs) > e.cfg.MaxPages || total > e.cfg.MaxOutput {
			return nil, fmt.Errorf("pdfium: a child answered %d images (%d bytes) for %d pages asked", len(imgs), total, len(pages))
		}
		return imgs, nil
	}
	enc, err := encoder(format, quality)
	if err != nil {
		return nil, err
	}
	if dpi == 0 {
		dpi = 72
	}
	if dpi < 1 || dpi > DefaultMaxDPI {
		return nil, badInput("dpi", "dpi must be between 1 and %d, not %d", DefaultMaxDPI, dpi)
	}
	var out [][]byte
	var total int64
	err = e.run(ctx, pdf, func(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT) error {
		idx, err := e.pageList(in, doc, pages)
		if err != nil {
			return err
		}
		out = make([][]byte, 0, len(idx))
		for _, i := range idx {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := e.pageImage(in, doc, i, dpi, enc)
			if err != nil {
				return err
			}
			if total += int64(len(b)); total > e.cfg.MaxOutput {
				return badInput("pages", "the images of these pages are larger than %d bytes: ask for fewer pages or a lower dpi", e.cfg.MaxOutput)
			}
			out = append(out, b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pixelSize is the size in pixels of a page of w×h points at dpi: each side
// rounded up, as pdftoppm does. Multiplied before divided, and a hair taken
// off before rounding up, so that 792 pt at 150 dpi is 1650 pixels, not
// 1651 (go-pdfium's own DPI rendering rounds 1650.0000000002 up).
func pixelSize(w, h float64, dpi int) (int, int) {
	return int(math.Ceil(w*float64(dpi)/72 - 1e-6)), int(math.Ceil(h*float64(dpi)/72 - 1e-6))
}

func (e *Engine) pageImage(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, i, dpi int, enc func(*bytes.Buffer, image.Image) error) ([]byte, error) {
	page := pageByIndex(doc, i)
	// Sized before rendering: the bitmap is allocated from the size alone.
	size, err := in.GetPageSize(&requests.GetPageSize{Page: page})
	if err != nil {
		return nil, fail(err)
	}
	if !(size.Width > 0 && size.Height > 0) { // also NaN
		return nil, badInput("file", "page %d has no size", i+1)
	}
	// In float first: a huge MediaBox overflows int.
	if px := size.Width * size.Height * float64(dpi) * float64(dpi) / (72 * 72); px > float64(e.cfg.MaxPixels) {
		return nil, badInput("dpi", "page %d is %.0f×%.0f points: at %d dpi it would be %.0f megapixels, more than the %d allowed; ask for a lower dpi",
			i+1, size.Width, size.Height, dpi, px/1e6, e.cfg.MaxPixels/1_000_000)
	}
	w, h := pixelSize(size.Width, size.Height, dpi)
	r, err := in.RenderPageInPixels(&requests.RenderPageInPixels{
		Page:        page,
		Width:       max(w, 1),
		Height:      max(h, 1),
		RenderFlags: enums.FPDF_RENDER_FLAG_ANNOT,
		// Form fields drawn as a viewer (and pdftoppm) shows them.
		RenderForm: true,
		Document:   &doc,
	})
	if err != nil {
		return nil, fail(err)
	}
	// The pixels are in the instance's memory until Cleanup: encode first.
	defer r.Cleanup()
	img, ok := r.Result.RenderedImage.(*image.RGBA)
	if !ok {
		return nil, fail(fmt.Errorf("pdfium: rendered a %T, not RGBA", r.Result.RenderedImage))
	}
	if r.Result.HasTransparency {
		onWhite(img)
	}
	var buf bytes.Buffer
	if err := enc(&buf, img); err != nil {
		return nil, fmt.Errorf("pdfium: encode page %d: %w", i+1, err)
	}
	return buf.Bytes(), nil
}

// onWhite lays a page that has transparency on white paper, as viewers and
// pdftoppm show it: PDFium leaves it on transparent black, which JPEG would
// show black. PDFium's pixels are not premultiplied.
func onWhite(img *image.RGBA) {
	p := img.Pix
	for o := 0; o+3 < len(p); o += 4 {
		a := uint32(p[o+3])
		if a == 255 {
			continue
		}
		for c := range 3 {
			p[o+c] = uint8((uint32(p[o+c])*a + 255*(255-a)) / 255)
		}
		p[o+3] = 255
	}
}

// encoder checks format and quality and returns the encoder for them.
func encoder(format string, quality int) (func(*bytes.Buffer, image.Image) error, error) {
	if quality < 0 || quality > 100 {
		return nil, badInput("quality", "quality must be between 1 and 100, not %d", quality)
	}
	if quality == 0 {
		quality = defaultJPEGQuality
	}
	switch format {
	case "", "png":
		// BestSpeed: a page is mostly flat colour, which the fastest level
		// already compresses well; the default level costs several times
		// the time for a few percent (bench_test.go).
		pe := png.Encoder{CompressionLevel: png.BestSpeed}
		return func(b *bytes.Buffer, img image.Image) error { return pe.Encode(b, img) }, nil
	case "jpeg", "jpg":
		return func(b *bytes.Buffer, img image.Image) error {
			return jpeg.Encode(b, img, &jpeg.Options{Quality: quality})
		}, nil
	case "webp":
		return func(b *bytes.Buffer, img image.Image) error {
			return webp.Encode(b, img, webp.Options{Quality: quality, Lossless: quality == 100})
		}, nil
	}
	return nil, badInput("format", "format must be png, jpeg or webp, not %q", format)
}
