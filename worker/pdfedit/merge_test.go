package pdfedit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/limits"
	"github.com/docrender/docrender/proto/jobspb"
)

type doc struct {
	name  string // client-side name
	label string // page label prefix, see pageLabel
	pages int
	data  []byte
}

func rawDoc(name, label string, pages int) doc {
	return doc{name, label, pages, rawPDF(label, pages, 3)}
}

func qpdfDoc(tb testing.TB, name, label string, pages int) doc {
	return doc{name, label, pages, qpdfPDF(tb, label, pages)}
}

func inputsOf(docs []doc) []Input {
	in := make([]Input, len(docs))
	for i, d := range docs {
		in[i] = Input{Name: d.name, R: bytes.NewReader(d.data)}
	}
	return in
}

// checkMerged verifies out with pdfinfo and pdftotext: the page count is the
// sum and every page carries the label of the right input, in order.
func checkMerged(t *testing.T, out []byte, pages int, docs []doc) {
	t.Helper()
	path := tmpPDF(t, out)
	want := 0
	for _, d := range docs {
		want += d.pages
	}
	if pages != want {
		t.Errorf("Merge returned %d pages, want %d", pages, want)
	}
	if got := pdfinfoPages(t, path); got != want {
		t.Fatalf("pdfinfo: %d pages, want %d", got, want)
	}
	n := 0
	for _, d := range docs {
		for p := 1; p <= d.pages; p++ {
			n++
			text := pageText(t, path, n)
			if !strings.Contains(text, pageLabel(d.label, p)) {
				t.Errorf("merged page %d: want %s, got text %q", n, pageLabel(d.label, p), firstLine(text))
			}
		}
	}
	// qpdf --check: the output is structurally sound.
	run(t, "qpdf", "--check", path)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func TestMerge(t *testing.T) {
	needTools(t, "qpdf", "pdfinfo", "pdftotext")
	a, b, c := rawDoc("a.pdf", "ALPHA", 3), rawDoc("b.pdf", "BRAVO", 2), rawDoc("c.pdf", "CHARLIE", 1)
	qa, qb := qpdfDoc(t, "qa.pdf", "QALPHA", 4), qpdfDoc(t, "qb.pdf", "QBRAVO", 10)
	v20 := rawDoc("v20.pdf", "VTWENTY", 2)
	v20path := tmpPDF(t, v20.data)
	run(t, "qpdf", "--force-version=2.0", "--replace-input", v20path)
	v20.data = readFile(t, v20path)

	tests := []struct {
		name string
		docs []doc
	}{
		{"two", []doc{a, b}},
		{"order kept reversed", []doc{b, a}},
		{"three", []doc{c, a, b}},
		{"single", []doc{b}},
		{"same file twice", []doc{a, c, a}},
		{"qpdf object streams", []doc{qa, qb}},
		{"mixed producers", []doc{a, qa, b, qb, c}},
		{"PDF 2.0 after 1.4", []doc{a, v20}},
		{"PDF 2.0 first", []doc{v20, qa}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			pages, err := Merge(context.Background(), inputsOf(tt.docs), &out)
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			checkMerged(t, out.Bytes(), pages, tt.docs)
		})
	}
}

// TestMergeChromium merges PDFs printed by Chromium, the workers' own
// producer, when a Chromium is installed.
func TestMergeChromium(t *testing.T) {
	needTools(t, "qpdf", "pdfinfo", "pdftotext")
	chrome := ""
	for _, c := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(c); err == nil {
			chrome = p
			break
		}
	}
	if chrome == "" {
		t.Skip("no Chromium installed")
	}
	print := func(label string, pages int) doc {
		dir := t.TempDir()
		var html strings.Builder
		html.WriteString("<!doctype html><html><body style='font-family:sans-serif'>")
		for p := 1; p <= pages; p++ {
			html.WriteString("<div style='break-after:page'><h1>" + pageLabel(label, p) + "</h1><p>Rendered by Chromium.</p></div>")
		}
		html.WriteString("</body></html>")
		in := filepath.Join(dir, "in.html")
		out := filepath.Join(dir, "out.pdf")
		writeFile(t, in, []byte(html.String()))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, chrome, "--headless", "--no-sandbox", "--disable-gpu",
			"--user-data-dir="+filepath.Join(dir, "profile"), "--no-pdf-header-footer",
			"--print-to-pdf="+out, "file://"+in)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("chromium cannot print here: %v\n%s", err, b)
		}
		return doc{label + ".pdf", label, pages, readFile(t, out)}
	}
	docs := []doc{print("CHROMEA", 2), rawDoc("x.pdf", "XRAY", 1), print("CHROMEB", 3)}
	var out bytes.Buffer
	pages, err := Merge(context.Background(), inputsOf(docs), &out)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	checkMerged(t, out.Bytes(), pages, docs)

	// And a watermark on a Chromium PDF.
	path := watermarked(t, docs[2].data, textWM("CHROMEMARK", func(w *jobspb.Watermark) { w.Pages = "2" }))
	for p := 1; p <= 3; p++ {
		if got := hasText(pageText(t, path, p), "CHROMEMARK"); got != (p == 2) {
			t.Errorf("Chromium PDF page %d: watermark = %v, want %v", p, got, p == 2)
		}
	}
}

func TestMergeBadInput(t *testing.T) {
	needTools(t, "qpdf")
	good := rawPDF("GOOD", 2, 3)
	real := qpdfPDF(t, "REAL", 6)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "plain.pdf"), good)
	run(t, "qpdf", "--encrypt", "user", "owner", "256", "--", filepath.Join(dir, "plain.pdf"), filepath.Join(dir, "locked.pdf"))
	run(t, "qpdf", "--encrypt", "", "owner", "256", "--", filepath.Join(dir, "plain.pdf"), filepath.Join(dir, "restricted.pdf"))
	locked := readFile(t, filepath.Join(dir, "locked.pdf"))
	restricted := readFile(t, filepath.Join(dir, "restricted.pdf"))

	rnd := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		rnd[i] = byte(r.UintN(256))
	}

	tests := []struct {
		name   string
		data   []byte
		reason string // substring of Reason
	}{
		{"random.pdf", rnd, "not a PDF"},
		{"half.pdf", real[:len(real)/2], "corrupt"},
		{"half-raw.pdf", good[:len(good)/2], "corrupt"},
		{"locked.pdf", locked, "password"},
		{"restricted.pdf", restricted, "encrypted"},
		{"notes.pdf", []byte("Meeting notes\nThis is a plain text file, not a PDF.\n"), "not a PDF"},
		{"empty.pdf", nil, "empty"},
		{"header-only.pdf", []byte("%PDF-1.7\n%garbage after the header\n"), "corrupt"},
		{"pdf-header-random.pdf", append([]byte("%PDF-1.4\n"), rnd...), "corrupt"},
	}
	for _, tt := range tests {
		for _, at := range []string{"first", "middle", "last"} {
			t.Run(tt.name+"/"+at, func(t *testing.T) {
				bad := Input{Name: tt.name, R: bytes.NewReader(tt.data)}
				ins := []Input{{"one.pdf", bytes.NewReader(good)}, {"two.pdf", bytes.NewReader(real)}}
				switch at {
				case "first":
					ins = append([]Input{bad}, ins...)
				case "middle":
					ins = []Input{ins[0], bad, ins[1]}
				default:
					ins = append(ins, bad)
				}
				var out bytes.Buffer
				pages, err := Merge(context.Background(), ins, &out)
				var be *BadInputError
				if !errors.As(err, &be) {
					t.Fatalf("Merge: err = %v (%T), want *BadInputError", err, err)
				}
				if be.Name != tt.name {
					t.Errorf("BadInputError.Name = %q, want %q", be.Name, tt.name)
				}
				if !strings.Contains(be.Reason, tt.reason) {
					t.Errorf("BadInputError.Reason = %q, want it to mention %q", be.Reason, tt.reason)
				}
				if !strings.Contains(be.Error(), tt.name) {
					t.Errorf("Error() = %q does not name the file", be.Error())
				}
				if pages != 0 || out.Len() != 0 {
					t.Errorf("Merge wrote %d bytes, %d pages on error", out.Len(), pages)
				}
			})
		}
	}
}

// TestMergeFirstBadInputWins: with several bad inputs, the first in input
// order is named, whatever the scheduling of the concurrent reads.
func TestMergeFirstBadInputWins(t *testing.T) {
	good := rawPDF("GOOD", 2, 3)
	for range 20 {
		ins := []Input{
			{"ok1.pdf", bytes.NewReader(good)},
			{"ok2.pdf", bytes.NewReader(good)},
			{"bad1.pdf", bytes.NewReader([]byte("not a pdf"))},
			{"ok3.pdf", bytes.NewReader(good)},
			{"bad2.pdf", bytes.NewReader([]byte("nor this"))},
		}
		_, err := Merge(context.Background(), ins, &bytes.Buffer{})
		var be *BadInputError
		if !errors.As(err, &be) || be.Name != "bad1.pdf" {
			t.Fatalf("err = %v, want *BadInputError naming bad1.pdf", err)
		}
	}
}

// TestMergeMutated feeds damaged copies of a real PDF: each either merges
// into a PDF whose structure qpdf reads or is a *BadInputError naming it. Never a panic,
// never another error.
func TestMergeMutated(t *testing.T) {
	needTools(t, "qpdf")
	sources := [][]byte{rawPDF("MUT", 3, 3), qpdfPDF(t, "QMUT", 3)}
	r := rand.New(rand.NewPCG(7, 11))
	ok, bad := 0, 0
	for i := range 300 {
		src := sources[i%len(sources)]
		b := bytes.Clone(src)
		switch i % 3 {
		case 0: // flip a few bytes
			for range 1 + r.IntN(8) {
				b[r.IntN(len(b))] = byte(r.UintN(256))
			}
		case 1: // cut at a random point
			b = b[:r.IntN(len(b))]
		case 2: // overwrite a run with zeros
			at := r.IntN(len(b))
			for j := at; j < min(len(b), at+1+r.IntN(64)); j++ {
				b[j] = 0
			}
		}
		ins := []Input{{"good.pdf", bytes.NewReader(src)}, {"mutant.pdf", bytes.NewReader(b)}}
		var out bytes.Buffer
		_, err := Merge(context.Background(), ins, &out)
		if err != nil {
			var be *BadInputError
			if !errors.As(err, &be) || be.Name != "mutant.pdf" {
				t.Fatalf("mutant %d: err = %v (%T), want *BadInputError naming mutant.pdf", i, err, err)
			}
			bad++
			continue
		}
		// Content streams are copied as they are (damaged ones too, like
		// qpdf does): the structure must be readable.
		run(t, "qpdf", "--show-npages", tmpPDF(t, out.Bytes()))
		ok++
	}
	t.Logf("mutants: %d merged, %d rejected", ok, bad)
}

func TestMergeNoInputs(t *testing.T) {
	if _, err := Merge(context.Background(), nil, &bytes.Buffer{}); !errors.Is(err, ErrNoInputs) {
		t.Fatalf("err = %v, want ErrNoInputs", err)
	}
}

func TestMergeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	good := rawPDF("GOOD", 2, 3)
	_, err := Merge(ctx, []Input{{"a.pdf", bytes.NewReader(good)}, {"b.pdf", bytes.NewReader(good)}}, &bytes.Buffer{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestMergeFiles merges *os.File inputs, as the worker does with blobs
// spooled to disk.
func TestMergeFiles(t *testing.T) {
	needTools(t, "qpdf", "pdfinfo", "pdftotext")
	docs := []doc{rawDoc("a.pdf", "FA", 2), qpdfDoc(t, "b.pdf", "FB", 3)}
	var ins []Input
	for _, d := range docs {
		f, err := os.Open(tmpPDF(t, d.data))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ins = append(ins, Input{d.name, f})
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "out.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	pages, err := Merge(context.Background(), ins, out)
	if err != nil {
		t.Fatal(err)
	}
	checkMerged(t, readFile(t, out.Name()), pages, docs)
}

// TestConcurrentJobs runs merges and watermarks side by side, as a worker
// pool does (run with -race to check pdfcpu's shared state).
func TestConcurrentJobs(t *testing.T) {
	needTools(t, "qpdf")
	a, b := rawPDF("CA", 3, 3), qpdfPDF(t, "CB", 4)
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			var out bytes.Buffer
			if i%2 == 0 {
				pages, err := Merge(context.Background(), []Input{{"a.pdf", bytes.NewReader(a)}, {"b.pdf", bytes.NewReader(b)}, {"a2.pdf", bytes.NewReader(a)}}, &out)
				if err == nil && pages != 10 {
					err = errors.New("wrong page count")
				}
				errs <- err
				return
			}
			errs <- Watermark(context.Background(), bytes.NewReader(b), &out, textWM("CONC", nil))
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestMergeOutlines: the inputs' bookmarks survive the merge and point at
// their pages in the merged document.
func TestMergeOutlines(t *testing.T) {
	needTools(t, "qpdf")
	ins := []Input{
		{"a.pdf", bytes.NewReader(outlinedPDF("OA", 2))},
		{"b.pdf", bytes.NewReader(rawPDF("NB", 2, 1))},
		{"c.pdf", bytes.NewReader(outlinedPDF("OC", 3))},
	}
	var out bytes.Buffer
	if _, err := Merge(context.Background(), ins, &out); err != nil {
		t.Fatal(err)
	}
	js := run(t, "qpdf", "--json", "--json-key=outlines", tmpPDF(t, out.Bytes()))
	var doc struct {
		Outlines []struct {
			Title            string `json:"title"`
			DestPageposfrom1 int    `json:"destpageposfrom1"`
		} `json:"outlines"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("qpdf --json: %v\n%s", err, js)
	}
	want := []struct {
		title string
		page  int
	}{{"OAPAGE01", 1}, {"OAPAGE02", 2}, {"OCPAGE01", 5}, {"OCPAGE02", 6}, {"OCPAGE03", 7}}
	if len(doc.Outlines) != len(want) {
		t.Fatalf("outlines: %+v, want %v", doc.Outlines, want)
	}
	for i, w := range want {
		if o := doc.Outlines[i]; o.Title != w.title || o.DestPageposfrom1 != w.page {
			t.Errorf("outline %d = %q -> page %d, want %q -> page %d", i, o.Title, o.DestPageposfrom1, w.title, w.page)
		}
	}
}

// Page counts are bounded: two inputs that are fine alone but too many
// pages together are refused before anything is merged or written.
func TestMergeTooManyPages(t *testing.T) {
	half := limits.MergePages/2 + 1
	in := rawPDF("BIG", half, 0)
	var out bytes.Buffer
	_, err := Merge(context.Background(), []Input{{Name: "a.pdf", R: bytes.NewReader(in)}, {Name: "b.pdf", R: bytes.NewReader(in)}}, &out)
	var bad *BadInputError
	if !errors.As(err, &bad) || !strings.Contains(bad.Reason, strconv.Itoa(2*half)) {
		t.Fatalf("err = %v, want a BadInputError naming %d pages", err, 2*half)
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %d bytes", out.Len())
	}
}
