package pdfedit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
	pdfcpuapi "github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// The lazy join's reader (join_lazy.go) on its own: the lexer, the
// layouts it reads or leaves to pdfcpu, and parts whose text the client
// wrote.

// TestLazyRewriteRefs: references are renumbered wherever they are one,
// and nowhere else (strings, hex strings, comments, names).
func TestLazyRewriteRefs(t *testing.T) {
	to := func(n int) int {
		if n == 99 || n >= 1000 {
			return -1 // not in the output
		}
		return n + 100
	}
	for _, tc := range []struct{ in, want string }{
		{`<< /A 1 0 R /B [2 0 R 3 1 R] >>`, `<< /A 101 0 R /B [102 0 R 103 0 R] >>`},
		{`[(a \) 12 0 R \( (nested 4 0 R) x) 5 0 R]`, `[(a \) 12 0 R \( (nested 4 0 R) x) 105 0 R]`},
		{`[(x\\) 6 0 R]`, `[(x\\) 106 0 R]`},
		{`[(\\\) 6 0 R) 7 0 R]`, `[(\\\) 6 0 R) 107 0 R]`},
		{`[<3132 2030 2052> 7 0 R]`, `[<3132 2030 2052> 107 0 R]`},
		{"<< /A 1 % 8 0 R (\n/B 9 0 R >>", "<< /A 1 % 8 0 R (\n/B 109 0 R >>"},
		{`<< /F1 10 0 R /12 0 R /x#2012#200#20R 1 >>`, `<< /F1 110 0 R /12 0 R /x#2012#200#20R 1 >>`},
		{`<< /Dests << /a#29#203#200#20R#20#28b [3 0 R /XYZ 0 0 0] >> >>`, `<< /Dests << /a#29#203#200#20R#20#28b [103 0 R /XYZ 0 0 0] >> >>`},
		{`[99 0 R 1 0 R]`, `[null 101 0 R]`},
		{`[1234567890123 0 R]`, `[null]`},
		{`[12345678901234567890 0 R]`, `[12345678901234567890 0 R]`},
		{`<</URI (https://x/?q=\)%201%200%20R%20\()/P 2 0 R>>`, `<</URI (https://x/?q=\)%201%200%20R%20\()/P 102 0 R>>`},
	} {
		got, err := rewriteRefs(nil, []byte(tc.in), 0, to)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s:\n got %s, %v\nwant %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`[(unterminated 1 0 R]`, `<< /A 1 0 R`, `[1 0 R]]`} {
		if _, _, err := scanObject([]byte(bad), 0, nil, new(int)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// lazyObjDef is one object of classicPDF: number, generation, body (what
// follows "n g obj"; a stream's dictionary, data and endstream included).
type lazyObjDef struct {
	n, gen int
	body   string
}

// classicPDF writes objs as Skia would lay them out: one classic table
// (subsections: the runs of consecutive numbers; numbers in between are
// absent, free numbers in free), 20-byte entries, then trailer.
func classicPDF(objs []lazyObjDef, free []int, trailer string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xd3\xeb\xe9\xe1\n")
	type ent struct {
		off, gen int
		free     bool
	}
	ents := map[int]ent{0: {0, 65535, true}}
	for _, o := range objs {
		ents[o.n] = ent{b.Len(), o.gen, false}
		fmt.Fprintf(&b, "%d %d obj\n%s\nendobj\n", o.n, o.gen, o.body)
	}
	for _, n := range free {
		ents[n] = ent{0, 1, true}
	}
	nums := make([]int, 0, len(ents))
	for n := range ents {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	xref := b.Len()
	b.WriteString("xref\n")
	for i := 0; i < len(nums); {
		j := i + 1
		for j < len(nums) && nums[j] == nums[j-1]+1 {
			j++
		}
		fmt.Fprintf(&b, "%d %d\n", nums[i], j-i)
		for _, n := range nums[i:j] {
			e, kind := ents[n], "n"
			if e.free {
				kind = "f"
			}
			fmt.Fprintf(&b, "%010d %05d %s \n", e.off, e.gen, kind)
		}
		i = j
	}
	fmt.Fprintf(&b, "trailer\n<<%s>>\nstartxref\n%d\n%%%%EOF\n", trailer, xref)
	return b.Bytes()
}

// lazyTrickyParts: a one-page PDF with several subsections, free entries,
// an object of generation 1, a stream whose /Length is a reference and
// whose data holds endstream, endobj, references and an unbalanced
// parenthesis, and strings holding references.
func lazyTrickyPDF() (pdf []byte, data string) {
	data = "q 1 0 0 1 0 0 cm Q\n% (endstream\n% endobj 3 0 R <<\n% 12 0 R ) ( [\n"
	img := "\xff\x00)endstream\nendobj\n 5 0 R <<(\x01\x02\x03 stream \\ trailer xref startxref" + strings.Repeat("\x80", 8)
	img = img[:48]
	objs := []lazyObjDef{
		{1, 0, "<</Type /Catalog /Pages 2 0 R>>"},
		{2, 0, "<</Type /Pages /Kids [3 0 R] /Count 1>>"},
		{3, 0, "<</Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 1 R /Resources <</XObject <</Im1 8 0 R>>>> /Annots [<</Type /Annot /Subtype /Link /Rect [0 0 10 10] /A <</S /URI /URI (https://x/\\) 3 0 R \\(\\\\) /N 9 0 R>>>>]>>"},
		{4, 1, fmt.Sprintf("<</Length 5 0 R>>\nstream\n%sendstream", data)},
		{5, 0, fmt.Sprint(len(data))},
		{7, 0, "<</Title (Tricky \\) 1 0 R \\( title) /Producer <3120302052>>>"},
		{8, 0, fmt.Sprintf("<</Type /XObject /Subtype /Image /Width 48 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length %d>>\nstream\n%s\nendstream", len(img), img)},
		{9, 0, "(a string object \\) 2 0 R)"},
	}
	return classicPDF(objs, []int{6}, "/Size 10 /Root 1 0 R /Info 7 0 R"), data + "|" + img
}

// joinLazyOnly joins parts by the lazy path only, failing the test when
// they would go to pdfcpu.
func joinLazyOnly(t *testing.T, parts [][]byte, outline []Heading, bands []byte) []byte {
	t.Helper()
	d, err := newLazyDoc(parts)
	if err != nil {
		t.Fatalf("newLazyDoc: %v", err)
	}
	var out bytes.Buffer
	_, done, err := joinLazy(context.Background(), d, outline, bands, 1<<20, &out)
	if !done || err != nil {
		t.Fatalf("joinLazy: done %v, %v (first unreadable object: %v)", done, err, d.err)
	}
	return out.Bytes()
}

func TestLazyLayouts(t *testing.T) {
	tricky, data := lazyTrickyPDF()
	t.Run("subsections, free entries, generation 1, indirect Length, endstream in data", func(t *testing.T) {
		out := joinLazyOnly(t, [][]byte{tricky, tricky}, nil, nil)
		content, img, _ := strings.Cut(data, "|")
		if n := bytes.Count(out, []byte(content)); n != 2 {
			t.Errorf("content stream copied verbatim %d times, want 2", n)
		}
		if n := bytes.Count(out, []byte(img)); n != 2 {
			t.Errorf("image data copied verbatim %d times, want 2", n)
		}
		for _, s := range []string{`(https://x/\) 3 0 R \(\\)`, `(a string object \) 2 0 R)`, `(Tricky \) 1 0 R \( title)`} {
			if !bytes.Contains(out, []byte(s)) {
				t.Errorf("string %s not kept as written", s)
			}
		}
		if _, err := exec.LookPath("qpdf"); err == nil {
			checkQPDF(t, tmpPDF(t, out))
			if got := pdfinfoPages(t, tmpPDF(t, out)); got != 2 {
				t.Errorf("%d pages, want 2", got)
			}
		}
	})

	t.Run("testdata/chromium.pdf twice", func(t *testing.T) {
		chromium := readFile(t, "testdata/chromium.pdf")
		out := joinLazyOnly(t, [][]byte{chromium, chromium}, nil, nil)
		if _, err := exec.LookPath("qpdf"); err == nil {
			checkQPDF(t, tmpPDF(t, out))
			if got := pdfinfoPages(t, tmpPDF(t, out)); got != 4 {
				t.Errorf("%d pages, want 4", got)
			}
		}
	})

	// What goes to pdfcpu, and still joins.
	xrefAt := bytes.LastIndex(tricky, []byte("xref\n"))
	update := append(slices.Clone(tricky), fmt.Sprintf("7 0 obj\n<</Title (updated)>>\nendobj\nxref\n7 1\n%010d 00000 n \ntrailer\n<</Size 10 /Root 1 0 R /Info 7 0 R /Prev %d>>\nstartxref\n%d\n%%%%EOF\n",
		len(tricky), xrefAt, len(tricky)+len("7 0 obj\n<</Title (updated)>>\nendobj\n"))...)
	selfLength := bytes.Replace(tricky, []byte("<</Length 5 0 R>>"), []byte("<</Length 4 0 R>>"), 1)
	off3 := bytes.Index(tricky, []byte("\n3 0 obj")) + 1 // object 3's entry one byte off
	badOffset := bytes.Replace(tricky, fmt.Appendf(nil, "%010d 00000 n", off3), fmt.Appendf(nil, "%010d 00000 n", off3+1), 1)
	for _, tc := range []struct {
		name    string
		part    []byte
		readErr bool // readLazyPart refuses it
	}{
		{"incremental update", update, true},
		{"encrypted", bytes.Replace(tricky, []byte("/Root 1 0 R"), []byte("/Root 1 0 R /Encrypt 9 0 R"), 1), true},
		{"xref stream", lazyXRefStream(t, tricky), true},
		{"sparse numbers", classicPDF([]lazyObjDef{{1, 0, "<</Type /Catalog /Pages 2 0 R>>"}, {2, 0, "<</Type /Pages /Kids [] /Count 0>>"}, {16_000_000, 0, "null"}}, nil, "/Size 16000001 /Root 1 0 R"), true},
		{"Length naming its own stream", selfLength, false},
		{"offset off by one", badOffset, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.part == nil {
				t.Skip("qpdf not found")
			}
			_, err := readLazyPart(tc.part)
			if tc.readErr {
				if !errors.Is(err, errNotLazy) {
					t.Fatalf("readLazyPart: %v, want errNotLazy", err)
				}
			} else {
				d, err := newLazyDoc([][]byte{tricky, tc.part})
				if err != nil {
					t.Fatalf("newLazyDoc: %v", err)
				}
				if _, done, err := joinLazy(context.Background(), d, nil, nil, 100, io.Discard); done {
					t.Fatalf("joinLazy: done (%v), want the part left to pdfcpu", err)
				}
			}
			// Join itself: pdfcpu's read, a result or a bad input.
			_, err = Join(context.Background(), [][]byte{tricky, tc.part}, nil, 0, io.Discard)
			var be *BadInputError
			if err != nil && !errors.As(err, &be) {
				t.Errorf("Join: %v, want a result or a BadInputError", err)
			}
		})
	}
}

// lazyXRefStream is pdf rewritten by qpdf with an xref stream, nil without
// qpdf.
func lazyXRefStream(t *testing.T, pdf []byte) []byte {
	if _, err := exec.LookPath("qpdf"); err != nil {
		return nil
	}
	out := tmpPDF(t, nil)
	run(t, "qpdf", "--object-streams=generate", tmpPDF(t, pdf), out)
	return readFile(t, out)
}

// TestLazyJoinFallback: parts in a layout the lazy join does not read
// (object streams) are joined by pdfcpu's read, as before it, with the
// same result as the lazy join's in what a reader sees.
func TestLazyJoinFallback(t *testing.T) {
	set := joinPrints(t)
	parts := make([][]byte, len(set.parts2))
	for i, p := range set.parts2 {
		parts[i] = lazyXRefStream(t, p)
		if _, err := readLazyPart(parts[i]); !errors.Is(err, errNotLazy) {
			t.Fatalf("part %d with object streams: readLazyPart %v, want errNotLazy", i+1, err)
		}
	}
	got, want := join(t, parts, joinHeadings()), joinLazyOnly(t, set.parts2, joinHeadings(), nil)
	checkQPDF(t, tmpPDF(t, got))
	g, w := qpdfJSON(t, got), qpdfJSON(t, want)
	if len(g.pages) != len(w.pages) {
		t.Fatalf("%d pages, the lazy join has %d", len(g.pages), len(w.pages))
	}
	gp, wp := g.destPages(t), w.destPages(t)
	if len(gp) != len(wp) {
		t.Errorf("%d destinations, the lazy join has %d", len(gp), len(wp))
	}
	for k, v := range wp {
		if gp[k] != v {
			t.Errorf("destination %q on page %d, the lazy join's on %d", k, gp[k], v)
		}
	}
	if gs, ws := g.structShape(t), w.structShape(t); gs != ws {
		t.Errorf("structure trees differ:\n got %s\nwant %s", gs, ws)
	}
	if got, want := g.outline(), w.outline(); !slices.Equal(got, want) {
		t.Errorf("outline:\n got %q\nwant %q", got, want)
	}
}

// hostileHTML is a document whose text, title, IDs and links hold PDF
// syntax: references, parentheses, backslashes, stream keywords.
func hostileHTML(part int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>) 12 0 R ( \ (x endobj</title>
<style>body{font:12px serif} .pb{break-after:page}</style></head><body>`)
	ids := []string{"a) 3 0 R (b", "1 0 R", `x/12 0 R%(`, "endstream", `q\)\\`, "é 2 0 R"}
	for i, id := range ids {
		fmt.Fprintf(&b, `<h2 id="%s">Heading ) %d 0 R ( endstream \ %d</h2>`, htmlAttr(id), i+1, part)
		fmt.Fprintf(&b, `<p>Text endobj 4 0 R (unbalanced \ trailer startxref <a href="https://example.com/?q=)%%20%d%%200%%20R%%20(&x=\">link %d</a>.</p>`, i+1, i)
		for _, to := range ids {
			fmt.Fprintf(&b, `<a href="#%s">to %s</a> `, htmlAttr(to), htmlAttr(to))
		}
		fmt.Fprintf(&b, `<table><thead><tr><th>Key ) %d 0 R (</th><th>Value \</th></tr></thead><tbody><tr><td>(endobj</td><td>stream)</td></tr></tbody></table>`, i)
		if i == len(ids)/2 {
			b.WriteString(`<p class="pb"></p>`)
		}
	}
	b.WriteString(`</body></html>`)
	return b.String()
}

func htmlAttr(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;").Replace(s)
}

// TestJoinLazyClientContent: Chromium's parts of a document whose title,
// headings, IDs (named destinations) and links hold PDF syntax are joined
// by the lazy path, as pdfcpu's read joins them.
func TestJoinLazyClientContent(t *testing.T) {
	joinPrints(t) // chromium, qpdf, poppler
	l := launcher.New().Bin("/usr/bin/chromium").Headless(true).Set("no-sandbox").Set("disable-gpu")
	u, err := l.Launch()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Kill()
	b := rod.New().ControlURL(u).Timeout(60 * time.Second)
	if err := b.Connect(); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	print := func(html string) []byte {
		p, err := b.Page(proto.TargetCreateTarget{URL: "about:blank"})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.SetDocumentContent(html); err != nil {
			t.Fatal(err)
		}
		res, err := p.Call(p.GetContext(), string(p.SessionID), "Page.printToPDF", map[string]any{
			"printBackground": true, "generateTaggedPDF": true, "generateDocumentOutline": false})
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Data []byte }
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatal(err)
		}
		return r.Data
	}
	parts := [][]byte{print(hostileHTML(1)), print(hostileHTML(2))}
	if !bytes.Contains(parts[0], []byte(`12 0 R`)) {
		t.Log("the title is not written as a literal string")
	}
	// Chromium names a destination by its link's URL fragment.
	outline := []Heading{{Level: 1, Title: ") 5 0 R ( \\", Dest: "a)%203%200%20R%20(b"}}
	lazy := joinLazyOnly(t, parts, outline, nil)
	var full bytes.Buffer
	if _, err := readAllJoin(t, parts, outline, &full); err != nil {
		t.Fatal(err)
	}
	lp, fp := tmpPDF(t, lazy), tmpPDF(t, full.Bytes())
	checkQPDF(t, lp)
	n := pdfinfoPages(t, lp)
	if m := pdfinfoPages(t, fp); n != m || n < 4 {
		t.Fatalf("%d pages, pdfcpu's join %d", n, m)
	}
	for p := 1; p <= n; p++ {
		if got, want := pageText(t, lp, p), pageText(t, fp, p); got != want {
			t.Errorf("page %d: text %q, pdfcpu's join %q", p, got, want)
		}
	}
	l1, f1 := qpdfJSON(t, lazy), qpdfJSON(t, full.Bytes())
	ld, fd := l1.destPages(t), f1.destPages(t)
	t.Logf("destinations: %v", slices.Sorted(maps.Keys(ld)))
	if len(ld) < 2 || len(ld) != len(fd) {
		t.Errorf("destinations: %v, pdfcpu's join %v", ld, fd)
	}
	for k, v := range fd {
		if ld[k] != v {
			t.Errorf("destination %q on page %d, pdfcpu's join: %d", k, ld[k], v)
		}
	}
	if got, want := l1.linkTargets(t), f1.linkTargets(t); !slices.Equal(got, want) {
		t.Errorf("links:\n got %v\nwant %v", got, want)
	}
	if got, want := l1.structShape(t), f1.structShape(t); got != want {
		t.Errorf("structure trees differ:\n got %s\nwant %s", got, want)
	}
	l1.checkParentTree(t)
	l1.checkIDs(t)
	title := func(d *qpdfJSONDoc) any { return d.dict(d.trailer["/Info"])["/Title"] }
	if got, want := title(l1), title(f1); got != want || !strings.Contains(fmt.Sprint(got), "12 0 R") {
		t.Errorf("title %v, pdfcpu's join %v", got, want)
	}
	if got, want := l1.outline(), f1.outline(); !slices.Equal(got, want) || len(got) != 1 {
		t.Errorf("outline %q, pdfcpu's join %q", got, want)
	}
}

// readAllJoin is Join by pdfcpu's read: the parts rewritten by qpdf with
// object streams, which the lazy reader leaves to it.
func readAllJoin(t *testing.T, parts [][]byte, outline []Heading, w io.Writer) (int, error) {
	rewritten := make([][]byte, len(parts))
	for i, p := range parts {
		rewritten[i] = lazyXRefStream(t, p)
		if _, err := readLazyPart(rewritten[i]); err == nil {
			t.Fatal("the lazy reader reads a part with object streams")
		}
	}
	return Join(context.Background(), rewritten, outline, 0, w)
}

// FuzzLazyPart: any bytes as a part of the lazy join are read, refused
// (errNotLazy: left to pdfcpu) or joined, never a panic, a recursion
// without end or an allocation sized by a number in the file. The lexer
// and the object reader run without joinLazy's recover.
func FuzzLazyPart(f *testing.F) {
	chromium, err := os.ReadFile("testdata/chromium.pdf")
	if err != nil {
		f.Fatal(err)
	}
	tricky, _ := lazyTrickyPDF()
	bands := bandsPDF(4, 0, 0, 612, 792)
	for _, seed := range [][]byte{chromium, tricky, chromium[:len(chromium)-40], []byte("%PDF-1.4\nxref\n0 1\n0000000000 65535 f \ntrailer\n<</Size 1>>\nstartxref\n9\n%%EOF")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// An input that never returns crashes the worker, which the
		// fuzzer then reports (it does not time calls out itself).
		hang := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("FuzzLazyPart: no result after 10 s on %d bytes", len(data))) })
		defer hang.Stop()
		p, err := readLazyPart(data)
		if err != nil {
			if !errors.Is(err, errNotLazy) {
				t.Fatalf("readLazyPart: %v", err)
			}
			return
		}
		if len(p.offs) > len(data)/16+1 {
			t.Fatalf("%d objects indexed from %d bytes", len(p.offs), len(data))
		}
		for n, off := range p.offs {
			if off > 0 {
				if _, err := p.parse(n); err == nil {
					o, _ := p.locate(n)
					if _, err := p.rewrite(nil, o, func(r int) int { return r }); err != nil {
						t.Fatalf("object %d parsed, not rewritten: %v", n, err)
					}
				}
			}
		}
		d, err := newLazyDoc([][]byte{data, data})
		if err != nil {
			t.Fatalf("newLazyDoc: %v", err)
		}
		start := time.Now()
		_, done, err := joinLazy(context.Background(), d, joinHeadings(), nil, 1<<20, io.Discard)
		if err != nil && (!done || strings.Contains(err.Error(), "cannot join the parts (")) {
			t.Fatalf("joinLazy panicked: %v", err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("joinLazy took %v on %d bytes", el, len(data))
		}
		// With bands: the pages parsed for them (loadPages).
		d, _ = newLazyDoc([][]byte{data, data})
		_, done, err = joinLazy(context.Background(), d, nil, bands, 1<<20, io.Discard)
		if err != nil && (!done || strings.Contains(err.Error(), "cannot join the parts (")) {
			t.Fatalf("joinLazy with bands panicked: %v", err)
		}
	})
}

// TestLazyJoinStamped: JoinStamped's bands drawn by the lazy path (the
// pages parsed for them), and a page tree that names a node twice walked
// once, not once per path (3^64 paths here).
func TestLazyJoinStamped(t *testing.T) {
	skipWithoutTools(t, "pdftotext", "pdfinfo", "qpdf")
	chromium := readFile(t, "testdata/chromium.pdf")
	out := joinLazyOnly(t, [][]byte{chromium, chromium}, nil, bandsPDF(4, 0, 0, 612, 792))
	path := tmpPDF(t, out)
	checkQPDF(t, path)
	if n := pdfinfoPages(t, path); n != 4 {
		t.Fatalf("%d pages, want 4", n)
	}
	for p := 1; p <= 4; p++ {
		if want := fmt.Sprintf("Band %d of 4", p); !hasText(pageText(t, path, p), want) {
			t.Errorf("page %d: no %q in %q", p, want, pageText(t, path, p))
		}
	}

	tricky, _ := lazyTrickyPDF()
	loop := classicPDF([]lazyObjDef{
		{1, 0, "<</Type /Catalog /Pages 2 0 R>>"},
		{2, 0, "<</Type /Pages /Kids [2 0 R 2 0 R 3 0 R] /Count 1>>"},
		{3, 0, "<</Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R>>"},
		{4, 0, "<</Length 4>>\nstream\nq Q\nendstream"},
	}, nil, "/Size 5 /Root 1 0 R")
	if _, err := readLazyPart(loop); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := JoinStamped(context.Background(), [][]byte{tricky, loop}, nil, bandsPDF(2, 0, 0, 200, 200), 0, io.Discard)
		done <- err
	}()
	select {
	case err := <-done:
		var be *BadInputError
		if err != nil && !errors.As(err, &be) {
			t.Errorf("page tree naming itself: %v, want a result or a BadInputError", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("page tree naming itself: no result after 30 s")
	}
}

// TestRenameHeaderStrings: the lazy join renames /Headers IDs in an
// object's bytes where its arrays hold plain literal strings, and leaves
// any other form to the parsed pass (ok false).
func TestRenameHeaderStrings(t *testing.T) {
	rename := map[string]string{"node7": "node7-2", "a b": "x(y)"}
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"one renamed", "<< /S /TD /A << /O /Table /Headers [(node7)] >> >>", "<< /S /TD /A << /O /Table /Headers [(node7-2)] >> >>", true},
		{"some of several", "<</Headers[ (node1) (node7)(a b) ]>>", "<</Headers[ (node1) (node7-2)(x\\(y\\)) ]>>", true},
		{"two arrays", "[<</Headers [(node7)]>> <</Headers [(node7)]>>]", "[<</Headers [(node7-2)]>> <</Headers [(node7-2)]>>]", true},
		{"nothing renamed", "<< /Headers [(node1) (node2)] >>", "", true},
		{"a longer name", "<< /HeadersX (node7) /Headers [] >>", "", true},
		{"the same string elsewhere", "<< /Alt (node7) /A << /Headers [(node1)] >> >>", "", true},
		{"a hex string", "<< /Headers [<6E6F646537>] >>", "", false},
		{"an escape", "<< /Headers [(node\\067)] >>", "", false},
		{"a reference", "<< /Headers 12 0 R >>", "", false},
		{"unterminated", "<< /Headers [(node7)", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := renameHeaderStrings([]byte(tc.in), rename)
			if ok != tc.ok || string(out) != tc.want {
				t.Errorf("%q → %q, %t; want %q, %t", tc.in, out, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestAppendParsed: appendParsed writes what PDFString and rewriteRefs
// write together, for every object of a Chromium PDF (tagged: its
// structure tree, parent tree and pages) and for objects made to hold
// every type a parsed object can.
func TestAppendParsed(t *testing.T) {
	to := func(n int) int {
		if n%5 == 0 {
			return -1
		}
		return n*3 + 7
	}
	ref := func(n, gen int) types.IndirectRef { return *types.NewIndirectRef(n, gen) }
	objs := []types.Object{
		nil,
		types.Integer(-12),
		ref(4, 0), ref(5, 0), ref(6, 2),
		types.Array{},
		types.Dict{},
		types.Array{nil, types.Integer(1), ref(3, 0), types.Name("A"), types.Name(""), types.Float(1.5), types.Boolean(true),
			types.StringLiteral("a (1 0 R) \\) string"), types.HexLiteral("4142"), types.Array{ref(10, 0)}, types.Dict{"K": ref(2, 0)}},
		types.Dict{"Nil": nil, "Ref": ref(7, 0), "Int": types.Integer(3), "F": types.Float(0.25), "B": types.Boolean(false),
			"S": types.StringLiteral("2 0 R"), "H": types.HexLiteral("00"), "N": types.Name("Na#me /x"), "A": types.Array{types.Name("P"), nil},
			"D": types.Dict{"Deep": types.Array{ref(15, 0), types.Integer(0)}}, "Odd key#(1)": types.Integer(1)},
		types.StreamDict{Dict: types.Dict{"Length": types.Integer(3), "Filter": types.Name("FlateDecode")}},
	}
	// A stream inside an array: PDFString writes nothing for it; so does
	// the fallback appendParsed leaves it to.
	if _, ok := appendParsed(nil, types.Array{types.StreamDict{Dict: types.Dict{}}}, to); ok {
		t.Error("a stream in an array was written")
	}
	ctx, err := pdfcpuapi.ReadContext(bytes.NewReader(readFile(t, "testdata/chromium.pdf")), model.NewDefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	for nr, e := range ctx.Table {
		if nr > 0 && e != nil && e.Object != nil {
			objs = append(objs, e.Object)
		}
	}
	for i, o := range objs {
		text := "null"
		switch v := o.(type) {
		case nil:
		case types.StreamDict:
			// As writeParsed writes a stream: its dictionary, then its data.
			o = v.Dict
			text = v.Dict.PDFString()
		default:
			text = o.PDFString()
		}
		want, err := rewriteRefs(nil, []byte(text), 0, to)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		got, ok := appendParsed(nil, o, to)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("object %d (%T): %v\n%s\nwant\n%s", i, o, ok, got, want)
		}
	}
	if len(objs) < 40 {
		t.Fatalf("only %d objects", len(objs))
	}
}
