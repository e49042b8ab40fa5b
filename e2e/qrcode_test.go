package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// zbarCodes decodes every QR code zbarimg finds in a PNG (`zbarimg --raw
// -q`, one symbol per line) and returns their texts, sorted. padPx > 0 first
// puts the image on a light canvas with that border: zbar wants the 4-module
// quiet zone of ISO/IEC 18004 and does not find a code touching the image
// edge, so codes asked for with a smaller margin are padded for the check
// (the service still returns exactly what was asked).
func zbarCodes(t testing.TB, pngBytes []byte, padPx int) []string {
	t.Helper()
	if _, err := exec.LookPath("zbarimg"); err != nil {
		t.Skip("zbarimg not installed (apt-get install -y zbar-tools)")
	}
	if padPx > 0 {
		pngBytes = padImage(t, pngBytes, padPx)
	}
	f := filepath.Join(t.TempDir(), "codes.png")
	if err := os.WriteFile(f, pngBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return zbarFile(t, f)
}

// zbarFile runs zbarimg on an image file; no code found gives an empty list.
func zbarFile(t testing.TB, path string) []string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("zbarimg", "--raw", "-q", "--nodbus", path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 4 {
		return nil // zbarimg: no symbols found
	}
	if err != nil {
		t.Fatalf("zbarimg %s: %v %s", path, err, stderr.Bytes())
	}
	codes := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	sort.Strings(codes)
	return codes
}

func padImage(t testing.TB, pngBytes []byte, pad int) []byte {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(pngBytes))
	if err != nil {
		t.Fatalf("png.Decode: %v", err)
	}
	light := color.Color(color.White)
	if p, ok := img.(*image.Paletted); ok {
		light = p.Palette[0] // with margin 0 the corner pixel is a finder module
	}
	b := img.Bounds()
	canvas := image.NewRGBA(image.Rect(0, 0, b.Dx()+2*pad, b.Dy()+2*pad))
	draw.Draw(canvas, canvas.Bounds(), image.NewUniform(light), image.Point{}, draw.Src)
	draw.Draw(canvas, b.Add(image.Pt(pad, pad)), img, b.Min, draw.Src)
	var buf bytes.Buffer
	if err := png.Encode(&buf, canvas); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// qrPost posts a JSON body to /pdf/qrcode with the client's key.
func (c *client) qrPost(req any) *http.Response {
	c.t.Helper()
	return c.withKey("POST", "/pdf/qrcode", jsonBody(req))
}

// qrPNG asks for a PNG and checks the answer is one of exactly size×size.
func (c *client) qrPNG(req map[string]any, size int) (image.Image, []byte) {
	c.t.Helper()
	resp := c.qrPost(req)
	mustStatus(c.t, resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != "image/png" {
		c.t.Fatalf("Content-Type %q, want image/png", ct)
	}
	b := readAll(c.t, resp)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		c.t.Fatalf("not a PNG: %v", err)
	}
	if got := img.Bounds(); got != image.Rect(0, 0, size, size) {
		c.t.Fatalf("image %v, want exactly %d×%d", got, size, size)
	}
	return img, b
}

func TestQRCodeDecodesAtEveryLevelAndMargin(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	const data = "https://example.com/invoices/2024-000123?ref=docrender"
	for _, ecc := range []string{"L", "M", "Q", "H"} {
		for _, margin := range []int{0, 1, 4, 10} {
			t.Run(fmt.Sprintf("%s/margin=%d", ecc, margin), func(t *testing.T) {
				size := 300
				_, b := c.qrPNG(map[string]any{"data": data, "errorCorrectionLevel": ecc, "margin": margin, "size": size}, size)
				pad := 0
				if margin < 4 {
					pad = size / 4 // at least 4 modules of the largest code here (v7, 45+ modules)
				}
				if got := zbarCodes(t, b, pad); len(got) != 1 || got[0] != data {
					t.Fatalf("zbarimg read %q, want %q", got, data)
				}
			})
		}
	}
}

func TestQRCodeDefaultsSizesAndColours(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	t.Run("defaults: 200 px, margin 1, black on white", func(t *testing.T) {
		img, b := c.qrPNG(map[string]any{"data": "hello docrender"}, 200)
		if got := zbarCodes(t, b, 50); len(got) != 1 || got[0] != "hello docrender" {
			t.Fatalf("zbarimg read %q", got)
		}
		checkColour(t, img, 0, 0, color.RGBA{255, 255, 255, 255}) // margin: light
		// Margin 1 of 21+2 modules at 200 px: the top-left finder starts at px 9.
		checkColour(t, img, 10, 10, color.RGBA{0, 0, 0, 255})
	})
	for _, size := range []int{32, 57, 1000, 2048} {
		t.Run(fmt.Sprintf("size %d", size), func(t *testing.T) {
			c.qrPNG(map[string]any{"data": "QR", "size": size}, size)
		})
	}
	t.Run("custom colours", func(t *testing.T) {
		img, b := c.qrPNG(map[string]any{"data": "coloured", "darkColor": "#1A237E", "lightColor": "#fffde7", "margin": 4}, 200)
		if got := zbarCodes(t, b, 0); len(got) != 1 || got[0] != "coloured" {
			t.Fatalf("zbarimg read %q", got)
		}
		checkColour(t, img, 0, 0, color.RGBA{0xff, 0xfd, 0xe7, 255})
		// Margin 4 of 21+8 modules: the finder's outer ring starts at px 28.
		checkColour(t, img, 30, 30, color.RGBA{0x1a, 0x23, 0x7e, 255})
	})
	t.Run("short colours", func(t *testing.T) {
		img, _ := c.qrPNG(map[string]any{"data": "x", "darkColor": "#c00", "lightColor": "#eee"}, 200)
		checkColour(t, img, 0, 0, color.RGBA{0xee, 0xee, 0xee, 255})
		checkColour(t, img, 10, 10, color.RGBA{0xcc, 0, 0, 255})
	})
	t.Run("Bearer key", func(t *testing.T) {
		resp := c.do("POST", "/pdf/qrcode", jsonBody(map[string]any{"data": "x"}), map[string]string{"Authorization": "Bearer " + c.Key})
		mustStatus(t, resp, http.StatusOK)
		readAll(t, resp)
	})
}

func checkColour(t testing.TB, img image.Image, x, y int, want color.RGBA) {
	t.Helper()
	r, g, b, a := img.At(x, y).RGBA()
	got := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
	if got != want {
		t.Errorf("pixel (%d,%d) is %v, want %v", x, y, got, want)
	}
}

func TestQRCodeDataURL(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	const data = "https://docrender.example/t/42"
	resp := c.qrPost(map[string]any{"data": data, "format": "dataUrl", "size": 256, "errorCorrectionLevel": "H"})
	mustStatus(t, resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
	raw := readAll(t, resp)
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || len(m) != 1 {
		t.Fatalf("body %.200s: want exactly {\"dataUrl\": ...}", raw)
	}
	const prefix = "data:image/png;base64,"
	u := m["dataUrl"]
	if !strings.HasPrefix(u, prefix) {
		t.Fatalf("dataUrl %.60q lacks %q", u, prefix)
	}
	b, err := base64.StdEncoding.DecodeString(u[len(prefix):])
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds() != image.Rect(0, 0, 256, 256) {
		t.Fatalf("data URL image: %v, %v", err, img.Bounds())
	}
	if got := zbarCodes(t, b, 64); len(got) != 1 || got[0] != data {
		t.Fatalf("zbarimg read %q", got)
	}
}

// TestQRCodeBadRequests: every bad input is a 400 naming its field (spec
// 4.6, DESIGN §4.16); nothing is counted, nothing crashes.
func TestQRCodeBadRequests(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	tests := []struct {
		name  string
		req   any
		field string
	}{
		{"data missing", map[string]any{"size": 200}, "data"},
		{"data empty", map[string]any{"data": ""}, "data"},
		{"data not a string", map[string]any{"data": 42}, "data"},
		{"data too long at H", map[string]any{"data": strings.Repeat("x", 1274), "errorCorrectionLevel": "H"}, "data"},
		{"size too small", map[string]any{"data": "x", "size": 31}, "size"},
		{"size too large", map[string]any{"data": "x", "size": 2049}, "size"},
		{"size as string", map[string]any{"data": "x", "size": "200"}, "size"},
		{"size fractional", map[string]any{"data": "x", "size": 200.5}, "size"},
		{"size too small for the code", map[string]any{"data": strings.Repeat("y", 500), "size": 40}, "size"},
		{"margin negative", map[string]any{"data": "x", "margin": -1}, "margin"},
		{"margin 11", map[string]any{"data": "x", "margin": 11}, "margin"},
		{"unknown level", map[string]any{"data": "x", "errorCorrectionLevel": "X"}, "errorCorrectionLevel"},
		{"colour name", map[string]any{"data": "x", "darkColor": "red"}, "darkColor"},
		{"colour too short", map[string]any{"data": "x", "lightColor": "#12345"}, "lightColor"},
		{"unknown format", map[string]any{"data": "x", "format": "svg"}, "format"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := expectError(t, c.qrPost(tc.req), http.StatusBadRequest, apierr.BadRequest)
			if e.Field != tc.field || !strings.Contains(e.Message, tc.field) {
				t.Fatalf("field %q, message %q: want them to name %s", e.Field, e.Message, tc.field)
			}
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		resp := c.withKey("POST", "/pdf/qrcode", body{strings.NewReader("data=x"), "application/x-www-form-urlencoded"})
		expectError(t, resp, http.StatusBadRequest, apierr.BadRequest)
	})
	t.Run("empty body", func(t *testing.T) {
		expectError(t, c.withKey("POST", "/pdf/qrcode", body{strings.NewReader(""), "application/json"}), http.StatusBadRequest, apierr.BadRequest)
	})
	t.Run("no key", func(t *testing.T) {
		resp, err := http.Post(svc.URL+"/pdf/qrcode", "application/json", strings.NewReader(`{"data":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		expectError(t, resp, http.StatusUnauthorized, apierr.Unauthorized)
	})
	t.Run("GET", func(t *testing.T) {
		expectError(t, c.withKey("GET", "/pdf/qrcode", body{}), http.StatusMethodNotAllowed, apierr.MethodNotAllowed)
	})
	if n := c.usage(); n != 0 {
		t.Errorf("conversions used = %d: QR codes are not conversions", n)
	}
}
