package qr

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/docrender/docrender/pkg/invalid"
	qrcode "github.com/yeqown/go-qrcode/v2"
)

// DataURLPrefix starts every data URL DataURL returns.
const DataURLPrefix = "data:image/png;base64,"

// PNG validates o (see Options.Validate; errors are *invalid.Error naming
// the JSON field) and returns a PNG of exactly o.Size×o.Size pixels: the code
// with o.Margin modules of quiet zone on each side, dark modules in o.Dark,
// everything else in o.Light.
//
// The image is a 1-bit paletted PNG (index 0 = light, 1 = dark). With
// n = modules+2*margin modules across, output pixel p (row or column) shows
// module p*n/size (integer division), so every pixel is exactly one module's
// colour (crisp, no anti-aliasing) and modules are floor(size/n) or
// ceil(size/n) pixels wide, spread evenly. plan guarantees size >= n, so
// every module gets at least one pixel.
func PNG(o Options) ([]byte, error) {
	p, err := o.plan(&apiFields)
	if err != nil {
		return nil, err
	}
	w := pngWriter{layout: &p, size: o.Size, margin: o.Margin}
	if err := encodeMatrix(o.Data, &p, &w); err != nil {
		return nil, err
	}
	return w.png, nil
}

// DataURL is PNG as a data:image/png;base64,... URL (the dataUrl format of
// spec §4.6 and the src of data-qr images).
func DataURL(o Options) (string, error) {
	b, err := PNG(o)
	if err != nil {
		return "", err
	}
	out := make([]byte, len(DataURLPrefix)+base64.StdEncoding.EncodedLen(len(b)))
	copy(out, DataURLPrefix)
	base64.StdEncoding.Encode(out[len(DataURLPrefix):], b)
	return string(out), nil
}

// Render is the response of POST /pdf/qrcode for a format from
// ParseRequest: with FormatPNG the PNG bytes and "image/png"; with
// FormatDataURL the JSON {"dataUrl":"data:image/png;base64,..."} and
// "application/json". An unknown format is a 400 on field format.
func Render(o Options, format string) (body []byte, contentType string, err error) {
	switch format {
	case FormatPNG:
		b, err := PNG(o)
		if err != nil {
			return nil, "", err
		}
		return b, "image/png", nil
	case FormatDataURL:
		u, err := DataURL(o)
		if err != nil {
			return nil, "", err
		}
		b, err := json.Marshal(struct {
			DataURL string `json:"dataUrl"`
		}{u})
		if err != nil {
			return nil, "", err
		}
		return b, "application/json", nil
	}
	return nil, "", invalid.Field("format", fmt.Sprintf("%q is not one of png, dataUrl", format))
}

// The library's options are immutable values; build them once.
var (
	levelOpts = [4]qrcode.EncodeOption{
		qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionLow),
		qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium),
		qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionQuart),
		qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionHighest),
	}
	modeOpts = [3]qrcode.EncodeOption{
		qrcode.WithEncodingMode(qrcode.EncModeNumeric),
		qrcode.WithEncodingMode(qrcode.EncModeAlphanumeric),
		qrcode.WithEncodingMode(qrcode.EncModeByte),
	}
	versionOpts [41]qrcode.EncodeOption
)

func init() {
	for v := 1; v <= 40; v++ {
		versionOpts[v] = qrcode.WithVersion(v)
	}
}

// encodeMatrix builds the code with the level, mode and version plan chose
// and hands its matrix to w. The library panics on some internal
// inconsistencies; that becomes an error (a 500), never a crash.
func encodeMatrix(data string, p *layout, w qrcode.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("qr: go-qrcode panicked: %v", r)
		}
	}()
	code, err := qrcode.NewWith(data, levelOpts[p.level], modeOpts[p.mode], versionOpts[p.version])
	if err != nil {
		// plan has checked the capacity already, so this is not the input's fault.
		return fmt.Errorf("qr: %w", err)
	}
	if err := code.Save(w); err != nil {
		return fmt.Errorf("qr: %w", err)
	}
	return nil
}

// pngWriter is a qrcode.Writer that renders the matrix into w.png.
type pngWriter struct {
	layout       *layout
	size, margin int
	png          []byte
}

var _ qrcode.Writer = (*pngWriter)(nil)

func (w *pngWriter) Close() error { return nil }

func (w *pngWriter) Write(mat qrcode.Matrix) error {
	if mat.Width() != w.layout.modules || mat.Height() != w.layout.modules {
		return fmt.Errorf("qr: matrix is %d×%d modules, want %d", mat.Width(), mat.Height(), w.layout.modules)
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	png, err := s.encode(&mat, w.size, w.margin, w.layout.dark, w.layout.light)
	if err != nil {
		return err
	}
	w.png = png
	return nil
}

// scratch holds the reusable buffers of one encoding.
type scratch struct {
	raw    []byte             // filtered scanlines: size × (1 + ceil(size/8))
	starts []int              // starts[m] = first pixel of module m (m = 0..n)
	cols   [][]qrcode.QRValue // matrix columns: cols[x][y].IsSet() = dark
	idat   bytes.Buffer
	zw     *zlib.Writer
}

var scratchPool = sync.Pool{New: func() any {
	s := new(scratch)
	s.zw, _ = zlib.NewWriterLevel(&s.idat, zlib.BestSpeed)
	return s
}}

var pngSignature = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}

// PNG filter types (PNG spec §9.2).
const (
	filterNone = 0
	filterUp   = 2
)

func (s *scratch) encode(mat *qrcode.Matrix, size, margin int, dark, light [3]byte) ([]byte, error) {
	modules := mat.Width()
	n := modules + 2*margin

	// Pixel p shows module p*n/size, so module m starts at ceil(m*size/n).
	s.starts = s.starts[:0]
	for m := 0; m <= n; m++ {
		s.starts = append(s.starts, (m*size+n-1)/n)
	}
	s.cols = s.cols[:0]
	for x := 0; x < modules; x++ {
		s.cols = append(s.cols, mat.Col(x))
	}

	stride := 1 + (size+7)/8
	if cap(s.raw) < size*stride {
		s.raw = make([]byte, size*stride)
	}
	raw := s.raw[:size*stride]

	// One scanline per module row is built; the other pixel rows of the
	// same module row repeat it, written with filter Up as all zeros.
	for py := 0; py < size; py++ {
		row := raw[py*stride : (py+1)*stride]
		if py > 0 && (py*n)/size == ((py-1)*n)/size {
			row[0] = filterUp
			clear(row[1:])
			continue
		}
		row[0] = filterNone
		bits := row[1:]
		clear(bits)
		y := py*n/size - margin
		if y < 0 || y >= modules {
			continue // quiet zone: all light
		}
		for x := 0; x < modules; {
			if !s.cols[x][y].IsSet() {
				x++
				continue
			}
			x0 := x // a run of dark modules x0..x-1
			for x < modules && s.cols[x][y].IsSet() {
				x++
			}
			setBits(bits, s.starts[x0+margin], s.starts[x+margin])
		}
	}

	s.idat.Reset()
	s.zw.Reset(&s.idat)
	if _, err := s.zw.Write(raw); err != nil {
		return nil, err
	}
	if err := s.zw.Close(); err != nil {
		return nil, err
	}

	clear(s.cols) // do not keep the matrix alive in the pool
	idat := s.idat.Bytes()
	out := make([]byte, 0, len(pngSignature)+(12+13)+(12+6)+(12+len(idat))+12)
	out = append(out, pngSignature...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(size))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(size))
	ihdr[8] = 1  // bit depth
	ihdr[9] = 3  // colour type: palette
	ihdr[10] = 0 // compression: deflate
	ihdr[11] = 0 // filter method 0
	ihdr[12] = 0 // no interlace
	out = appendChunk(out, "IHDR", ihdr[:])
	plte := [6]byte{light[0], light[1], light[2], dark[0], dark[1], dark[2]}
	out = appendChunk(out, "PLTE", plte[:])
	out = appendChunk(out, "IDAT", idat)
	out = appendChunk(out, "IEND", nil)
	return out, nil
}

// setBits sets bits start..end-1 of b, most significant bit first.
func setBits(b []byte, start, end int) {
	if start >= end {
		return
	}
	i, j := start>>3, (end-1)>>3
	first := byte(0xff) >> uint(start&7)
	last := byte(0xff) << uint(7-(end-1)&7)
	if i == j {
		b[i] |= first & last
		return
	}
	b[i] |= first
	for k := i + 1; k < j; k++ {
		b[k] = 0xff
	}
	b[j] |= last
}

// appendChunk appends a PNG chunk: length, type, data, CRC-32 of type+data.
func appendChunk(b []byte, typ string, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	start := len(b)
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
}
