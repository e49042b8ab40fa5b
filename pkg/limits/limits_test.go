package limits_test

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/docrender/docrender/pkg/limits"
	"github.com/docrender/docrender/pkg/limits/limitstest"
)

func smallPNG(t *testing.T) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 1, color.Black)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestImage(t *testing.T) {
	tests := []struct {
		name       string
		data       []byte
		max        int64
		wantFormat string
		wantErr    error // nil, limits.ErrNotImage, or a *limits.TooLargeError (matched by type)
		tooLarge   bool
	}{
		{"small png", smallPNG(t), limits.ImagePixels, "png", nil, false},
		{"png bomb 10M x 10M", limitstest.BombPNG(10_000_000, 10_000_000), limits.ImagePixels, "png", nil, true},
		{"png within pixels but one side too long", limitstest.BombPNG(40_000, 10), limits.ImagePixels, "png", nil, true},
		{"png over the watermark bound", limitstest.BombPNG(5000, 5000), limits.WatermarkImagePixels, "png", nil, true},
		{"png at the watermark bound", limitstest.BombPNG(4096, 4096), limits.WatermarkImagePixels, "png", nil, false},
		{"jpeg bomb", limitstest.BombJPEG(65535, 65535), limits.ImagePixels, "jpeg", nil, true},
		{"jpeg ordinary", limitstest.BombJPEG(4000, 3000), limits.ImagePixels, "jpeg", nil, false},
		{"gif bomb", limitstest.BombGIF(65535, 65535), limits.ImagePixels, "gif", nil, true},
		{"webp bomb", limitstest.BombWebP(16_000, 16_000), limits.ImagePixels, "webp", nil, true},
		{"webp ordinary", limitstest.BombWebP(800, 600), limits.ImagePixels, "webp", nil, false},
		{"not an image", []byte("<html>hello</html>"), limits.ImagePixels, "", limits.ErrNotImage, false},
		{"empty", nil, limits.ImagePixels, "", limits.ErrNotImage, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			format, err := limits.Image(tc.data, tc.max)
			var tl *limits.TooLargeError
			switch {
			case tc.tooLarge:
				if !errors.As(err, &tl) {
					t.Fatalf("err %v, want *limits.TooLargeError", err)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("err %v", err)
			}
			if format != tc.wantFormat {
				t.Fatalf("format %q, want %q", format, tc.wantFormat)
			}
		})
	}
}

// A truncated header is an error, never a panic or an allocation.
func TestImageTruncatedHeaders(t *testing.T) {
	for _, data := range [][]byte{limitstest.BombPNG(10, 10)[:20], limitstest.BombJPEG(10, 10)[:24], limitstest.BombGIF(10, 10)[:8], limitstest.BombWebP(10, 10)[:14]} {
		if _, err := limits.Image(data, limits.ImagePixels); err == nil {
			t.Errorf("%q: no error", data)
		}
	}
}

func FuzzImage(f *testing.F) {
	f.Add(limitstest.BombPNG(10_000_000, 10_000_000))
	f.Add(limitstest.BombJPEG(100, 100))
	f.Add(limitstest.BombGIF(1, 1))
	f.Add(limitstest.BombWebP(100, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		format, err := limits.Image(data, limits.WatermarkImagePixels)
		if err == nil && format == "" {
			t.Fatal("no error and no format")
		}
	})
}
