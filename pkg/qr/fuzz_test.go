package qr

import (
	"bytes"
	"errors"
	"image/png"
	"testing"

	"github.com/docrender/docrender/pkg/invalid"
)

// FuzzRequest: any body of POST /pdf/qrcode yields an image of the asked
// size or a 4xx, never a panic or a 500.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{`{"data":"x"}`, `{"data":"https://example.com","size":300,"margin":0,"errorCorrectionLevel":"H"}`,
		`{"data":"x","darkColor":"#123","lightColor":"#abcdef","format":"dataUrl"}`, `{"data":"` + string(bytes.Repeat([]byte("9"), 3000)) + `"}`,
		`{"data":"x","size":2048}`, `{"data":""}`, `[]`, `{"data":"\u00e9\u4e2d"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, format, err := ParseRequest(body)
		if err != nil {
			badRequest(t, body, err)
			return
		}
		out, ctype, err := Render(o, format)
		if err != nil {
			badRequest(t, body, err)
			return
		}
		if ctype != "image/png" {
			return
		}
		img, err := png.Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("%q: not a PNG: %v", body, err)
		}
		if b := img.Bounds(); b.Dx() != o.Size || b.Dy() != o.Size {
			t.Fatalf("%q: %dx%d, want %d", body, b.Dx(), b.Dy(), o.Size)
		}
	})
}

func badRequest(t *testing.T, body []byte, err error) {
	t.Helper()
	var bad *invalid.Error
	if !errors.As(err, &bad) {
		t.Fatalf("%q: %v is not the input's fault (a 4xx)", body, err)
	}
}
