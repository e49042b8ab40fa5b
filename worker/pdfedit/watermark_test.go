package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/limits/limitstest"
	"github.com/docrender/docrender/proto/jobspb"
)

// textWM is a text watermark with DESIGN §4.17's defaults, as the gateway
// fills them in.
func textWM(text string, mod func(*jobspb.Watermark)) *jobspb.Watermark {
	w := &jobspb.Watermark{Text: text, FontSize: 48, Color: "#888888", Opacity: 0.3, Rotation: 45, Position: "center", Pages: "all"}
	if mod != nil {
		mod(w)
	}
	return w
}

func watermarked(t *testing.T, in []byte, wm *jobspb.Watermark) string {
	t.Helper()
	var out bytes.Buffer
	if err := Watermark(context.Background(), bytes.NewReader(in), &out, wm); err != nil {
		t.Fatalf("Watermark: %v", err)
	}
	return tmpPDF(t, out.Bytes())
}

func TestWatermarkTextPages(t *testing.T) {
	needTools(t, "pdfinfo", "pdftotext", "qpdf")
	raw := rawPDF("DOC", 4, 3)
	compressed := qpdfPDF(t, "DOC", 4)

	tests := []struct {
		pages string
		want  []int // pages that carry the watermark, of 4
	}{
		{"1,3", []int{1, 3}},
		{"all", []int{1, 2, 3, 4}},
		{"", []int{1, 2, 3, 4}},
		{"ALL", []int{1, 2, 3, 4}},
		{"2-3", []int{2, 3}},
		{"1-2, 4", []int{1, 2, 4}},
		{"3-10", []int{3, 4}},
		{"4,4,1-1", []int{1, 4}},
		{"2", []int{2}},
		{"9", nil},
		{"5-8", nil},
	}
	for _, src := range []struct {
		name string
		pdf  []byte
	}{{"raw", raw}, {"qpdf", compressed}} {
		for _, tt := range tests {
			t.Run(src.name+"/"+tt.pages, func(t *testing.T) {
				path := watermarked(t, src.pdf, textWM("SECRETSTAMP", func(w *jobspb.Watermark) {
					w.Pages = tt.pages
					w.Rotation = 0
				}))
				if n := pdfinfoPages(t, path); n != 4 {
					t.Fatalf("pdfinfo: %d pages, want 4", n)
				}
				for p := 1; p <= 4; p++ {
					text := pageText(t, path, p)
					if !strings.Contains(text, pageLabel("DOC", p)) {
						t.Errorf("page %d lost its own text: %q", p, firstLine(text))
					}
					has := hasText(text, "SECRETSTAMP")
					if want := slices.Contains(tt.want, p); has != want {
						t.Errorf("page %d: watermark present = %v, want %v", p, has, want)
					}
				}
				if tt.want == nil {
					// Nothing selected: the input comes back as it was.
					if got := readFile(t, path); !bytes.Equal(got, src.pdf) {
						t.Errorf("nothing selected, but the output differs from the input")
					}
				}
			})
		}
	}
}

var caRe = regexp.MustCompile(`/ca ([\d.]+)`)

var bboxWordRe = regexp.MustCompile(`<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>`)

// wordBox finds word on page 1 with pdftotext -bbox: the box in points, y
// from the top of the page.
func wordBox(t *testing.T, path, word string) (x0, y0, x1, y1 float64, ok bool) {
	t.Helper()
	html := run(t, "pdftotext", "-q", "-bbox", "-f", "1", "-l", "1", path, "-")
	for _, m := range bboxWordRe.FindAllStringSubmatch(html, -1) {
		if m[5] == word {
			f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
			return f(m[1]), f(m[2]), f(m[3]), f(m[4]), true
		}
	}
	return 0, 0, 0, 0, false
}

func TestWatermarkPosition(t *testing.T) {
	needTools(t, "pdftotext")
	const w, h = 595.0, 842.0 // rawPDF's A4 page
	in := rawPDF("POS", 1, 0)
	tests := []struct {
		position string
		// expected centre of the word, as fractions of the page (y from top)
		cx, cy float64
	}{
		{"center", 0.5, 0.5},
		{"top-left", 0.1, 0.05},
		{"top-center", 0.5, 0.05},
		{"top-right", 0.9, 0.05},
		{"left", 0.1, 0.5},
		{"right", 0.9, 0.5},
		{"bottom-left", 0.1, 0.95},
		{"bottom-center", 0.5, 0.95},
		{"bottom-right", 0.9, 0.95},
		{"Bottom-Right", 0.9, 0.95},
	}
	for _, tt := range tests {
		t.Run(tt.position, func(t *testing.T) {
			path := watermarked(t, in, textWM("WMARK", func(wm *jobspb.Watermark) {
				wm.Position = tt.position
				wm.Rotation = 0
				wm.FontSize = 24
			}))
			x0, y0, x1, y1, ok := wordBox(t, path, "WMARK")
			if !ok {
				t.Fatal("watermark text not found")
			}
			cx, cy := (x0+x1)/2/w, (y0+y1)/2/h
			if d := 0.1; cx < tt.cx-d || cx > tt.cx+d || cy < tt.cy-d || cy > tt.cy+d {
				t.Errorf("watermark centred at (%.2f, %.2f) of the page, want about (%.2f, %.2f)", cx, cy, tt.cx, tt.cy)
			}
			if x0 < 0 || y0 < 0 || x1 > w || y1 > h {
				t.Errorf("watermark box (%.0f,%.0f)-(%.0f,%.0f) leaves the page", x0, y0, x1, y1)
			}
		})
	}
}

func TestWatermarkFontSize(t *testing.T) {
	needTools(t, "pdftotext")
	in := rawPDF("FS", 1, 0)
	height := func(size float64) float64 {
		path := watermarked(t, in, textWM("SIZED", func(wm *jobspb.Watermark) { wm.FontSize = size; wm.Rotation = 0 }))
		_, y0, _, y1, ok := wordBox(t, path, "SIZED")
		if !ok {
			t.Fatalf("font size %v: watermark not found", size)
		}
		return y1 - y0
	}
	small, large := height(20), height(80)
	if r := large / small; r < 3.5 || r > 4.5 {
		t.Errorf("text height at 80pt / at 20pt = %.2f, want about 4", r)
	}
	if def := height(0); def < small*2 || def > large {
		t.Errorf("font size 0 (default 48): height %.1f not between %.1f and %.1f", def, small*2, large)
	}
}

// TestWatermarkOptions: opacity, rotation, colour forms, multi-line and
// Windows-1252 text are accepted and produce a sound PDF with the mark.
func TestWatermarkOptions(t *testing.T) {
	needTools(t, "qpdf", "pdftotext")
	in := rawPDF("OPT", 2, 3)
	tests := []struct {
		name   string
		mod    func(*jobspb.Watermark)
		opaque float64 // expected /ca value in the output, -1 to skip
	}{
		{"defaults", nil, 0.3},
		{"opacity 1", func(w *jobspb.Watermark) { w.Opacity = 1 }, 1},
		{"opacity 0.75", func(w *jobspb.Watermark) { w.Opacity = 0.75 }, 0.75},
		{"opacity 0", func(w *jobspb.Watermark) { w.Opacity = 0 }, 0},
		{"rotation 0", func(w *jobspb.Watermark) { w.Rotation = 0 }, -1},
		{"rotation -30", func(w *jobspb.Watermark) { w.Rotation = -30 }, -1},
		{"rotation 90", func(w *jobspb.Watermark) { w.Rotation = 90 }, -1},
		{"rotation 270", func(w *jobspb.Watermark) { w.Rotation = 270 }, -1},
		{"rotation -360", func(w *jobspb.Watermark) { w.Rotation = -360 }, -1},
		{"color #rgb", func(w *jobspb.Watermark) { w.Color = "#f00" }, -1},
		{"color upper", func(w *jobspb.Watermark) { w.Color = "#00AAFF" }, -1},
		{"color empty", func(w *jobspb.Watermark) { w.Color = "" }, -1},
		{"fractional size", func(w *jobspb.Watermark) { w.FontSize = 12.6 }, -1},
		{"two lines", func(w *jobspb.Watermark) { w.Text = "DRAFT\nNOT FINAL" }, -1},
		{"cp1252", func(w *jobspb.Watermark) { w.Text = "DRAFT – “internal” €" }, -1},
		{"unmapped runes", func(w *jobspb.Watermark) { w.Text = "DRAFT 机密" }, -1},
		{"pdf syntax", func(w *jobspb.Watermark) { w.Text = "DRAFT (a) \\ [b] <c> /d %e" }, -1},
		{"zero-value fields", func(w *jobspb.Watermark) {
			w.FontSize, w.Color, w.Opacity, w.Rotation, w.Position, w.Pages = 0, "", 0, 0, "", ""
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wm := textWM("DRAFT", tt.mod)
			path := watermarked(t, in, wm)
			run(t, "qpdf", "--check", path)
			for p := 1; p <= 2; p++ {
				if text := pageText(t, path, p); !hasText(text, strings.Fields(wm.Text)[0]) {
					t.Errorf("page %d: no watermark text in %q", p, text)
				}
			}
			if tt.opaque >= 0 {
				// The stamp's graphics state carries the fill opacity.
				qdf := filepath.Join(t.TempDir(), "qdf.pdf")
				run(t, "qpdf", "--qdf", "--object-streams=disable", path, qdf)
				found := false
				for _, m := range caRe.FindAllSubmatch(readFile(t, qdf), -1) {
					if v, _ := strconv.ParseFloat(string(m[1]), 64); math.Abs(v-tt.opaque) < 1e-6 {
						found = true
					}
				}
				if !found {
					t.Errorf("no graphics state with /ca %v in the output", tt.opaque)
				}
			}
		})
	}
}

// pngImage is a w×h PNG: opaque red with a blue border.
func pngImage(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{255, 0, 0, 255}
			if x < 4 || y < 4 || x >= w-4 || y >= h-4 {
				c = color.NRGBA{0, 0, 255, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// raster renders page p at 20 dpi with pdftoppm.
func raster(t *testing.T, path string, p int) []byte {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "page")
	run(t, "pdftoppm", "-r", "20", "-f", strconv.Itoa(p), "-l", strconv.Itoa(p), "-singlefile", "-png", path, prefix)
	return readFile(t, prefix+".png")
}

func TestWatermarkImage(t *testing.T) {
	needTools(t, "pdfimages", "pdftoppm", "pdftotext", "qpdf")
	in := rawPDF("IMG", 3, 3)
	inPath := tmpPDF(t, in)
	tests := []struct {
		name string
		mod  func(*jobspb.Watermark)
		want []int
	}{
		{"page 2", func(w *jobspb.Watermark) { w.Pages = "2" }, []int{2}},
		{"all, rotated, opaque", func(w *jobspb.Watermark) { w.Rotation = 30; w.Opacity = 1 }, []int{1, 2, 3}},
		{"1,3 top-right", func(w *jobspb.Watermark) { w.Pages = "1,3"; w.Position = "top-right" }, []int{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wm := textWM("", tt.mod)
			wm.ImagePng = pngImage(t, 120, 60)
			path := watermarked(t, in, wm)
			run(t, "qpdf", "--check", path)

			// pdfimages -list: one row per image drawn, with its page.
			var got []int
			for _, line := range strings.Split(run(t, "pdfimages", "-list", path), "\n") {
				f := strings.Fields(line)
				if len(f) > 4 && f[2] == "image" {
					p, _ := strconv.Atoi(f[0])
					if w, _ := strconv.Atoi(f[3]); w == 120 {
						got = append(got, p)
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("pdfimages: image on pages %v, want %v", got, tt.want)
			}
			for p := 1; p <= 3; p++ {
				changed := !bytes.Equal(raster(t, path, p), raster(t, inPath, p))
				if want := slices.Contains(tt.want, p); changed != want {
					t.Errorf("page %d: rendering changed = %v, want %v", p, changed, want)
				}
				if text := pageText(t, path, p); !strings.Contains(text, pageLabel("IMG", p)) {
					t.Errorf("page %d lost its own text", p)
				}
			}
		})
	}
}

// TestWatermarkImageKinds: the PNG flavours clients send (palette, grey,
// 16-bit, translucent) all stamp.
func TestWatermarkImageKinds(t *testing.T) {
	needTools(t, "pdfimages")
	in := rawPDF("KIND", 1, 0)
	rect := image.Rect(0, 0, 40, 20)
	pal := image.NewPaletted(rect, color.Palette{color.Black, color.NRGBA{255, 0, 0, 128}})
	gray := image.NewGray(rect)
	gray16 := image.NewGray16(rect)
	rgba64 := image.NewNRGBA64(rect)
	rgba := image.NewNRGBA(rect)
	for y := range 20 {
		for x := range 40 {
			pal.SetColorIndex(x, y, uint8((x+y)%2))
			gray.SetGray(x, y, color.Gray{uint8(x * 6)})
			gray16.SetGray16(x, y, color.Gray16{uint16(y * 3000)})
			rgba64.SetNRGBA64(x, y, color.NRGBA64{65535, uint16(x * 1600), 0, 40000})
			rgba.SetNRGBA(x, y, color.NRGBA{0, 0, 255, uint8(x * 6)})
		}
	}
	for name, img := range map[string]image.Image{"paletted": pal, "gray": gray, "gray16": gray16, "nrgba64": rgba64, "translucent": rgba} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := png.Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			wm := textWM("", nil)
			wm.ImagePng = buf.Bytes()
			path := watermarked(t, in, wm)
			if list := run(t, "pdfimages", "-list", path); !strings.Contains(list, " 40 ") {
				t.Errorf("no 40-pixel-wide image in the output:\n%s", list)
			}
		})
	}
}

func TestWatermarkInvalidOptions(t *testing.T) {
	in := rawPDF("BAD", 1, 0)
	tests := []struct {
		name string
		wm   *jobspb.Watermark
	}{
		{"no text nor image", textWM("", nil)},
		{"blank text", textWM("   ", nil)},
		{"text and image", func() *jobspb.Watermark { w := textWM("X", nil); w.ImagePng = pngImage(t, 8, 8); return w }()},
		{"image not PNG", func() *jobspb.Watermark { w := textWM("", nil); w.ImagePng = []byte("GIF89a....."); return w }()},
		{"image PNG damaged", func() *jobspb.Watermark {
			w := textWM("", nil)
			img := pngImage(t, 64, 64)
			w.ImagePng = img[:len(img)-40]
			return w
		}()},
		{"image PNG bomb (10M x 10M declared)", func() *jobspb.Watermark {
			w := textWM("", nil)
			w.ImagePng = limitstest.BombPNG(10_000_000, 10_000_000)
			return w
		}()},
		{"image PNG over the pixel bound", func() *jobspb.Watermark { w := textWM("", nil); w.ImagePng = limitstest.BombPNG(5000, 5000); return w }()},
		{"image over the byte bound", func() *jobspb.Watermark {
			w := textWM("", nil)
			w.ImagePng = append(pngImage(t, 8, 8), make([]byte, 600<<10)...)
			return w
		}()},
		{"bad color", textWM("X", func(w *jobspb.Watermark) { w.Color = "red" })},
		{"bad color digits", textWM("X", func(w *jobspb.Watermark) { w.Color = "#ggg" })},
		{"opacity > 1", textWM("X", func(w *jobspb.Watermark) { w.Opacity = 1.5 })},
		{"opacity < 0", textWM("X", func(w *jobspb.Watermark) { w.Opacity = -0.1 })},
		{"negative font size", textWM("X", func(w *jobspb.Watermark) { w.FontSize = -3 })},
		{"bad position", textWM("X", func(w *jobspb.Watermark) { w.Position = "middle" })},
		{"bad pages", textWM("X", func(w *jobspb.Watermark) { w.Pages = "first" })},
		{"bad range", textWM("X", func(w *jobspb.Watermark) { w.Pages = "1-" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Watermark(context.Background(), bytes.NewReader(in), &out, tt.wm)
			if !errors.Is(err, ErrInvalidWatermark) {
				t.Fatalf("err = %v, want ErrInvalidWatermark", err)
			}
			if out.Len() != 0 {
				t.Errorf("wrote %d bytes on error", out.Len())
			}
		})
	}
}

func TestWatermarkBadInput(t *testing.T) {
	needTools(t, "qpdf")
	good := rawPDF("GOOD", 2, 3)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "plain.pdf"), good)
	run(t, "qpdf", "--encrypt", "user", "owner", "256", "--", filepath.Join(dir, "plain.pdf"), filepath.Join(dir, "locked.pdf"))
	tests := []struct {
		name string
		data []byte
	}{
		{"text", []byte("just text")},
		{"empty", nil},
		{"truncated", good[:len(good)/2]},
		{"password", readFile(t, filepath.Join(dir, "locked.pdf"))},
	}
	for _, tt := range tests {
		for _, wm := range []*jobspb.Watermark{textWM("X", nil), textWM("X", func(w *jobspb.Watermark) { w.Pages = "99" }), nil} {
			var out bytes.Buffer
			err := Watermark(context.Background(), bytes.NewReader(tt.data), &out, wm)
			var be *BadInputError
			if wm == nil && (tt.name == "truncated" || tt.name == "password") {
				// A nil watermark copies the input: only its header is checked.
				continue
			}
			if !errors.As(err, &be) {
				t.Errorf("%s (wm %v): err = %v, want *BadInputError", tt.name, wm, err)
			}
		}
	}
}

func TestWatermarkNil(t *testing.T) {
	in := rawPDF("NIL", 2, 3)
	var out bytes.Buffer
	if err := Watermark(context.Background(), bytes.NewReader(in), &out, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), in) {
		t.Error("nil watermark: output differs from input")
	}
}

func TestWatermarkCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Watermark(ctx, bytes.NewReader(rawPDF("C", 2, 3)), &bytes.Buffer{}, textWM("X", nil))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestMergeThenWatermark is the merge job with a watermark: the stamp lands
// on the merged document's pages.
func TestMergeThenWatermark(t *testing.T) {
	needTools(t, "pdftotext")
	var merged bytes.Buffer
	if _, err := Merge(context.Background(), []Input{
		{"a.pdf", bytes.NewReader(rawPDF("MA", 2, 3))},
		{"b.pdf", bytes.NewReader(qpdfPDF(t, "MB", 2))},
	}, &merged); err != nil {
		t.Fatal(err)
	}
	path := watermarked(t, merged.Bytes(), textWM("MERGEDMARK", func(w *jobspb.Watermark) { w.Pages = "2-3"; w.Rotation = 0 }))
	for p, want := range map[int]bool{1: false, 2: true, 3: true, 4: false} {
		if got := hasText(pageText(t, path, p), "MERGEDMARK"); got != want {
			t.Errorf("page %d: watermark = %v, want %v", p, got, want)
		}
	}
	_ = os.Remove(path)
}

// TestWatermarkMutated: damaged PDFs are stamped or rejected with a
// *BadInputError, never a panic or another error.
func TestWatermarkMutated(t *testing.T) {
	needTools(t, "qpdf")
	sources := [][]byte{rawPDF("WMUT", 3, 3), qpdfPDF(t, "WQMUT", 3)}
	r := rand.New(rand.NewPCG(3, 5))
	ok, bad := 0, 0
	for i := range 200 {
		b := bytes.Clone(sources[i%2])
		if i%2 == 0 {
			for range 1 + r.IntN(8) {
				b[r.IntN(len(b))] = byte(r.UintN(256))
			}
		} else {
			b = b[:r.IntN(len(b))]
		}
		err := Watermark(context.Background(), bytes.NewReader(b), &bytes.Buffer{}, textWM("M", nil))
		var be *BadInputError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &be):
			bad++
		default:
			t.Fatalf("mutant %d: err = %v (%T), want nil or *BadInputError", i, err, err)
		}
	}
	t.Logf("mutants: %d stamped, %d rejected", ok, bad)
}
