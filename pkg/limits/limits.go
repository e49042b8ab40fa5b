// Package limits holds the bounds docrender puts on what clients send, in
// one place, and the checks that apply them before anything is decoded or
// allocated (DESIGN §5). docs/security.md lists them with their reasons.
//
// Sizes of whole requests are configuration (DOCRENDER_MAX_UPLOAD_BYTES);
// what is here bounds what a small input can make us allocate: an image
// header that declares billions of pixels, a PDF that declares a huge page
// tree.
package limits

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	// Formats whose headers Image reads.
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/webp"
)

const (
	// ImagePixels bounds one uploaded image (width × height): 100 MP is
	// 400 MB decoded as RGBA, above any camera's photo and as much as one
	// renderer should spend on one picture.
	ImagePixels = 100_000_000
	// ImageSide bounds either side of an image, in pixels.
	ImageSide = 32_768

	// WatermarkImageBytes bounds the PNG of a watermark: every render of its
	// request holds it in memory, and a worker reads no more of the stored
	// image (jobs name it by blob key) than this.
	WatermarkImageBytes = 512 << 10
	// WatermarkImagePixels bounds the watermark PNG's width × height; it is
	// decoded in full on every page stamp.
	WatermarkImagePixels = 4096 * 4096

	// MergePages bounds the pages of one merge, all inputs together.
	MergePages = 10_000
)

// ErrNotImage is returned by Image for bytes of no format it reads.
var ErrNotImage = errors.New("limits: not an image of a known format")

// TooLargeError says which bound an input exceeds.
type TooLargeError struct {
	// What is exceeded, in words fit for a client ("4000000x4000000 pixels").
	What string
	// Limit is the bound, in the same words.
	Limit string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s exceeds the limit of %s", e.What, e.Limit)
}

// Image reads only the header of data (PNG, JPEG, GIF or WebP) and checks
// the dimensions it declares against maxPixels and ImageSide. It returns the
// format's name; ErrNotImage for other bytes; a *TooLargeError when over.
func Image(data []byte, maxPixels int64) (string, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if errors.Is(err, image.ErrFormat) {
		return "", ErrNotImage
	}
	if err != nil {
		return "", fmt.Errorf("limits: unreadable image header: %w", err)
	}
	return format, Dimensions(cfg.Width, cfg.Height, maxPixels)
}

// Dimensions checks width × height against maxPixels and ImageSide.
func Dimensions(width, height int, maxPixels int64) error {
	if width <= 0 || height <= 0 {
		return fmt.Errorf("limits: image of %dx%d pixels", width, height)
	}
	if width > ImageSide || height > ImageSide || int64(width)*int64(height) > maxPixels {
		return &TooLargeError{
			What:  fmt.Sprintf("an image of %dx%d pixels", width, height),
			Limit: fmt.Sprintf("%d pixels (%d per side)", maxPixels, ImageSide),
		}
	}
	return nil
}
