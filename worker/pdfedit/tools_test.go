package pdfedit

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
)

func TestSplit(t *testing.T) {
	needTools(t, "pdfinfo", "pdftotext", "qpdf")
	in := rawPDF("S", 10, 1)
	tests := []struct {
		name     string
		ranges   string
		every    int
		maxParts int
		want     [][]int // pages of each part
		badField string  // an *OptionError naming it
	}{
		{"ranges", "1-3,4-9", 0, 10, [][]int{{1, 2, 3}, {4, 5, 6, 7, 8, 9}}, ""},
		{"ranges in the order given", "7,2-3,2", 0, 10, [][]int{{7}, {2, 3}, {2}}, ""},
		{"every 4", "", 4, 10, [][]int{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10}}, ""},
		{"every past the end", "", 20, 10, [][]int{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}, ""},
		{"past the last page", "1-3,9-11", 0, 10, nil, "ranges"},
		{"page 0", "0-2", 0, 10, nil, "ranges"},
		{"reversed", "5-2", 0, 10, nil, "ranges"},
		{"malformed", "1-x", 0, 10, nil, "ranges"},
		{"both", "1-2", 2, 10, nil, "ranges"},
		{"neither", "", 0, 10, nil, "ranges"},
		{"negative every", "", -1, 10, nil, "every"},
		{"too many ranges", "1,2,3", 0, 2, nil, "ranges"},
		{"too many every", "", 1, 9, nil, "every"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := Split(context.Background(), bytes.NewReader(in), tc.ranges, tc.every, tc.maxParts)
			if outcome(t, err, tc.badField) {
				return
			}
			if len(parts) != len(tc.want) {
				t.Fatalf("%d parts, want %d", len(parts), len(tc.want))
			}
			for i, part := range parts {
				path := tmpPDF(t, part)
				qpdfCheck(t, path)
				if n := pdfinfoPages(t, path); n != len(tc.want[i]) {
					t.Fatalf("part %d: %d pages, want %d", i, n, len(tc.want[i]))
				}
				for j, p := range tc.want[i] {
					if text := pageText(t, path, j+1); !hasText(text, pageLabel("S", p)) {
						t.Errorf("part %d page %d: %q, want %s", i, j+1, text, pageLabel("S", p))
					}
				}
			}
		})
	}
}

// outcome fails the test unless err is an *OptionError naming badField
// (when set) or nil, and reports whether the case ends there.
func outcome(t *testing.T, err error, badField string) bool {
	t.Helper()
	if badField != "" {
		if got := optionField(err); got != badField {
			t.Fatalf("err %v, want an option error naming %q", err, badField)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// A split part keeps the document's title.
func TestSplitKeepsInfo(t *testing.T) {
	needTools(t, "pdfinfo")
	var titled bytes.Buffer
	if err := SetInfo(context.Background(), bytes.NewReader(rawPDF("T", 4, 0)), &titled, &jobspb.DocInfo{Title: "Quarterly report"}); err != nil {
		t.Fatal(err)
	}
	parts, err := Split(context.Background(), bytes.NewReader(titled.Bytes()), "3-4", 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if out := run(t, "pdfinfo", tmpPDF(t, parts[0])); !strings.Contains(out, "Quarterly report") {
		t.Fatalf("title lost:\n%s", out)
	}
}

func TestPages(t *testing.T) {
	needTools(t, "pdfinfo", "pdftotext", "qpdf")
	in := rawPDF("P", 5, 0)
	tests := []struct {
		name     string
		sel, del string
		rotate   map[string]int
		want     []int // pages of the input, in output order
		rot      []int // rotation of each output page
		badField string
	}{
		{"select in the order given", "3,1-2", "", nil, []int{3, 1, 2}, []int{0, 0, 0}, ""},
		{"repeats", "2,2,1,2", "", nil, []int{2, 2, 1, 2}, []int{0, 0, 0, 0}, ""},
		{"delete", "", "2,4-5", nil, []int{1, 3}, []int{0, 0}, ""},
		{"delete from a selection, by input page", "5,4,3,2,1", "4", nil, []int{5, 3, 2, 1}, []int{0, 0, 0, 0}, ""},
		{"rotate", "", "", map[string]int{"2-3": 90, "5": -90}, []int{1, 2, 3, 4, 5}, []int{0, 90, 90, 0, 270}, ""},
		{"rotate every copy of a repeated page", "1,1", "", map[string]int{"1": 180}, []int{1, 1}, []int{180, 180}, ""},
		{"all three", "4,1,2,3", "3", map[string]int{"all": 270}, []int{4, 1, 2}, []int{270, 270, 270}, ""},
		{"rotation not a multiple of 90", "", "", map[string]int{"1": 45}, nil, nil, "rotate"},
		{"nothing left", "1-2", "1-2", nil, nil, nil, "delete"},
		{"select past the last page", "4-6", "", nil, nil, nil, "select"},
		{"delete past the last page", "", "9", nil, nil, nil, "delete"},
		{"rotate past the last page", "", "", map[string]int{"6": 90}, nil, nil, "rotate"},
		{"select page 0", "0", "", nil, nil, nil, "select"},
		{"select reversed", "3-1", "", nil, nil, nil, "select"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := Pages(context.Background(), bytes.NewReader(in), tc.sel, tc.rotate, tc.del, &out)
			if outcome(t, err, tc.badField) {
				return
			}
			path := tmpPDF(t, out.Bytes())
			qpdfCheck(t, path)
			if n != len(tc.want) || pdfinfoPages(t, path) != len(tc.want) {
				t.Fatalf("%d pages (pdfinfo %d), want %d", n, pdfinfoPages(t, path), len(tc.want))
			}
			for i, p := range tc.want {
				if text := pageText(t, path, i+1); !hasText(text, pageLabel("P", p)) {
					t.Errorf("page %d: %q, want %s", i+1, text, pageLabel("P", p))
				}
			}
			if got := rotations(t, path, n); fmt.Sprint(got) != fmt.Sprint(tc.rot) {
				t.Errorf("rotations %v, want %v", got, tc.rot)
			}
		})
	}
}

// Rotation adds to what a page has, inherited from the page tree or its
// own.
func TestPagesRotationIsRelative(t *testing.T) {
	needTools(t, "pdfinfo")
	in := bytes.Replace(rawPDF("R", 2, 0), []byte("/Type /Pages /Kids"), []byte("/Type /Pages /Rotate 90 /Kids"), 1)
	var out bytes.Buffer
	if _, err := Pages(context.Background(), bytes.NewReader(in), "", map[string]int{"2": 90}, "", &out); err != nil {
		t.Fatal(err)
	}
	if got := rotations(t, tmpPDF(t, out.Bytes()), 2); fmt.Sprint(got) != "[90 180]" {
		t.Fatalf("rotations %v, want [90 180]", got)
	}
}

func TestFlattenForm(t *testing.T) {
	needTools(t, "pdftotext", "qpdf")
	in := formPDF(t, "Jackie Doe")
	if !strings.Contains(qdf(t, tmpPDF(t, in)), "/Widget") {
		t.Fatal("the test form has no widgets")
	}
	var out bytes.Buffer
	if err := Flatten(context.Background(), bytes.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	path := tmpPDF(t, out.Bytes())
	qpdfCheck(t, path)
	text := pageText(t, path, 1)
	for _, want := range []string{"FORMPAGE", "Jackie Doe", "✔"} {
		if !hasText(text, want) {
			t.Errorf("page text %q lacks %q", text, want)
		}
	}
	doc := qdf(t, path)
	for _, gone := range []string{"/AcroForm", "/Widget", "/Annots"} {
		if strings.Contains(doc, gone) {
			t.Errorf("%s is still in the flattened file", gone)
		}
	}
	if !strings.Contains(doc, "/DrFlat") {
		t.Error("no appearance drawn into the page")
	}
}

// Annotations with an appearance are drawn and leave; links stay;
// hidden annotations and popups leave undrawn.
func TestFlattenAnnotations(t *testing.T) {
	needTools(t, "pdftotext", "qpdf")
	ap := func(text string) []byte {
		return stream("/Type /XObject /Subtype /Form /BBox [0 0 200 20] /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>",
			[]byte("BT /F1 12 Tf 2 5 Td ("+text+") Tj ET"))
	}
	in := onePage("BODYTEXT", "",
		[]byte("[6 0 R 7 0 R 8 0 R 10 0 R]"), // 5 Annots (the page names it below)
		[]byte("<< /Type /Annot /Subtype /FreeText /Rect [72 600 272 620] /AP << /N 9 0 R >> /DA (/F1 12 Tf) >>"),
		[]byte("<< /Type /Annot /Subtype /Link /Rect [72 500 272 520] /A << /S /URI /URI (https://example.com) >> >>"),
		[]byte("<< /Type /Annot /Subtype /Square /F 2 /Rect [72 400 272 420] /AP << /N 11 0 R >> >>"),
		ap("STAMPEDNOTE"),
		[]byte("<< /Type /Annot /Subtype /Popup /Rect [300 400 500 500] >>"),
		ap("HIDDENNOTE"),
	)
	in = bytes.Replace(in, []byte("/Contents 4 0 R"), []byte("/Contents 4 0 R /Annots 5 0 R"), 1)
	in = fixXref(t, in)
	var out bytes.Buffer
	if err := Flatten(context.Background(), bytes.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	path := tmpPDF(t, out.Bytes())
	qpdfCheck(t, path)
	text := pageText(t, path, 1)
	if !hasText(text, "BODYTEXT") || !hasText(text, "STAMPEDNOTE") || hasText(text, "HIDDENNOTE") {
		t.Errorf("page text %q: want BODYTEXT and STAMPEDNOTE, not HIDDENNOTE", text)
	}
	doc := qdf(t, path)
	if strings.Count(doc, "/Subtype /Link") != 1 {
		t.Error("the link is gone")
	}
	for _, gone := range []string{"/FreeText", "/Square", "/Popup"} {
		if strings.Contains(doc, gone) {
			t.Errorf("%s is still in the file", gone)
		}
	}
}

// fixXref has qpdf rebuild the cross-reference table of a hand-edited
// file.
func fixXref(tb testing.TB, pdf []byte) []byte {
	tb.Helper()
	out := tmpPDF(tb, nil) + ".fixed.pdf"
	run(tb, "qpdf", tmpPDF(tb, pdf), out)
	return readFile(tb, out)
}

// pdfImage is a row of pdfimages -list: page, num, type, width, height,
// color, comp, bpc, enc.
type pdfImage struct {
	typ, color, enc string
	width, height   int
}

func listImages(tb testing.TB, path string) []pdfImage {
	tb.Helper()
	row := regexp.MustCompile(`(?m)^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\d+)\s+(\d+)\s+(\w+)\s+(\d+)\s+(\d+)\s+(\w+)`)
	var out []pdfImage
	for _, m := range row.FindAllStringSubmatch(run(tb, "pdfimages", "-list", path), -1) {
		w, _ := strconv.Atoi(m[4])
		h, _ := strconv.Atoi(m[5])
		out = append(out, pdfImage{typ: m[3], width: w, height: h, color: m[6], enc: m[9]})
	}
	return out
}

func TestOptimize(t *testing.T) {
	needTools(t, "pdfimages", "qpdf")
	big := imageObj(1600, 1200, "/DeviceRGB", 3, "")
	gray := imageObj(1000, 1000, "/DeviceGray", 1, "")
	cmyk := imageObj(300, 300, "/DeviceCMYK", 4, "")
	masked := imageObj(400, 300, "/DeviceRGB", 3, "/SMask 9 0 R")
	mask := imageObj(400, 300, "/DeviceGray", 1, "")
	// The mask is also drawn on its own: still a mask, left alone.
	in := imagePDF(big, gray, cmyk, masked, mask)
	tests := []struct {
		name    string
		quality int
		dpi     int
		want    []pdfImage // in pdfimages order
	}{
		// A4's long side, 842 pt, at 72 dpi is 842 pixels.
		{"downsampled to 72 dpi", 60, 72, []pdfImage{
			{"image", "rgb", "jpeg", 842, 631}, {"image", "gray", "jpeg", 842, 842},
			{"image", "cmyk", "image", 300, 300}, {"image", "rgb", "image", 400, 300}, {"smask", "gray", "image", 400, 300},
			{"image", "gray", "image", 400, 300}}},
		{"recompressed, size kept", 50, 0, []pdfImage{
			{"image", "rgb", "jpeg", 1600, 1200}, {"image", "gray", "jpeg", 1000, 1000},
			{"image", "cmyk", "image", 300, 300}, {"image", "rgb", "image", 400, 300}, {"smask", "gray", "image", 400, 300},
			{"image", "gray", "image", 400, 300}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			before, after, err := Optimize(context.Background(), bytes.NewReader(in), &out, tc.quality, tc.dpi)
			if err != nil {
				t.Fatal(err)
			}
			if before != int64(len(in)) || after != int64(out.Len()) || after >= before/2 {
				t.Fatalf("before %d after %d (input %d, output %d): want at least halved", before, after, len(in), out.Len())
			}
			path := tmpPDF(t, out.Bytes())
			qpdfCheck(t, path)
			if got := listImages(t, path); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("images\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// Optimize never makes a file larger: one it cannot shrink comes back
// byte for byte.
func TestOptimizeNeverLarger(t *testing.T) {
	in := rawPDF("O", 1, 0)
	var out bytes.Buffer
	before, after, err := Optimize(context.Background(), bytes.NewReader(in), &out, 80, 150)
	if err != nil {
		t.Fatal(err)
	}
	if after > before || (after == before && !bytes.Equal(out.Bytes(), in)) || int64(out.Len()) != after {
		t.Fatalf("before %d after %d, output %d bytes", before, after, out.Len())
	}
}

func TestOptimizeOptions(t *testing.T) {
	for _, tc := range []struct {
		quality, dpi int
		field        string
	}{{0, 72, "imageQuality"}, {101, 72, "imageQuality"}, {80, -1, "maxImageDpi"}} {
		_, _, err := Optimize(context.Background(), bytes.NewReader(rawPDF("O", 1, 0)), &bytes.Buffer{}, tc.quality, tc.dpi)
		if got := optionField(err); got != tc.field {
			t.Errorf("quality %d dpi %d: %v, want an option error naming %s", tc.quality, tc.dpi, err, tc.field)
		}
	}
}

func TestSetMetadata(t *testing.T) {
	needTools(t, "pdfinfo", "qpdf")
	info := &jobspb.DocInfo{Title: "Ünïcode & <title>", Author: "Ada Lovelace", Subject: "Engines", Keywords: []string{"one", "two"}, Creator: "docrender tests"}
	pdfa := bytes.Replace(onePage("A", "", stream("/Type /Metadata /Subtype /XML",
		[]byte(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/" xmlns:dc="http://purl.org/dc/elements/1.1/" pdfaid:part="2" pdfaid:conformance="B"><dc:title><rdf:Alt><rdf:li xml:lang="x-default">Old title</rdf:li></rdf:Alt></dc:title></rdf:Description></rdf:RDF></x:xmpmeta>`))),
		[]byte("/Pages 2 0 R"), []byte("/Pages 2 0 R /Metadata 5 0 R"), 1)
	tests := []struct {
		name   string
		in     []byte
		want   []string
		absent []string
	}{
		{"plain", rawPDF("M", 1, 0), []string{
			"<dc:title><rdf:Alt><rdf:li xml:lang=\"x-default\">Ünïcode &amp; &lt;title&gt;</rdf:li>",
			"<dc:creator><rdf:Seq><rdf:li>Ada Lovelace</rdf:li>",
			"<dc:description><rdf:Alt><rdf:li xml:lang=\"x-default\">Engines</rdf:li>",
			"<pdf:Keywords>one, two</pdf:Keywords>",
			"<xmp:CreatorTool>docrender tests</xmp:CreatorTool>",
			"<pdf:Producer>pdfcpu", "<xmp:CreateDate>", "<xmp:ModifyDate>"}, []string{"pdfaid"}},
		{"claims kept, old packet replaced", fixXref(t, pdfa), []string{"<pdfaid:part>2</pdfaid:part><pdfaid:conformance>B</pdfaid:conformance>", "Ünïcode"}, []string{"Old title"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := SetMetadata(context.Background(), bytes.NewReader(tc.in), &out, info); err != nil {
				t.Fatal(err)
			}
			path := tmpPDF(t, out.Bytes())
			qpdfCheck(t, path)
			meta := run(t, "pdfinfo", "-meta", path)
			for _, w := range tc.want {
				if !strings.Contains(meta, w) {
					t.Errorf("XMP lacks %q:\n%s", w, meta)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(meta, a) {
					t.Errorf("XMP still says %q", a)
				}
			}
			plain := run(t, "pdfinfo", path)
			for _, w := range []string{"Title: Ünïcode & <title>\n", "Author: Ada Lovelace\n", "Subject: Engines\n", "Keywords: one, two\n", "Creator: docrender tests\n"} {
				if !strings.Contains(regexp.MustCompile(` +`).ReplaceAllString(plain, " "), w) {
					t.Errorf("Info lacks %q:\n%s", w, plain)
				}
			}
			// Info's dates are the second XMP says.
			created := regexp.MustCompile(`<xmp:CreateDate>(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)`).FindStringSubmatch(meta)
			isoInfo := run(t, "pdfinfo", "-isodates", path)
			if created == nil || !strings.Contains(isoInfo, created[1]) {
				t.Errorf("XMP CreateDate %v not Info's:\n%s", created, isoInfo)
			}
		})
	}
}

// hostile builds the hostile inputs every tool must refuse or survive.
func hostile(t *testing.T) []struct {
	name   string
	pdf    []byte
	refuse string // if set, every tool must answer a *BadInputError saying it
} {
	manyBombs := flateBombs()
	oneBomb := onePage("B", "", stream("/Filter [/FlateDecode /FlateDecode]", deflated(deflated(make([]byte, 300<<20)))))

	manyPages := pagesSharingContent(100_000)

	claimsMany := bytes.Replace(rawPDF("C", 2, 0), []byte("/Count 2"), []byte("/Count 100000"), 1)
	huge := imagePDF(stream("/Type /XObject /Subtype /Image /Width 100000 /Height 100000 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode", deflated(make([]byte, 1<<20))))
	good := rawPDF("G", 3, 2)
	selfPrev := bytes.Replace(good, []byte("/Root 1 0 R"), []byte("/Root 1 0 R /Prev "+startxref(good)), 1)
	loopTree := bytes.Replace(rawPDF("L", 2, 0), []byte("/Kids [4 0 R"), []byte("/Kids [2 0 R 4 0 R"), 1)
	return []struct {
		name   string
		pdf    []byte
		refuse string
	}{
		{"flate bombs past the total", manyBombs, "decompress to over 256 MiB"},
		{"nested flate bomb", oneBomb, "decompress to over 256 MiB"},
		{"100,000 pages", manyPages, "100000 pages"},
		{"claims 100,000 pages", claimsMany, ""},
		{"image of 100,000 x 100,000 pixels", huge, ""},
		{"truncated", good[:len(good)*2/3], ""},
		{"truncated header", good[:20], "corrupt"},
		{"xref loop", selfPrev, ""},
		{"page tree loop", loopTree, ""},
		{"not a PDF", []byte("GIF89a"), "not a PDF"},
		{"empty", nil, "empty"},
	}
}

// flateBombs is a page with 40 streams of 8 MiB of zeros: each under
// pdfcpu's bound for one stream, 320 MiB together.
func flateBombs() []byte {
	bomb := deflated(make([]byte, 8<<20))
	var bombs [][]byte
	var kids strings.Builder
	for i := range 40 {
		bombs = append(bombs, stream("/Filter /FlateDecode", bomb))
		fmt.Fprintf(&kids, "%d 0 R ", 5+i)
	}
	return onePage("B", "/Bombs ["+kids.String()+"]", bombs...)
}

// pagesSharingContent is a PDF of n pages sharing one content stream.
func pagesSharingContent(n int) []byte {
	objs := [][]byte{[]byte("<< /Type /Catalog /Pages 2 0 R >>"), nil, stream("", []byte("BT ET"))}
	var pk strings.Builder
	for i := range n {
		fmt.Fprintf(&pk, "%d 0 R ", 4+i)
		objs = append(objs, []byte("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] /Contents 3 0 R >>"))
	}
	objs[1] = fmt.Appendf(nil, "<< /Type /Pages /Kids [%s] /Count %d >>", pk.String(), n)
	return assemble(objs, "")
}

// startxref is the offset startxref gives.
func startxref(pdf []byte) string {
	i := bytes.LastIndex(pdf, []byte("startxref"))
	return strings.Fields(string(pdf[i+len("startxref"):]))[0]
}

// tools runs every tool on data, by name.
func tools() map[string]func(ctx context.Context, data []byte) error {
	return map[string]func(ctx context.Context, data []byte) error{
		"split": func(ctx context.Context, data []byte) error {
			_, err := Split(ctx, bytes.NewReader(data), "", 1, MaxToolPages)
			return err
		},
		"pages": func(ctx context.Context, data []byte) error {
			_, err := Pages(ctx, bytes.NewReader(data), "1", map[string]int{"1": 90}, "", &bytes.Buffer{})
			return err
		},
		"flatten": func(ctx context.Context, data []byte) error {
			return Flatten(ctx, bytes.NewReader(data), &bytes.Buffer{})
		},
		"optimize": func(ctx context.Context, data []byte) error {
			_, _, err := Optimize(ctx, bytes.NewReader(data), &bytes.Buffer{}, 70, 150)
			return err
		},
		"metadata": func(ctx context.Context, data []byte) error {
			return SetMetadata(ctx, bytes.NewReader(data), &bytes.Buffer{}, &jobspb.DocInfo{Title: "T"})
		},
	}
}

func TestToolsHostile(t *testing.T) {
	for _, h := range hostile(t) {
		for name, tool := range tools() {
			t.Run(h.name+"/"+name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				start := time.Now()
				err := tool(ctx, h.pdf)
				switch {
				case ctx.Err() != nil:
					t.Fatalf("took over %v", time.Since(start))
				case h.refuse != "" && (!isBad(err) || !strings.Contains(err.Error(), h.refuse)):
					t.Fatalf("err %v, want a bad input saying %q", err, h.refuse)
				case err != nil && !isBad(err) && optionField(err) == "":
					t.Fatalf("err %v (%T) is neither a result nor the client's fault", err, err)
				}
			})
		}
	}
}

// FuzzTools: any bytes given to a PDF tool yield a result or the client's
// fault, never a panic or an error the queue would retry.
func FuzzTools(f *testing.F) {
	good := rawPDF("F", 2, 1)
	for _, seed := range [][]byte{good, good[:len(good)/2], outlinedPDF("O", 3),
		onePage("Z", "", stream("/Filter /FlateDecode", deflated(make([]byte, 1<<16)))),
		bytes.Replace(good, []byte("/Root 1 0 R"), []byte("/Root 1 0 R /Prev "+startxref(good)), 1),
		imagePDF(imageObj(16, 16, "/DeviceRGB", 3, "")),
		[]byte("%PDF-1.7\n%%EOF")} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, tool := range tools() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := tool(ctx, data)
			if err != nil && !isBad(err) && optionField(err) == "" && ctx.Err() == nil {
				cancel()
				t.Fatalf("%s: %q: %v", name, data, err)
			}
			cancel()
		}
	})
}
