package qr

import (
	"testing"

	qrcode "github.com/yeqown/go-qrcode/v2"
)

// benchData is a typical invoice link: byte mode, version 4 at level M.
const benchData = "https://example.com/invoices/2024-000123?ref=docrender"

// BenchmarkPNG200 is the whole PNG path at the default size 200, margin 1,
// level M: validation, matrix (go-qrcode) and this package's PNG writer, for
// codes of three versions (the matrix cost grows with the version).
// PNGs/s = 1e9 / ns/op on one core with -cpu 1.
func BenchmarkPNG200(b *testing.B) {
	for _, c := range []struct{ name, data string }{
		{"v1", "INV-2024-000123"},        // alphanumeric, 21 modules
		{"v2", "https://example.com/x1"}, // byte, 25 modules
		{"v4", benchData},                // byte, 33 modules
	} {
		b.Run(c.name, func(b *testing.B) {
			o := NewOptions(c.data)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := PNG(o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "PNGs/s")
		})
	}
}

// BenchmarkDataURL200 is BenchmarkPNG200/v4 plus base64.
func BenchmarkDataURL200(b *testing.B) {
	o := NewOptions(benchData)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DataURL(o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "URLs/s")
}

// BenchmarkMatrixOnly is the library's share of BenchmarkPNG200/v4: building
// the matrix, no image.
func BenchmarkMatrixOnly(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		code, err := qrcode.NewWith(benchData, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
		if err != nil {
			b.Fatal(err)
		}
		_ = code.Save(nil)
	}
}

// BenchmarkWriterOnly is this package's share: the PNG writer on a
// prebuilt matrix.
func BenchmarkWriterOnly(b *testing.B) {
	o := NewOptions(benchData)
	p, err := o.plan(&apiFields)
	if err != nil {
		b.Fatal(err)
	}
	code, err := qrcode.NewWith(benchData, levelOpts[p.level], modeOpts[p.mode], versionOpts[p.version])
	if err != nil {
		b.Fatal(err)
	}
	w := pngWriter{layout: &p, size: o.Size, margin: o.Margin}
	b.ReportAllocs()
	for b.Loop() {
		if err := code.Save(&w); err != nil {
			b.Fatal(err)
		}
	}
}
