package server

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/limits/limitstest"
)

// jpegAfterMetadata puts n bytes of APP1 segments before a JPEG's frame
// header, as cameras' EXIF does.
func jpegAfterMetadata(n int, w, h uint16) []byte {
	b := []byte{0xFF, 0xD8}
	for n > 0 {
		seg := min(n, 65533)
		b = append(b, 0xFF, 0xE1, byte((seg+2)>>8), byte(seg+2))
		b = append(b, make([]byte, seg)...)
		n -= seg
	}
	return append(b, limitstest.BombJPEG(w, h)[2:]...)
}

func TestBoundImage(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		refused bool
	}{
		{"html", []byte("<!doctype html><p>hello</p>"), false},
		{"empty", nil, false},
		{"png bomb", limitstest.BombPNG(10_000_000, 10_000_000), true},
		{"png ordinary", limitstest.BombPNG(1000, 800), false},
		{"gif bomb", limitstest.BombGIF(65535, 65535), true},
		{"webp bomb", limitstest.BombWebP(16000, 16000), true},
		{"jpeg bomb", limitstest.BombJPEG(65535, 65535), true},
		{"jpeg bomb behind 150 KiB of metadata", jpegAfterMetadata(150<<10, 65535, 65535), true},
		{"jpeg ordinary behind metadata", jpegAfterMetadata(70<<10, 4000, 3000), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := boundImage("f", bytes.NewReader(tc.data))
			if tc.refused {
				var ae *apierr.Error
				if !errors.As(err, &ae) || ae.Status != 400 {
					t.Fatalf("err %v, want a 400", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("read back %d bytes, want the %d sent", len(got), len(tc.data))
			}
		})
	}
}
