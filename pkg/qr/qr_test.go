package qr

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/invalid"
	qrcode "github.com/yeqown/go-qrcode/v2"
)

// zbarDecode decodes a PNG with the independent decoder zbarimg and returns
// the bytes stored in the one code it finds.
//
// It runs `zbarimg --raw -q -Sbinary`: -Sbinary makes zbar return the
// symbol's bytes as stored. Without it zbar 0.23 guesses a charset for byte
// mode data that has no ECI header and converts it to UTF-8; it tries
// Shift-JIS first, so UTF-8 text like "Grüße 東京" comes out as mojibake
// although the code holds the right UTF-8 bytes (TestZbarTextMode checks the
// plain `zbarimg --raw -q` path on ASCII).
//
// padPx > 0 first draws the image onto a light canvas with a light border of
// that many pixels (test only): ISO/IEC 18004 asks for a 4-module quiet zone
// and zbar does not find the finder patterns of a code that touches the
// image edge, so images with less margin are padded to 4 modules before
// decoding. The product still emits exactly what was asked.
func zbarDecode(t *testing.T, pngBytes []byte, padPx int) string {
	t.Helper()
	return zbar(t, pngBytes, padPx, "--raw", "-q", "--nodbus", "-Sbinary")
}

func zbar(t *testing.T, pngBytes []byte, padPx int, args ...string) string {
	t.Helper()
	zbar, err := exec.LookPath("zbarimg")
	if err != nil {
		t.Skip("zbarimg not installed (apt-get install -y zbar-tools); skipping decode check")
	}
	if padPx > 0 {
		img, err := png.Decode(bytes.NewReader(pngBytes))
		if err != nil {
			t.Fatalf("png.Decode: %v", err)
		}
		b := img.Bounds()
		light := img.At(0, 0)
		if p, ok := img.(*image.Paletted); ok {
			light = p.Palette[0] // with margin 0, (0,0) is a finder module
		}
		canvas := image.NewRGBA(image.Rect(0, 0, b.Dx()+2*padPx, b.Dy()+2*padPx))
		draw.Draw(canvas, canvas.Bounds(), image.NewUniform(light), image.Point{}, draw.Src)
		draw.Draw(canvas, b.Add(image.Pt(padPx, padPx)), img, b.Min, draw.Src)
		var buf bytes.Buffer
		if err := png.Encode(&buf, canvas); err != nil {
			t.Fatal(err)
		}
		pngBytes = buf.Bytes()
	}
	f := filepath.Join(t.TempDir(), "qr.png")
	if err := os.WriteFile(f, pngBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(zbar, append(args, f)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zbarimg found no code (%v): %s", err, stderr.Bytes())
	}
	return string(out)
}

// TestZbarTextMode decodes with exactly `zbarimg --raw -q` (charset
// conversion on): ASCII comes back as is, plus zbar's newline.
func TestZbarTextMode(t *testing.T) {
	b, err := PNG(NewOptions(url))
	if err != nil {
		t.Fatal(err)
	}
	if got := zbar(t, b, 0, "--raw", "-q", "--nodbus"); got != url+"\n" {
		t.Fatalf("zbarimg read %q", got)
	}
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("image/png cannot decode the output: %v", err)
	}
	return img
}

func opts(data string, mod func(*Options)) Options {
	o := NewOptions(data)
	if mod != nil {
		mod(&o)
	}
	return o
}

const (
	url     = "https://example.com/invoices/2024-000123?ref=docrender"
	unicode = "Grüße 東京"
)

// TestDecodes renders codes and reads them back with zbarimg.
func TestDecodes(t *testing.T) {
	long := strings.Repeat("docrender QR capacity test; ", 40)[:1000] // v27 at M
	type tc struct {
		name string
		o    Options
	}
	var cases []tc
	for _, ecc := range []string{"L", "M", "Q", "H"} {
		for _, margin := range []int{0, 1, 4, 10} {
			for _, data := range []string{url, unicode, "0123456789012345", "HELLO WORLD $%*+-./:"} {
				cases = append(cases, tc{
					fmt.Sprintf("ecc=%s/margin=%d/%.12s", ecc, margin, data),
					opts(data, func(o *Options) { o.ECC = ecc; o.Margin = margin }),
				})
			}
		}
	}
	cases = append(cases,
		// Size 32 decodes for a version 1 code (21+2 modules: 1.39 px per
		// module). zbar needs roughly 2.3 px per module or more to read
		// every code: below that, some sizes read and others do not, so
		// other size-32 images are checked pixel by pixel in TestPixels.
		tc{"size32/v1", opts("hello", func(o *Options) { o.Size = 32 })},
		tc{"size2048/short", opts(url, func(o *Options) { o.Size = 2048 })},
		tc{"size2048/long", opts(long, func(o *Options) { o.Size = 2048; o.Margin = 4 })},
		tc{"size200/300 bytes", opts(long[:300], func(o *Options) { o.ECC = "L" })}, // v11: 3.2 px/module
		tc{"size333/odd", opts(url, func(o *Options) { o.Size = 333; o.Margin = 3 })},
		tc{"colours", opts(url, func(o *Options) { o.Dark = "#123"; o.Light = "#ffffee" })},
		tc{"lowercase ecc", opts(url, func(o *Options) { o.ECC = "q" })},
		tc{"multiline", opts("line 1\nline 2\tTab", nil)},
		tc{"v40 full at L", opts(strings.Repeat("a", 2953), func(o *Options) { o.Size = 2048; o.ECC = "L"; o.Margin = 4 })},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, err := PNG(c.o)
			if err != nil {
				t.Fatalf("PNG: %v", err)
			}
			img := decodePNG(t, b)
			if got := img.Bounds(); got != image.Rect(0, 0, c.o.Size, c.o.Size) {
				t.Fatalf("bounds %v, want %d×%d", got, c.o.Size, c.o.Size)
			}
			pad := 0
			if c.o.Margin < 4 { // see zbarDecode: pad to a 4-module quiet zone
				p, _ := c.o.plan(&apiFields)
				n := p.modules + 2*c.o.Margin
				pad = (4 - c.o.Margin) * ((c.o.Size + n - 1) / n)
			}
			if got := zbarDecode(t, b, pad); got != c.o.Data {
				t.Fatalf("zbarimg read %q, want %q", got, c.o.Data)
			}
		})
	}
}

// TestPixels compares every pixel with the library's matrix: pixel p shows
// module p*n/size, the margin is light, colours are exact.
func TestPixels(t *testing.T) {
	for _, c := range []struct {
		data, ecc    string
		size, margin int
		dark, light  string
		wantD, wantL color.RGBA
	}{
		{url, "M", 200, 1, "#000000", "#ffffff", color.RGBA{0, 0, 0, 255}, color.RGBA{255, 255, 255, 255}},
		{url, "H", 200, 10, "#123", "#ffffee", color.RGBA{0x11, 0x22, 0x33, 255}, color.RGBA{0xff, 0xff, 0xee, 255}},
		{unicode, "L", 32, 0, "#ABCDEF", "#fEdCbA", color.RGBA{0xab, 0xcd, 0xef, 255}, color.RGBA{0xfe, 0xdc, 0xba, 255}},
		{"12345", "Q", 31 + 2, 6, "#f00", "#0f0", color.RGBA{255, 0, 0, 255}, color.RGBA{0, 255, 0, 255}},
		{url, "M", 2048, 3, "#000", "#fff", color.RGBA{0, 0, 0, 255}, color.RGBA{255, 255, 255, 255}},
		{url, "M", 33, 0, "#000", "#fff", color.RGBA{0, 0, 0, 255}, color.RGBA{255, 255, 255, 255}}, // v4: exactly 1 px per module
	} {
		name := fmt.Sprintf("%s/%d/%d/%s", c.ecc, c.size, c.margin, c.dark)
		t.Run(name, func(t *testing.T) {
			o := Options{Data: c.data, Size: c.size, Margin: c.margin, ECC: c.ecc, Dark: c.dark, Light: c.light}
			b, err := PNG(o)
			if err != nil {
				t.Fatal(err)
			}
			img := decodePNG(t, b)
			if img.Bounds() != image.Rect(0, 0, c.size, c.size) {
				t.Fatalf("bounds %v", img.Bounds())
			}
			p, _ := o.plan(&apiFields)
			code, err := qrcode.NewWith(c.data, levelOpts[p.level], modeOpts[p.mode], versionOpts[p.version])
			if err != nil {
				t.Fatal(err)
			}
			var bm bitmapWriter
			_ = code.Save(&bm)
			mods := len(bm)
			n := mods + 2*c.margin
			for py := 0; py < c.size; py++ {
				for px := 0; px < c.size; px++ {
					mx, my := px*n/c.size-c.margin, py*n/c.size-c.margin
					want := c.wantL
					if mx >= 0 && my >= 0 && mx < mods && my < mods && bm[my][mx] {
						want = c.wantD
					}
					if got := color.RGBAModel.Convert(img.At(px, py)); got != want {
						t.Fatalf("pixel (%d,%d) = %v, want %v", px, py, got, want)
					}
				}
			}
		})
	}
}

type bitmapWriter [][]bool

func (w *bitmapWriter) Write(m qrcode.Matrix) error { *w = m.Bitmap(); return nil }
func (w *bitmapWriter) Close() error                { return nil }

// TestVersionMatchesLibrary checks that plan's capacity table picks the
// version the library picks on its own (auto mode and version), at each
// version's exact capacity and one past it, for every level and mode.
func TestVersionMatchesLibrary(t *testing.T) {
	chars := [3]string{"7", "A", "a"}
	for v := 1; v <= 40; v++ {
		if testing.Short() && v > 10 && v%10 != 0 {
			continue
		}
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			for level := 0; level < 4; level++ {
				for mode := 0; mode < 3; mode++ {
					for _, extra := range []int{0, 1} {
						n := int(capacities[v-1][level][mode]) + extra
						data := strings.Repeat(chars[mode], n)
						o := Options{Data: data, Size: 2048, Margin: 0, ECC: string("LMQH"[level]), Dark: "#000", Light: "#fff"}
						p, err := o.plan(&apiFields)
						if v == 40 && extra == 1 {
							wantInvalid(t, err, "data")
							continue
						}
						if err != nil {
							t.Fatalf("%s mode=%d n=%d: %v", o.ECC, mode, n, err)
						}
						if p.mode != mode || p.version != v+extra {
							t.Fatalf("%s n=%d: plan mode %d version %d, want %d %d", o.ECC, n, p.mode, p.version, mode, v+extra)
						}
						code, err := qrcode.NewWith(data, levelOpts[level]) // the library's own choice
						if err != nil {
							t.Fatalf("library: %v", err)
						}
						if code.Dimension() != p.modules {
							t.Fatalf("%s mode=%d n=%d: library %d modules, plan %d", o.ECC, mode, n, code.Dimension(), p.modules)
						}
					}
				}
			}
		})
	}
}

func TestDataURL(t *testing.T) {
	o := NewOptions(unicode)
	u, err := DataURL(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u, "data:image/png;base64,") {
		t.Fatalf("prefix: %.40q", u)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(u, DataURLPrefix))
	if err != nil {
		t.Fatal(err)
	}
	direct, _ := PNG(o)
	if !bytes.Equal(b, direct) {
		t.Fatal("data URL does not hold the same PNG as PNG()")
	}
	if got := zbarDecode(t, b, 0); got != unicode {
		t.Fatalf("zbarimg read %q", got)
	}
}

func TestParseRequest(t *testing.T) {
	o, f, err := ParseRequest([]byte(`{"data":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := NewOptions("hi"); o != want || f != FormatPNG {
		t.Fatalf("defaults: %+v %q", o, f)
	}
	o, f, err = ParseRequest([]byte(`{"data":"Grüße 東京","size":300.0,"margin":0,"errorCorrectionLevel":"h",
		"darkColor":"#ABC","lightColor":"#FFFFEE","format":"DATAURL","extra":1}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Data: unicode, Size: 300, Margin: 0, ECC: "H", Dark: "#aabbcc", Light: "#ffffee"}
	if o != want || f != FormatDataURL {
		t.Fatalf("got %+v %q, want %+v dataUrl", o, f, want)
	}
	o, f, err = ParseRequest([]byte(`{"data":"x","size":null,"margin":null,"errorCorrectionLevel":"","darkColor":null,"format":"png"}`))
	if err != nil || o != NewOptions("x") || f != FormatPNG {
		t.Fatalf("null/empty = default: %+v %q %v", o, f, err)
	}
}

func TestFromAttrs(t *testing.T) {
	o, err := FromAttrs("hi", nil)
	if err != nil || o != NewOptions("hi") {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o, err = FromAttrs(" spaced ", map[string]string{"size": " 64 ", "margin": "0", "ecc": "q", "dark": "#112233", "light": "#FFF", "other": "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Data: " spaced ", Size: 64, Margin: 0, ECC: "Q", Dark: "#112233", Light: "#ffffff"}
	if o != want {
		t.Fatalf("got %+v want %+v", o, want)
	}
	o, err = FromAttrs("x", map[string]string{"size": "", "margin": "  "})
	if err != nil || o != NewOptions("x") {
		t.Fatalf("blank = default: %+v %v", o, err)
	}
}

func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var bad *invalid.Error
	if !errors.As(err, &bad) {
		t.Fatalf("error %v (%T) is not *invalid.Error", err, err)
	}
	if bad.Field != field {
		t.Fatalf("field %q, want %q (%v)", bad.Field, field, bad)
	}
	if field != "" && !strings.Contains(bad.Error(), field) {
		t.Fatalf("message %q does not name %q", bad.Error(), field)
	}
}

func TestParseRequestErrors(t *testing.T) {
	tooLongH := strings.Repeat("x", 1274) // byte mode, H holds 1273
	for _, c := range []struct{ body, field string }{
		{``, ""},
		{`   `, ""},
		{`not json`, ""},
		{`{"data":"x"`, ""},
		{`{"data":"x"} trailing`, ""},
		{`null`, ""},
		{`[1,2]`, ""},
		{`"data"`, ""},
		{`{}`, "data"},
		{`{"data":null}`, "data"},
		{`{"data":""}`, "data"},
		{`{"data":42}`, "data"},
		{`{"data":["x"]}`, "data"},
		{`{"data":"x","size":31}`, "size"},
		{`{"data":"x","size":2049}`, "size"},
		{`{"data":"x","size":0}`, "size"},
		{`{"data":"x","size":-200}`, "size"},
		{`{"data":"x","size":200.5}`, "size"},
		{`{"data":"x","size":"200"}`, "size"},
		{`{"data":"x","size":1e300}`, "size"},
		{`{"data":"x","size":true}`, "size"},
		{`{"data":"x","margin":-1}`, "margin"},
		{`{"data":"x","margin":11}`, "margin"},
		{`{"data":"x","margin":1.5}`, "margin"},
		{`{"data":"x","margin":"1"}`, "margin"},
		{`{"data":"x","errorCorrectionLevel":"X"}`, "errorCorrectionLevel"},
		{`{"data":"x","errorCorrectionLevel":"LOW"}`, "errorCorrectionLevel"},
		{`{"data":"x","errorCorrectionLevel":7}`, "errorCorrectionLevel"},
		{`{"data":"x","darkColor":"#12"}`, "darkColor"},
		{`{"data":"x","darkColor":"red"}`, "darkColor"},
		{`{"data":"x","darkColor":"#ggg"}`, "darkColor"},
		{`{"data":"x","darkColor":"123456"}`, "darkColor"},
		{`{"data":"x","darkColor":"#1234567"}`, "darkColor"},
		{`{"data":"x","darkColor":"#12345678"}`, "darkColor"},
		{`{"data":"x","darkColor":0}`, "darkColor"},
		{`{"data":"x","lightColor":"#fffff"}`, "lightColor"},
		{`{"data":"x","lightColor":"rgb(1,2,3)"}`, "lightColor"},
		{`{"data":"x","format":"jpeg"}`, "format"},
		{`{"data":"x","format":1}`, "format"},
		{`{"data":"` + tooLongH + `","errorCorrectionLevel":"H","size":2048}`, "data"},
		{`{"data":"` + strings.Repeat("9", 7090) + `","errorCorrectionLevel":"L","size":2048}`, "data"},
		// 200 bytes need version 10 at M (57 modules): 32 px is too small.
		{`{"data":"` + strings.Repeat("x", 200) + `","size":32}`, "size"},
		// version 1 (21 modules) + 2×10 margin = 41 > 40 pixels.
		{`{"data":"x","size":40,"margin":10}`, "size"},
	} {
		t.Run(fmt.Sprintf("%.60s", c.body), func(t *testing.T) {
			_, _, err := ParseRequest([]byte(c.body))
			wantInvalid(t, err, c.field)
		})
	}
	// The same data fits at L, and at the limit sizes.
	if _, _, err := ParseRequest([]byte(`{"data":"` + tooLongH + `","errorCorrectionLevel":"L","size":2048}`)); err != nil {
		t.Fatalf("1274 bytes at L: %v", err)
	}
	if _, _, err := ParseRequest([]byte(`{"data":"x","size":41,"margin":10}`)); err != nil {
		t.Fatalf("size 41 margin 10: %v", err)
	}
}

func TestFromAttrsErrors(t *testing.T) {
	for _, c := range []struct {
		data  string
		attrs map[string]string
		field string
	}{
		{"", nil, "data-qr"},
		{"x", map[string]string{"size": "abc"}, "data-qr-size"},
		{"x", map[string]string{"size": "200px"}, "data-qr-size"},
		{"x", map[string]string{"size": "20"}, "data-qr-size"},
		{"x", map[string]string{"size": "4096"}, "data-qr-size"},
		{"x", map[string]string{"margin": "11"}, "data-qr-margin"},
		{"x", map[string]string{"margin": "-1"}, "data-qr-margin"},
		{"x", map[string]string{"margin": "one"}, "data-qr-margin"},
		{"x", map[string]string{"ecc": "Z"}, "data-qr-ecc"},
		{"x", map[string]string{"dark": "black"}, "data-qr-dark"},
		{"x", map[string]string{"light": "#12345"}, "data-qr-light"},
		{strings.Repeat("x", 2400), map[string]string{"size": "2048"}, "data-qr"},
		// 300 bytes at M need version 13 (69 modules) + 2 margin > 64 pixels.
		{strings.Repeat("x", 300), map[string]string{"size": "64"}, "data-qr-size"},
	} {
		t.Run(fmt.Sprintf("%s=%v", c.field, c.attrs), func(t *testing.T) {
			_, err := FromAttrs(c.data, c.attrs)
			wantInvalid(t, err, c.field)
		})
	}
}

func TestValidateAndPNGErrors(t *testing.T) {
	for _, c := range []struct {
		o     Options
		field string
	}{
		{Options{}, "data"},
		{Options{Data: "x"}, "size"},
		{Options{Data: "x", Size: 200}, "errorCorrectionLevel"},
		{Options{Data: "x", Size: 200, ECC: "M"}, "darkColor"},
		{Options{Data: "x", Size: 200, ECC: "M", Dark: "#000"}, "lightColor"},
		{opts("x", func(o *Options) { o.Margin = 20 }), "margin"},
	} {
		o := c.o
		wantInvalid(t, o.Validate(), c.field)
		_, err := PNG(c.o)
		wantInvalid(t, err, c.field)
		_, err = DataURL(c.o)
		wantInvalid(t, err, c.field)
	}
	o := Options{Data: "x", Size: 200, Margin: 0, ECC: " h ", Dark: "#ABC", Light: "#FfF"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if want := (Options{Data: "x", Size: 200, Margin: 0, ECC: "H", Dark: "#aabbcc", Light: "#ffffff"}); o != want {
		t.Fatalf("normalised to %+v, want %+v", o, want)
	}
}

// TestConcurrent exercises the pooled buffers from many goroutines (run
// with -race); each result must equal the sequential one.
func TestConcurrent(t *testing.T) {
	inputs := []Options{NewOptions(url), opts(unicode, func(o *Options) { o.Size = 512 }), opts("1234", func(o *Options) { o.Size = 32 })}
	want := make([][]byte, len(inputs))
	for i, o := range inputs {
		want[i], _ = PNG(o)
	}
	errc := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				k := (g + i) % len(inputs)
				b, err := PNG(inputs[k])
				if err == nil && !bytes.Equal(b, want[k]) {
					err = fmt.Errorf("input %d: different bytes", k)
				}
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func TestSetBits(t *testing.T) {
	for start := 0; start < 40; start++ {
		for end := start; end <= 40; end++ {
			b := make([]byte, 5)
			setBits(b, start, end)
			for px := 0; px < 40; px++ {
				got := b[px>>3]&(0x80>>uint(px&7)) != 0
				if got != (px >= start && px < end) {
					t.Fatalf("setBits(%d, %d): pixel %d is %v", start, end, px, got)
				}
			}
		}
	}
}

func TestRender(t *testing.T) {
	sz := 120.0
	body, _ := json.Marshal(Request{Data: unicode, Size: &sz, Format: "dataUrl"})
	o, f, err := ParseRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	b, ct, err := Render(o, f)
	if err != nil || ct != "application/json" {
		t.Fatalf("%q %v", ct, err)
	}
	var resp map[string]string
	if err := json.Unmarshal(b, &resp); err != nil || len(resp) != 1 || !strings.HasPrefix(resp["dataUrl"], DataURLPrefix) {
		t.Fatalf("body %s (%v)", b, err)
	}
	png, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(resp["dataUrl"], DataURLPrefix))
	if decodePNG(t, png).Bounds().Dx() != 120 {
		t.Fatal("size")
	}
	b, ct, err = Render(o, FormatPNG)
	if err != nil || ct != "image/png" || !bytes.Equal(b, png) {
		t.Fatalf("png: %q %v", ct, err)
	}
	_, _, err = Render(o, "gif")
	wantInvalid(t, err, "format")
	_, _, err = Render(Options{}, FormatPNG)
	wantInvalid(t, err, "data")
}
