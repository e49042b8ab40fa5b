package pdfedit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/limits"
	"github.com/docrender/docrender/pkg/limits/limitstest"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// TestWatermarkRulesMatchGateway: at every limit of DESIGN §4.17's
// watermark, the worker refuses exactly what the gateway refuses. Each
// object goes to the gateway's parser as a client sends it, and to Watermark
// as a job carrying the same values. (A zero font size, an empty colour,
// position or pages cannot be told from absent in a job: see
// TestWatermarkJobZeroIsDefault.)
func TestWatermarkRulesMatchGateway(t *testing.T) {
	in := rawPDF("RULES", 3, 0)
	b64 := base64.StdEncoding.EncodeToString
	small := pngImage(t, 8, 8)
	text := func(extra map[string]any) map[string]any {
		wm := map[string]any{"text": "DRAFT"}
		maps.Copy(wm, extra)
		return wm
	}
	tests := []struct {
		name string
		wm   map[string]any
		ok   bool
	}{
		{"font size 1", text(map[string]any{"fontSize": pdfopts.WatermarkFontSizeMin}), true},
		{"font size 0.99", text(map[string]any{"fontSize": 0.99}), false},
		{"font size 500", text(map[string]any{"fontSize": pdfopts.WatermarkFontSizeMax}), true},
		{"font size 500.5", text(map[string]any{"fontSize": 500.5}), false},
		{"font size 501", text(map[string]any{"fontSize": 501}), false},
		{"font size -1", text(map[string]any{"fontSize": -1}), false},
		{"opacity 0", text(map[string]any{"opacity": 0}), true},
		{"opacity 1", text(map[string]any{"opacity": 1}), true},
		{"opacity 1.01", text(map[string]any{"opacity": 1.01}), false},
		{"opacity -0.01", text(map[string]any{"opacity": -0.01}), false},
		{"rotation -360", text(map[string]any{"rotation": -pdfopts.WatermarkRotationMax}), true},
		{"rotation 360", text(map[string]any{"rotation": pdfopts.WatermarkRotationMax}), true},
		{"rotation 360.5", text(map[string]any{"rotation": 360.5}), false},
		{"rotation -361", text(map[string]any{"rotation": -361}), false},
		{"text of 500 characters", text(map[string]any{"text": strings.Repeat("x", pdfopts.WatermarkTextMax)}), true},
		{"text of 500 two-byte characters", text(map[string]any{"text": strings.Repeat("é", pdfopts.WatermarkTextMax)}), true},
		{"text of 501 characters", text(map[string]any{"text": strings.Repeat("x", pdfopts.WatermarkTextMax+1)}), false},
		{"blank text", text(map[string]any{"text": "   "}), false},
		{"empty text", text(map[string]any{"text": ""}), false},
		{"color #abc", text(map[string]any{"color": "#abc"}), true},
		{"color #AABBCC", text(map[string]any{"color": "#AABBCC"}), true},
		{"color #abcd", text(map[string]any{"color": "#abcd"}), false},
		{"color with a blank", text(map[string]any{"color": " #abc"}), false},
		{"color name", text(map[string]any{"color": "red"}), false},
		{"position top-left", text(map[string]any{"position": "top-left"}), true},
		{"position in capitals with blanks", text(map[string]any{"position": " Bottom-Right "}), true},
		{"position middle", text(map[string]any{"position": "middle"}), false},
		{"pages all", text(map[string]any{"pages": "all"}), true},
		{"pages ALL", text(map[string]any{"pages": " ALL "}), true},
		{"pages ranges", text(map[string]any{"pages": "1-3,5"}), true},
		{"pages with blanks", text(map[string]any{"pages": " 1 - 2 , 3 "}), true},
		{"pages reversed, zero, beyond", text(map[string]any{"pages": "3-1,0,99999999999999999999"}), true},
		{"pages open range", text(map[string]any{"pages": "1-"}), false},
		{"pages word", text(map[string]any{"pages": "first"}), false},
		{"pages all and more", text(map[string]any{"pages": "all,1"}), false},
		{"pages a ll", text(map[string]any{"pages": "a ll"}), false},
		{"pages blank between digits", text(map[string]any{"pages": "1 2"}), false},
		{"image", map[string]any{"image": b64(small)}, true},
		{"image of 4096x4096 pixels", map[string]any{"image": b64(grayPNG(t, 4096, 4096))}, true},
		{"image of 4097x4096 pixels", map[string]any{"image": b64(limitstest.BombPNG(4097, 4096))}, false},
		{"image declaring 10Mx10M pixels", map[string]any{"image": b64(limitstest.BombPNG(10_000_000, 10_000_000))}, false},
		{"image of 512 KiB", map[string]any{"image": b64(paddedPNG(t, small, limits.WatermarkImageBytes))}, true},
		{"image of 512 KiB + 1", map[string]any{"image": b64(paddedPNG(t, small, limits.WatermarkImageBytes+1))}, false},
		{"image a JPEG", map[string]any{"image": b64(limitstest.BombJPEG(8, 8))}, false},
		{"text and image", map[string]any{"text": "X", "image": b64(small)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.wm)
			if err != nil {
				t.Fatal(err)
			}
			parsed, gwErr := pdfopts.ParseWatermark(raw)
			var bad *invalid.Error
			if gwErr != nil && !errors.As(gwErr, &bad) {
				t.Fatalf("gateway: %v is not invalid input", gwErr)
			}
			workerErr := stampErr(in, job(t, raw))
			if workerErr != nil && !errors.Is(workerErr, ErrInvalidWatermark) {
				t.Fatalf("worker: %v is not ErrInvalidWatermark", workerErr)
			}
			if (gwErr == nil) != tt.ok || (workerErr == nil) != tt.ok {
				t.Fatalf("want ok=%v: gateway %v; worker %v", tt.ok, gwErr, workerErr)
			}
			if tt.ok {
				// The worker takes what the gateway makes of it, too.
				if err := stampErr(in, parsed); err != nil {
					t.Fatalf("worker, the gateway's job: %v", err)
				}
			}
		})
	}
}

// The worker decodes the PNG, as pdfcpu will; the gateway reads only its
// header. A damaged image is so the only watermark the gateway accepts and
// the worker refuses (as the client's fault).
func TestWatermarkDamagedImageOnlyWorkerRefuses(t *testing.T) {
	img := pngImage(t, 64, 64)
	raw, _ := json.Marshal(map[string]any{"image": base64.StdEncoding.EncodeToString(img[:len(img)-40])})
	if _, err := pdfopts.ParseWatermark(raw); err != nil {
		t.Fatalf("gateway: %v", err)
	}
	if err := stampErr(rawPDF("DMG", 1, 0), job(t, raw)); !errors.Is(err, ErrInvalidWatermark) {
		t.Fatalf("worker: %v, want ErrInvalidWatermark", err)
	}
}

// TestWatermarkJobZeroIsDefault: a job's zero font size and empty colour,
// position and pages are fields left out, which take the defaults, as they
// do at the gateway; the gateway refuses them given explicitly, so no job
// of its carries them.
func TestWatermarkJobZeroIsDefault(t *testing.T) {
	in := rawPDF("ZERO", 1, 0)
	for _, field := range []string{"fontSize", "color", "position", "pages"} {
		zero := map[string]any{"fontSize": 0, "color": "", "position": "", "pages": ""}[field]
		raw, _ := json.Marshal(map[string]any{"text": "X", field: zero})
		if _, err := pdfopts.ParseWatermark(raw); err == nil {
			t.Errorf("gateway: %s %q accepted", field, zero)
		}
		if err := stampErr(in, job(t, raw)); err != nil {
			t.Errorf("worker: %s %q: %v", field, zero, err)
		}
	}
}

// TestWatermarkPositionsArePdfopts: the worker anchors exactly the
// positions the gateway accepts.
func TestWatermarkPositionsArePdfopts(t *testing.T) {
	got, want := slices.Sorted(maps.Keys(positions)), slices.Sorted(slices.Values(pdfopts.WatermarkPositions()))
	if !slices.Equal(got, want) {
		t.Fatalf("pdfedit anchors %v, pdfopts accepts %v", got, want)
	}
}

// TestWatermarkJobBeyondGatewayLimits: values no JSON can carry, or no
// gateway sends, are refused by the same rules.
func TestWatermarkJobBeyondGatewayLimits(t *testing.T) {
	in := rawPDF("JOB", 1, 0)
	for name, mod := range map[string]func(*jobspb.Watermark){
		"font size NaN":   func(w *jobspb.Watermark) { w.FontSize = math.NaN() },
		"font size +Inf":  func(w *jobspb.Watermark) { w.FontSize = math.Inf(1) },
		"opacity NaN":     func(w *jobspb.Watermark) { w.Opacity = math.NaN() },
		"rotation NaN":    func(w *jobspb.Watermark) { w.Rotation = math.NaN() },
		"rotation -Inf":   func(w *jobspb.Watermark) { w.Rotation = math.Inf(-1) },
		"font size 10000": func(w *jobspb.Watermark) { w.FontSize = 10000 },
		"rotation 720":    func(w *jobspb.Watermark) { w.Rotation = 720 },
	} {
		if err := stampErr(in, textWM("X", mod)); !errors.Is(err, ErrInvalidWatermark) {
			t.Errorf("%s: %v, want ErrInvalidWatermark", name, err)
		}
	}
}

func stampErr(in []byte, wm *jobspb.Watermark) error {
	var out bytes.Buffer
	return Watermark(context.Background(), bytes.NewReader(in), &out, wm)
}

// job is the watermark object raw as a job would carry it: the gateway's
// defaults under the client's values, unchecked and not normalised.
func job(t *testing.T, raw []byte) *jobspb.Watermark {
	t.Helper()
	var r pdfopts.RawWatermark
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	w := textWM("", nil)
	set := func(dst *float64, src *float64) {
		if src != nil {
			*dst = *src
		}
	}
	setS := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	setS(&w.Text, r.Text)
	if r.Image != nil {
		img, err := base64.StdEncoding.DecodeString(*r.Image)
		if err != nil {
			t.Fatal(err)
		}
		w.ImagePng = img
	}
	set(&w.FontSize, r.FontSize)
	setS(&w.Color, r.Color)
	set(&w.Opacity, r.Opacity)
	set(&w.Rotation, r.Rotation)
	setS(&w.Position, r.Position)
	setS(&w.Pages, r.Pages)
	return w
}

// grayPNG is a w×h grey PNG, quick to encode however large.
func grayPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// paddedPNG is img grown to size bytes by a private ancillary chunk before
// IEND, which decoders skip: a valid PNG of exactly that size.
func paddedPNG(t *testing.T, img []byte, size int) []byte {
	t.Helper()
	const chunk = 12 // length, type and CRC around a chunk's data; IEND is one with none
	pad := size - len(img) - chunk
	if pad < 0 {
		t.Fatalf("%d bytes is under the image's %d", size, len(img))
	}
	private := make([]byte, 0, chunk+pad)
	private = binary.BigEndian.AppendUint32(private, uint32(pad))
	private = append(private, "prVt"...)
	private = append(private, make([]byte, pad)...)
	private = binary.BigEndian.AppendUint32(private, crc32.ChecksumIEEE(private[4:]))
	out := slices.Concat(img[:len(img)-chunk], private, img[len(img)-chunk:])
	if len(out) != size {
		t.Fatalf("padded to %d bytes, want %d", len(out), size)
	}
	return out
}
