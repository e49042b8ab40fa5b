package pdfium

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/testenv/rawpdf"
	"github.com/gen2brain/webp"
	gopdfium "github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
)

// poppler runs a poppler tool (pdftotext, pdftoppm) on pdf written to a
// file; the test is skipped without it, the literal checks still ran.
func poppler(t *testing.T, tool string, pdf []byte, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s not installed", tool)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pdf")
	if err := os.WriteFile(in, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, append(args, in, filepath.Join(dir, "out"))...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", tool, err, out)
	}
	return dir
}

// pageWords splits text at form feeds into pages of words.
func pageWords(text string) [][]string {
	pages := strings.Split(text, "\f")
	if pages[len(pages)-1] == "" {
		pages = pages[:len(pages)-1]
	}
	w := make([][]string, len(pages))
	for i, p := range pages {
		w[i] = strings.Fields(p)
	}
	return w
}

// TestText: PDFium's text against literal words on PDFs written here, and
// against pdftotext -layout (same words in the same order on each page) on
// those and on Chromium's; one form feed ends each page asked, in the order
// asked.
func TestText(t *testing.T) {
	e := engine(t)
	gen := rawpdf.TextPages(612, 792, []string{"Hello world", "second line here"}, []string{"Page two (text)"}, []string{"Third page"})
	for _, tc := range []struct {
		name  string
		pdf   []byte
		pages []int
		want  [][]string // words per page; nil: only compared with pdftotext
	}{
		{"generated all", gen, nil, [][]string{{"Hello", "world", "second", "line", "here"}, {"Page", "two", "(text)"}, {"Third", "page"}}},
		{"generated reordered", gen, []int{3, 1}, [][]string{{"Third", "page"}, {"Hello", "world", "second", "line", "here"}}},
		{"generated one page", gen, []int{2}, [][]string{{"Page", "two", "(text)"}}},
		{"chromium tagged", readFile(t, "testdata/tagged.pdf"), nil, nil},
		{"chromium untagged", readFile(t, "testdata/untagged.pdf"), nil, [][]string{strings.Fields("Project Plan The plan has three parts. Goals • Ship the reader • Test it 1. Write the code 2. Measure it Done.")}},
		{"chromium 2 pages", readFile(t, "../pdfedit/testdata/chromium.pdf"), nil, [][]string{strings.Fields("CHROMEPAGE01 Rendered by Chromium for the pdfedit tests."), strings.Fields("CHROMEPAGE02 Second page.")}},
		{"chromium 50 pages, some", readFile(t, "testdata/long.pdf"), []int{1, 17, 50}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Text(context.Background(), tc.pdf, tc.pages)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(got, "\f") {
				t.Errorf("text does not end with a form feed: %q", got)
			}
			words := pageWords(got)
			if tc.want != nil && !slices.EqualFunc(words, tc.want, slices.Equal) {
				t.Errorf("words:\n got %q\nwant %q", words, tc.want)
			}
			pages := tc.pages
			if pages == nil {
				for i := range len(words) {
					pages = append(pages, i+1)
				}
			}
			if len(words) != len(pages) {
				t.Fatalf("%d pages of text, want %d", len(words), len(pages))
			}
			for i, p := range pages {
				dir := poppler(t, "pdftotext", tc.pdf, "-layout", "-enc", "UTF-8", "-f", strconv.Itoa(p), "-l", strconv.Itoa(p))
				ref := pageWords(string(readFile(t, filepath.Join(dir, "out"))))
				if len(ref) != 1 || !slices.Equal(words[i], ref[0]) {
					t.Errorf("page %d differs from pdftotext -layout:\n pdfium    %q\n pdftotext %q", p, words[i], ref)
				}
			}
		})
	}
}

// TestImages: each image decodes in the format asked at page points × dpi /
// 72 pixels (rounded up), the size pdftoppm -r dpi gives too, with ink on
// it where the page has text, and on white paper.
func TestImages(t *testing.T) {
	e := engine(t)
	letter := rawpdf.TextPages(612, 792, []string{"Hello"})
	odd := rawpdf.TextPages(200.5, 100.25, []string{"x"}, []string{"y"})
	for _, tc := range []struct {
		name   string
		pdf    []byte
		pages  []int
		format string
		dpi    int
		w, h   int // of each page
	}{
		{"png 72", letter, nil, "png", 72, 612, 792},
		{"png default dpi", letter, nil, "", 0, 612, 792},
		{"png 150", letter, nil, "png", 150, 1275, 1650},
		{"jpeg 96", letter, nil, "jpeg", 96, 816, 1056},
		{"webp 100", letter, nil, "webp", 100, 850, 1100},
		{"odd size rounds up", odd, []int{2, 1}, "png", 300, 836, 418},
		{"transparency on white", transparentPDF(), nil, "jpeg", 72, 612, 792},
		{"chromium tagged", readFile(t, "testdata/tagged.pdf"), nil, "jpeg", 72, 612, 792},
		{"chromium 2 pages", readFile(t, "../pdfedit/testdata/chromium.pdf"), nil, "png", 100, 850, 1100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imgs, err := e.Images(context.Background(), tc.pdf, tc.pages, tc.format, tc.dpi, 80)
			if err != nil {
				t.Fatal(err)
			}
			pages := tc.pages
			if pages == nil {
				for i := range len(imgs) {
					pages = append(pages, i+1)
				}
			}
			if len(imgs) != len(pages) || len(imgs) == 0 {
				t.Fatalf("%d images for pages %v", len(imgs), pages)
			}
			for i, b := range imgs {
				img := decode(t, tc.format, b)
				if s := img.Bounds().Size(); s.X != tc.w || s.Y != tc.h {
					t.Errorf("page %d: %v, want %dx%d", pages[i], s, tc.w, tc.h)
				}
				if dark, corner := ink(img); dark == 0 || corner < 0xe000 {
					t.Errorf("page %d: %d dark pixels, corner grey %#x: want text on white", pages[i], dark, corner)
				}
				dpi := cmp.Or(tc.dpi, 72)
				dir := poppler(t, "pdftoppm", tc.pdf, "-png", "-r", strconv.Itoa(dpi), "-f", strconv.Itoa(pages[i]), "-l", strconv.Itoa(pages[i]), "-singlefile")
				ref := decode(t, "png", readFile(t, filepath.Join(dir, "out.png")))
				if ref.Bounds() != img.Bounds() {
					t.Errorf("page %d: %v, pdftoppm -r %d: %v", pages[i], img.Bounds(), dpi, ref.Bounds())
				}
			}
		})
	}
}

// TestOnWhite: pixels PDFium leaves transparent are laid on white paper,
// half-transparent ones blended, opaque ones kept.
func TestOnWhite(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 3, 1))
	copy(img.Pix, []uint8{0, 0, 0, 0, 255, 0, 0, 128, 10, 20, 30, 255})
	onWhite(img)
	if want := []uint8{255, 255, 255, 255, 255, 127, 127, 255, 10, 20, 30, 255}; !slices.Equal(img.Pix, want) {
		t.Errorf("got %v, want %v", img.Pix, want)
	}
}

func decode(t *testing.T, format string, b []byte) image.Image {
	t.Helper()
	var img image.Image
	var err error
	switch format {
	case "", "png":
		img, err = png.Decode(bytes.NewReader(b))
	case "jpeg":
		img, err = jpeg.Decode(bytes.NewReader(b))
	case "webp":
		img, err = webp.Decode(bytes.NewReader(b))
	}
	if err != nil {
		t.Fatalf("decode %s: %v", format, err)
	}
	return img
}

// ink reads the top-left corner's grey level and counts the pixels darker
// than it by half. (gen2brain/webp decodes WebP's limited-range YUV as
// full range: its white reads 0xebeb.)
func ink(img image.Image) (dark int, corner uint32) {
	b := img.Bounds()
	grey := func(x, y int) uint32 {
		r, g, bl, _ := img.At(x, y).RGBA()
		return (r + g + bl) / 3
	}
	corner = grey(b.Min.X, b.Min.Y)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if grey(x, y) < corner/2 {
				dark++
			}
		}
	}
	return dark, corner
}

// TestMarkdown: Chromium's tagged output read from its tags (headings by
// level, bullet and numbered lists, a table), its untagged output from the
// layout (headings by font size, bullets and numbers, paragraphs).
func TestMarkdown(t *testing.T) {
	e := engine(t)
	for _, tc := range []struct {
		name string
		pdf  []byte
		want string
	}{
		{"tagged", readFile(t, "testdata/tagged.pdf"), `# Annual Report

This report covers the fiscal year.

## Highlights

- Revenue grew
- Costs fell

1. First step
2. Second step

### Figures

| Region | Sales |
| --- | --- |
| North | 120 |
| South | 80 |

The end.
`},
		{"untagged", readFile(t, "testdata/untagged.pdf"), `# Project Plan

The plan has three parts.

## Goals

- Ship the reader
- Test it

1. Write the code
2. Measure it

Done.
`},
		{"generated, one size", rawpdf.TextPages(612, 792, []string{"Just text", "and more"}), "Just text and more\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Markdown(context.Background(), tc.pdf, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestMarkdownLong: every heading and table of a 50-page tagged document.
func TestMarkdownLong(t *testing.T) {
	md, err := engine(t).Markdown(context.Background(), readFile(t, "testdata/long.pdf"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for p := 1; p <= 50; p++ {
		if !strings.Contains(md, fmt.Sprintf("\n# Chapter %d\n", p)) && !strings.HasPrefix(md, fmt.Sprintf("# Chapter %d\n", p)) {
			t.Errorf("no heading for chapter %d", p)
		}
	}
	if n := strings.Count(md, "| Region | Sales | Cost |\n| --- | --- | --- |\n"); n != 50 {
		t.Errorf("%d tables, want 50", n)
	}
	if n := strings.Count(md, "\n- "); n != 150 {
		t.Errorf("%d list items, want 150", n)
	}
}

// TestLayoutBlocks: the rules for untagged pages on their own.
func TestLayoutBlocks(t *testing.T) {
	body := func(text string, y float64) line { return line{text: text, size: 10, x: 72, y: y} }
	for _, tc := range []struct {
		name  string
		lines []line
		want  string
	}{
		{"sizes rank headings", []line{
			{text: "Title", size: 24, y: 700}, body("the body's font size is the one most letters have", 680),
			{text: "Part", size: 16, y: 650}, body("and so the body is at 10 points here", 630),
			{text: "Sub", size: 12.5, y: 600}, {text: "11 < 1.2×10", size: 11, y: 580},
		}, "# Title\n\nthe body's font size is the one most letters have\n\n## Part\n\nand so the body is at 10 points here\n\n### Sub\n\n11 \\< 1.2×10\n"},
		{"a long large line is a paragraph", []line{{text: strings.Repeat("word ", 30), size: 20, y: 700}, body("b", 680), body("c", 668)},
			strings.TrimSpace(strings.Repeat("word ", 30)) + "\n\nb c\n"},
		{"paragraph gap", []line{body("one", 700), body("two", 688), body("three", 650)}, "one two\n\nthree\n"},
		{"lists", []line{body("• a", 700), body("wrapped", 688), body("- b", 676), body("3) c", 664), body("-5 degrees", 652)},
			"- a\n\nwrapped\n\n- b\n\n3. c\n\n-5 degrees\n"},
		{"wrapped item is indented", []line{body("• a", 700), {text: "goes on", size: 10, x: 84, y: 688}},
			"- a goes on\n"},
		{"markdown in text is escaped", []line{body("# not a heading", 700), body("use *stars* and [links]", 650), body("1. no", 600)},
			"\\# not a heading\n\nuse \\*stars\\* and \\[links\\]\n\n1. no\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(layoutBlocks(tc.lines)); got != tc.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}

// TestTreeBlocks: structure trees to blocks, including nesting PDFium's
// reading of Chromium's tags does not show.
func TestTreeBlocks(t *testing.T) {
	mc := func(id int) *node { return &node{mcid: id} }
	el := func(typ string, kids ...*node) *node { return &node{typ: typ, mcid: -1, kids: kids} }
	text := map[int]string{1: "Title ", 2: "a | b", 3: "1.", 4: "first", 5: "•", 6: "inner", 7: "loose", 8: "para"}
	for _, tc := range []struct {
		name string
		tree *node
		want string
	}{
		{"h4 and escaped cell", el("Document", el("H4", mc(1)), el("Table", el("TBody", el("TR", el("TD", mc(2)), el("TD"))))),
			"#### Title\n\n| a \\| b |  |\n| --- | --- |\n"},
		{"nested list", el("L", el("LI", el("Lbl", mc(3)), el("LBody", mc(4), el("L", el("LI", el("Lbl", mc(5)), el("LBody", mc(6))))))),
			"1. first\n   - inner\n"},
		{"loose text beside blocks", el("Div", mc(7), el("P", mc(8))), "loose\n\npara\n"},
		{"figure alt", el("Figure", mc(8)), "para\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(tc.tree.blocks(text)); got != tc.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}

// TestHostile: every bad input fails its own call with a *BadInputError
// naming the field to blame, and the engine serves the next call.
func TestHostile(t *testing.T) {
	e := engine(t)
	ctx := context.Background()
	good := rawpdf.TextPages(612, 792, []string{"still here"})
	tagged := readFile(t, "testdata/tagged.pdf")
	many := manyPagesPDF(100_000)
	text := func(pdf []byte, pages ...int) func() error {
		return func() error { _, err := e.Text(ctx, pdf, pages); return err }
	}
	images := func(pdf []byte, format string, dpi, quality int, pages ...int) func() error {
		return func() error { _, err := e.Images(ctx, pdf, pages, format, dpi, quality); return err }
	}
	for _, tc := range []struct {
		name  string
		call  func() error
		param string // "": no error expected
		msg   string // in the message
	}{
		{"empty", text(nil), "file", "empty"},
		{"not a PDF", text([]byte("hello, I am a text file")), "file", "not a PDF"},
		{"only a header", text([]byte("%PDF-1.7\n")), "file", "not a PDF"},
		{"encrypted with a password", text(readFile(t, "testdata/encrypted.pdf")), "file", "password"},
		{"100,000 pages, all", text(many), "pages", "100000 pages"},
		{"100,000 pages, the last", text(many, 100_000), "", ""},
		{"page 0", text(good, 0), "pages", "page 0 does not exist"},
		{"page past the end", text(good, 2), "pages", "page 2 does not exist"},
		{"too many pages asked", text(good, make([]int, DefaultMaxPages+1)...), "pages", "at most"},
		{"huge MediaBox at 600 dpi", images(rawpdf.TextPages(14400, 14400, []string{"x"}), "png", 600, 0), "dpi", "megapixels"},
		{"letter at 600 dpi", images(good, "png", 600, 0), "", ""}, // 33.7 MP
		{"dpi past 600", images(good, "png", 601, 0), "dpi", "between 1 and 600"},
		{"negative dpi", images(good, "png", -1, 0), "dpi", "between"},
		{"format", images(good, "gif", 72, 0), "format", "png, jpeg or webp"},
		{"quality", images(good, "jpeg", 72, 101), "quality", "between 1 and 100"},
		{"flate bomb past the memory bound", text(bombPDF(512 << 20)), "file", "memory"},
		{"flate bomb under it", text(bombPDF(32 << 20)), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var bad *BadInputError
			switch {
			case tc.param == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.param == "":
			case !errors.As(err, &bad):
				t.Fatalf("got %v (%T), want a *BadInputError", err, err)
			case bad.Param != tc.param || !strings.Contains(bad.Msg, tc.msg):
				t.Errorf("got %s: %q, want %s: …%s…", bad.Param, bad.Msg, tc.param, tc.msg)
			}
			if got, err := e.Text(ctx, good, nil); err != nil || got != "still here\n\f" {
				t.Fatalf("next call: %q, %v", got, err)
			}
		})
	}

	// Truncated files: PDFium repairs what it can; either way an answer
	// (text or a BadInputError), and the next call is served.
	for _, n := range []int{10, 100, 1000, len(tagged) / 2, len(tagged) - 20} {
		_, err := e.Text(ctx, tagged[:n], nil)
		var bad *BadInputError
		if err != nil && !errors.As(err, &bad) {
			t.Errorf("truncated at %d: %v", n, err)
		}
	}
	if _, err := e.Markdown(ctx, tagged, nil); err != nil {
		t.Fatalf("after truncated files: %v", err)
	}
}

// TestPanic: a panic inside a call is an error of that call, not a crash,
// and the instance it broke is replaced.
func TestPanic(t *testing.T) {
	e := engine(t)
	err := e.run(context.Background(), rawpdf.TextPages(612, 792, []string{"x"}), func(gopdfium.Pdfium, references.FPDF_DOCUMENT) error {
		panic("boom")
	})
	var bad *BadInputError
	if err == nil || errors.As(err, &bad) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("got %v, want an internal error naming the panic", err)
	}
	for range 3 { // more calls than instances: a replaced one serves too
		if _, err := e.Text(context.Background(), rawpdf.TextPages(612, 792, []string{"x"}), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecycle: an instance that grew past RecycleAbove on a document is
// replaced by a fresh one (the pool's instances are all small after it).
func TestRecycle(t *testing.T) {
	e := engine(t)
	if _, err := e.Text(context.Background(), bombPDF(80<<20), nil); err != nil {
		t.Fatal(err)
	}
	var ins []gopdfium.Pdfium
	for range e.cfg.Instances {
		in, err := e.pool.GetInstanceWithContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	for _, in := range ins {
		if n := memorySize(in); n < 1<<20 || n > 64<<20 {
			t.Errorf("instance memory %d MiB: want a fresh one (memorySize reads 0 if go-pdfium changed)", n>>20)
		}
		in.Close()
	}
}

// TestContext: a done context fails the call at once; a deadline stops a
// long document at the next page, and on an Interruptible engine a long
// call mid-way (the instance is killed and replaced either way); the next
// call is served.
func TestContext(t *testing.T) {
	e := engine(t)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Text(done, rawpdf.TextPages(612, 792, []string{"x"}), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	long := readFile(t, benchPDF)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := e.Text(ctx, long, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline between pages: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopped after %v", d)
	}
	if _, err := e.Text(context.Background(), rawpdf.TextPages(612, 792, []string{"x"}), nil); err != nil {
		t.Fatal(err)
	}

	ie, err := New(context.Background(), Config{Instances: 1, MaxMemory: 256 << 20, Interruptible: true, InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ie.Close()
	// Inflating and parsing 200 MB of content takes seconds here.
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = ie.Text(ctx, bombPDF(200<<20), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline mid-call: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopped after %v", d)
	}
	if _, err := ie.Text(context.Background(), rawpdf.TextPages(612, 792, []string{"x"}), nil); err != nil {
		t.Fatal(err)
	}
}

// TestTextSpread: with idle instances, the pages of a long document are
// read in ranges on several at once; the text is the one page after page
// on one instance gives, in the order asked, and an error in any range
// is the call's.
func TestTextSpread(t *testing.T) {
	e := engine(t) // 2 instances
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: Text does not spread")
	}
	long := readFile(t, benchPDF)
	pages := []int{50, 3, 1, 2, 49, 7, 7, 20, 33, 12, 11, 10, 9, 8, 40, 41, 42}
	var want strings.Builder
	for _, p := range pages {
		one, err := e.Text(context.Background(), long, []int{p})
		if err != nil {
			t.Fatal(err)
		}
		want.WriteString(one)
	}
	got, err := e.Text(context.Background(), long, pages)
	if err != nil {
		t.Fatal(err)
	}
	if got != want.String() {
		t.Errorf("spread text differs from page by page:\n%q\nwant\n%q", got, want.String())
	}
	all, err := e.Text(context.Background(), long, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(all, "\f"); n != 50 {
		t.Errorf("%d pages, want 50", n)
	}
	// The output bound holds across ranges, in bytes, in-process and in
	// children, on one instance and spread: the same answer either way.
	for _, inProcess := range []bool{true, false} {
		for _, instances := range []int{1, 2} {
			small, err := New(context.Background(), Config{Instances: instances, MaxMemory: 256 << 20, MaxOutput: int64(len(all) / 2), InProcess: inProcess})
			if err != nil {
				t.Fatal(err)
			}
			var bad *BadInputError
			if _, err := small.Text(context.Background(), long, nil); !errors.As(err, &bad) || bad.Param != "pages" {
				t.Errorf("in-process %v, %d instances: past MaxOutput: %v", inProcess, instances, err)
			}
			if _, err := small.Text(context.Background(), long, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}); err != nil {
				t.Errorf("in-process %v, %d instances: under MaxOutput: %v", inProcess, instances, err)
			}
			small.Close()
		}
	}
}

// TestConcurrent: more callers than instances, each gets its own answer.
func TestConcurrent(t *testing.T) {
	callAtOnce(t, engine(t), 8)
}

// callAtOnce has callers ask e for a text of their own at once, and checks
// that each gets its own.
func callAtOnce(t *testing.T, e *Engine, callers int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			want := fmt.Sprintf("caller %d", i)
			got, err := e.Text(context.Background(), rawpdf.TextPages(612, 792, []string{want}), nil)
			if err == nil && got != want+"\n\f" {
				err = fmt.Errorf("got %q, want %q", got, want)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// FuzzText: whatever the bytes, Text answers text or an error, never a
// crash; the seeds run in plain `go test`.
func FuzzText(f *testing.F) {
	tagged := readFile(f, "testdata/tagged.pdf")
	f.Add(rawpdf.TextPages(612, 792, []string{"seed"}))
	f.Add(tagged[:len(tagged)/3])
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>"))
	f.Add(bombPDF(4 << 20))
	// A page tree whose /Count says 5 of its 1 page.
	f.Add(rawpdf.Build("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 5 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>", rawpdf.Stream("", "BT ET")))
	f.Fuzz(func(t *testing.T, pdf []byte) {
		got, err := engine(t).Text(context.Background(), pdf, nil)
		var bad *BadInputError
		if err != nil && !errors.As(err, &bad) {
			t.Fatalf("not a client error: %v", err)
		}
		if err == nil && !strings.HasSuffix(got, "\f") {
			t.Fatalf("no form feed: %q", got)
		}
	})
}
