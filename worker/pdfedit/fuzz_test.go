package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/limits/limitstest"
	"github.com/docrender/docrender/proto/jobspb"
)

// FuzzMerge: any bytes uploaded to a merge yield a PDF or a BadInputError
// naming the file, never a panic.
func FuzzMerge(f *testing.F) {
	good := rawPDF("F", 2, 1)
	for _, seed := range [][]byte{good, good[:len(good)/2], outlinedPDF("O", 3), []byte("%PDF-1.7\n%%EOF"), []byte("%PDF-")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out bytes.Buffer
		_, err := Merge(ctx, []Input{{Name: "in.pdf", R: bytes.NewReader(data)}, {Name: "good.pdf", R: bytes.NewReader(good)}}, &out)
		var bad *BadInputError
		if err != nil && !errors.As(err, &bad) && ctx.Err() == nil {
			t.Fatalf("%q: %v is neither a result nor a bad input", data, err)
		}
	})
}

// FuzzWatermarkImage: any bytes given as a watermark image are stamped or
// refused as an invalid watermark, never a panic or an allocation the
// header asked for.
func FuzzWatermarkImage(f *testing.F) {
	in := rawPDF("W", 1, 0)
	for _, seed := range [][]byte{limitstest.BombPNG(10_000_000, 10_000_000), limitstest.BombPNG(4, 4), limitstest.BombJPEG(8, 8), []byte("\x89PNG\r\n\x1a\n")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, img []byte) {
		wm := &jobspb.Watermark{ImagePng: img, Opacity: 0.3, Rotation: 45, Position: "center", Pages: "all", Color: "#888888", FontSize: 48}
		var out bytes.Buffer
		err := Watermark(context.Background(), bytes.NewReader(in), &out, wm)
		var bad *BadInputError
		if err != nil && !errors.Is(err, ErrInvalidWatermark) && !errors.As(err, &bad) {
			t.Fatalf("%q: %v", img, err)
		}
	})
}

// FuzzInspect: any bytes given to POST /pdf/inspect yield a report or a
// BadInputError naming the file, never a panic.
func FuzzInspect(f *testing.F) {
	good := rawPDF("I", 2, 1)
	for _, seed := range [][]byte{good, good[:len(good)/2], outlinedPDF("O", 3), []byte("%PDF-1.7\n%%EOF"), []byte("%PDF-")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := Inspect(ctx, "in.pdf", bytes.NewReader(data))
		var bad *BadInputError
		if err != nil && !errors.As(err, &bad) && ctx.Err() == nil {
			t.Fatalf("%q: %v is neither a report nor a bad input", data, err)
		}
		if err == nil && len(r.PageSizes) > maxPageSizes {
			t.Fatalf("%d page sizes", len(r.PageSizes))
		}
	})
}
