package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// The lazy split (split_lazy.go): what it copies, what it leaves to
// pdfcpu, and that its parts read as pdfcpu's do.

// lazySplitOnly splits data by the lazy path only ("1-2,3" or every),
// failing the test when it would go to pdfcpu.
func lazySplitOnly(t *testing.T, data []byte, ranges string, every int) [][]byte {
	t.Helper()
	spans := mustRanges(t, ranges)
	parts, ok, err := splitLazyParts(context.Background(), data, spans, every, 100)
	if !ok || err != nil {
		t.Fatalf("splitLazyParts: ok %v, %v", ok, err)
	}
	return parts
}

func mustRanges(t *testing.T, ranges string) []pdfopts.PageRange {
	t.Helper()
	if ranges == "" {
		return nil
	}
	spans, err := parseRanges("ranges", ranges, false)
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

// pdfcpuSplit is the pdfcpu path's parts of data (Split before the lazy
// path), for comparing.
func pdfcpuSplit(t *testing.T, data []byte, spans []pdfopts.PageRange) [][]byte {
	t.Helper()
	var parts [][]byte
	for _, s := range spans {
		pc, err := readUntagged(context.Background(), data, model.SPLIT)
		if err != nil {
			t.Fatal(err)
		}
		var pages []int
		for p := s.First; p <= s.Last; p++ {
			pages = append(pages, p)
		}
		var out bytes.Buffer
		if err := extractTo(context.Background(), pc, pages, &out); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, out.Bytes())
	}
	return parts
}

// textStream is a content stream object drawing s in /F1.
func textStream(s string) string {
	c := fmt.Sprintf("BT /F1 14 Tf 20 100 Td (%s) Tj ET", s)
	return fmt.Sprintf("<</Length %d>>\nstream\n%s\nendstream", len(c), c)
}

const helvetica = "<</Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding>>"

// linksPDF: three pages (LINKONE, LINKTWO, LINKTHREE) of a tagged
// document; page 1 has five links: to page 3 (/Dest), to page 2 (GoTo),
// to the name n3, to a URI, to page 1. The catalog's /Dests names each
// page (n1 direct, n2 through an object, n3 a dictionary's /D). Info's
// Author is UTF-16.
func linksPDF() []byte {
	page := func(content, extra string) string {
		return "<</Type /Page /Parent 2 0 R /Resources <</Font <</F1 3 0 R>>>> /Contents " + content + " " + extra + ">>"
	}
	return classicPDF([]lazyObjDef{
		{1, 0, "<</Type /Catalog /Pages 2 0 R /Dests 20 0 R /StructTreeRoot 30 0 R /MarkInfo <</Marked true>>>>"},
		{2, 0, "<</Type /Pages /Kids [4 0 R 6 0 R 8 0 R] /Count 3 /MediaBox [0 0 400 300]>>"},
		{3, 0, helvetica},
		{4, 0, page("5 0 R", "/StructParents 0 /Annots [11 0 R 12 0 R 13 0 R 14 0 R 15 0 R]")},
		{5, 0, textStream("LINKONE")},
		{6, 0, page("7 0 R", "/StructParents 1")},
		{7, 0, textStream("LINKTWO")},
		{8, 0, page("9 0 R", "/StructParents 2")},
		{9, 0, textStream("LINKTHREE")},
		{11, 0, "<</Type /Annot /Subtype /Link /Rect [0 0 10 10] /Dest [8 0 R /XYZ 0 300 0] /StructParent 3>>"},
		{12, 0, "<</Type /Annot /Subtype /Link /Rect [0 10 10 20] /A <</S /GoTo /D [6 0 R /Fit]>>>>"},
		{13, 0, "<</Type /Annot /Subtype /Link /Rect [0 20 10 30] /Dest /n3>>"},
		{14, 0, "<</Type /Annot /Subtype /Link /Rect [0 30 10 40] /A <</S /URI /URI (https://example.com/)>>>>"},
		{15, 0, "<</Type /Annot /Subtype /Link /Rect [0 40 10 50] /Dest [4 0 R /Fit]>>"},
		{20, 0, "<</n1 [4 0 R /Fit] /n2 21 0 R /n3 <</D [8 0 R /XYZ 0 0 0]>>>>"},
		{21, 0, "[6 0 R /Fit]"},
		{22, 0, "<</Title (Links \\(and names\\)) /Author <FEFF00C9006D0069006C0065> /Subject 23 0 R /Producer (x) /Creator (Tests)>>"},
		{23, 0, "(Indirect subject)"},
		{30, 0, "<</Type /StructTreeRoot /K [31 0 R] /ParentTree 32 0 R>>"},
		{31, 0, "<</Type /StructElem /S /Document /P 30 0 R /K [<</Type /MCR /Pg 4 0 R /MCID 0>>]>>"},
		{32, 0, "<</Nums [0 [31 0 R]]>>"},
	}, nil, "/Size 33 /Root 1 0 R /Info 22 0 R")
}

// linkTargets describes where each annotation of page 1 of pdf goes: "page
// N" (of pdf), "null" (a page left out), "name X", "uri", "none"; read with
// the lazy reader, independent of pdfcpu.
func linkTargets(t *testing.T, pdf []byte) []string {
	t.Helper()
	d, err := newLazyDoc([][]byte{pdf})
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := d.DereferenceDict(*types.NewIndirectRef(d.parts[0].root, 0))
	root, _ := d.DereferenceDict(cat["Pages"])
	pageOf := map[int]int{}
	for i, k := range root.ArrayEntry("Kids") {
		pageOf[k.(types.IndirectRef).ObjectNumber.Value()] = i + 1
	}
	page1, _ := d.DereferenceDict(root.ArrayEntry("Kids")[0])
	annots, _ := d.DereferenceArray(page1["Annots"])
	var out []string
	for _, a := range annots {
		ad, _ := d.DereferenceDict(a)
		dest := ad["Dest"]
		if act, _ := d.DereferenceDict(ad["A"]); act != nil {
			if act["URI"] != nil {
				out = append(out, "uri")
				continue
			}
			dest = act["D"]
		}
		o, _ := d.Dereference(dest)
		switch v := o.(type) {
		case types.Name:
			out = append(out, "name "+string(v))
		case types.Array:
			switch r := v[0].(type) {
			case nil:
				out = append(out, "null")
			case types.IndirectRef:
				if p, ok := pageOf[r.ObjectNumber.Value()]; ok {
					out = append(out, fmt.Sprintf("page %d", p))
				} else {
					out = append(out, fmt.Sprintf("object %d, not a page", r.ObjectNumber.Value()))
				}
			default:
				out = append(out, fmt.Sprintf("%v", r))
			}
		default:
			out = append(out, "none")
		}
	}
	return out
}

func TestSplitLazyLinks(t *testing.T) {
	needTools(t, "qpdf", "pdftotext", "pdfinfo")
	// The fuzz target's reading of a PDF as objects keeps it one.
	if n := len(lazySplitOnly(t, asObjects(linksPDF()), "", 1)); n != 3 {
		t.Fatalf("asObjects: %d parts, want 3", n)
	}
	parts := lazySplitOnly(t, linksPDF(), "1,1-2,2-3", 0)
	want := []struct {
		text  []string
		links []string
		dests map[string]int
	}{
		{[]string{"LINKONE"}, []string{"null", "null", "name n3", "uri", "page 1"}, map[string]int{"n1": 1}},
		{[]string{"LINKONE", "LINKTWO"}, []string{"null", "page 2", "name n3", "uri", "page 1"}, map[string]int{"n1": 1, "n2": 2}},
		{[]string{"LINKTWO", "LINKTHREE"}, nil, map[string]int{"n2": 1, "n3": 2}},
	}
	for i, part := range parts {
		path := tmpPDF(t, part)
		qpdfCheck(t, path)
		w := want[i]
		if n := pdfinfoPages(t, path); n != len(w.text) {
			t.Fatalf("part %d: %d pages, want %d", i, n, len(w.text))
		}
		for j, text := range w.text {
			if got := pageText(t, path, j+1); strings.TrimSpace(got) != text {
				t.Errorf("part %d page %d: %q, want %q", i, j+1, got, text)
			}
		}
		for _, s := range []string{"LINKONE", "LINKTWO", "LINKTHREE"} {
			if !slices.Contains(w.text, s) && bytes.Contains(part, []byte(s)) {
				t.Errorf("part %d carries the content of %s, a page left out", i, s)
			}
		}
		for _, s := range []string{"/StructTreeRoot", "/StructParents", "/StructElem", "/MarkInfo"} {
			if bytes.Contains(part, []byte(s)) {
				t.Errorf("part %d carries %s", i, s)
			}
		}
		if got := linkTargets(t, part); !slices.Equal(got, w.links) {
			t.Errorf("part %d links: %q, want %q", i, got, w.links)
		}
		dests, _, err := DestPages(context.Background(), part)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(dests) != fmt.Sprint(w.dests) {
			t.Errorf("part %d destinations %v, want %v", i, dests, w.dests)
		}
		info := pdfinfoFields(t, path)
		for k, v := range map[string]string{"Title": "Links (and names)", "Author": "Émile", "Subject": "Indirect subject", "Creator": "Tests", "Producer": "pdfcpu " + model.VersionStr} {
			if info[k] != v {
				t.Errorf("part %d: %s %q, want %q", i, k, info[k], v)
			}
		}
	}
}

// inheritedPDF: three pages under a root (MediaBox 612×792, Resources by
// reference) and an intermediate node (MediaBox 300×400, CropBox, Rotate
// 90, Resources direct); the second page has its own MediaBox, CropBox
// and Rotate 0.
func inheritedPDF() []byte {
	return classicPDF([]lazyObjDef{
		{1, 0, "<</Type /Catalog /Pages 2 0 R>>"},
		{2, 0, "<</Type /Pages /Kids [3 0 R 10 0 R] /Count 3 /MediaBox [0 0 612 792] /Resources 9 0 R>>"},
		{3, 0, "<</Type /Pages /Parent 2 0 R /Kids [4 0 R 6 0 R] /Count 2 /MediaBox [0 0 300 400] /CropBox [10 10 290 390] /Rotate 90 /Resources <</Font <</F1 8 0 R>>>>>>"},
		{4, 0, "<</Type /Page /Parent 3 0 R /Contents 5 0 R>>"},
		{5, 0, textStream("INHONE")},
		{6, 0, "<</Type /Page /Parent 3 0 R /Contents 7 0 R /MediaBox [0 0 200 250] /CropBox [0 0 200 250] /Rotate 0>>"},
		{7, 0, textStream("INHTWO")},
		{8, 0, helvetica},
		{9, 0, "<</Font <</F1 8 0 R>>>>"},
		{10, 0, "<</Type /Page /Parent 2 0 R /Contents 11 0 R>>"},
		{11, 0, textStream("INHTHREE")},
	}, nil, "/Size 12 /Root 1 0 R")
}

var boxRe = regexp.MustCompile(`(?m)^Page\s+(\d+) (MediaBox|CropBox|rot):\s+(.*)$`)

// pageBoxes is each page's "MediaBox …; CropBox …; rot …" as pdfinfo
// -box reports them (white space squeezed); cropBox false leaves CropBox
// out.
func pageBoxes(t *testing.T, path string, n int, cropBox bool) []string {
	t.Helper()
	out := make([][]string, n)
	for _, m := range boxRe.FindAllStringSubmatch(run(t, "pdfinfo", "-box", "-f", "1", "-l", strconv.Itoa(n), path), -1) {
		p, _ := strconv.Atoi(m[1])
		if p < 1 || p > n || m[2] == "CropBox" && !cropBox {
			continue
		}
		out[p-1] = append(out[p-1], m[2]+" "+strings.Join(strings.Fields(m[3]), " "))
	}
	s := make([]string, n)
	for i, o := range out {
		slices.Sort(o)
		s[i] = strings.Join(o, "; ")
	}
	return s
}

func TestSplitLazyInherited(t *testing.T) {
	needTools(t, "qpdf", "pdftotext", "pdfinfo")
	in := inheritedPDF()
	parts := lazySplitOnly(t, in, "", 1)
	want := []struct{ text, boxes string }{
		{"INHONE", "CropBox 10.00 10.00 290.00 390.00; MediaBox 0.00 0.00 300.00 400.00; rot 90"},
		{"INHTWO", "CropBox 0.00 0.00 200.00 250.00; MediaBox 0.00 0.00 200.00 250.00; rot 0"},
		{"INHTHREE", "CropBox 0.00 0.00 612.00 792.00; MediaBox 0.00 0.00 612.00 792.00; rot 0"},
	}
	if len(parts) != len(want) {
		t.Fatalf("%d parts, want %d", len(parts), len(want))
	}
	cpu := pdfcpuSplit(t, in, []pdfopts.PageRange{{First: 1, Last: 1}, {First: 2, Last: 2}, {First: 3, Last: 3}})
	for i, part := range parts {
		path := tmpPDF(t, part)
		qpdfCheck(t, path)
		if got := strings.TrimSpace(pageText(t, path, 1)); got != want[i].text {
			t.Errorf("part %d: text %q, want %q", i, got, want[i].text)
		}
		if got := pageBoxes(t, path, 1, true)[0]; got != want[i].boxes {
			t.Errorf("part %d: %s, want %s", i, got, want[i].boxes)
		}
		// pdfcpu's extraction agrees but for the CropBox, which it does
		// not carry down.
		cpuPath := tmpPDF(t, cpu[i])
		if got, want := pageBoxes(t, path, 1, false), pageBoxes(t, cpuPath, 1, false); !slices.Equal(got, want) {
			t.Errorf("part %d: %q, pdfcpu's %q", i, got, want)
		}
		if got, want := pageText(t, path, 1), pageText(t, cpuPath, 1); got != want {
			t.Errorf("part %d: text %q, pdfcpu's %q", i, got, want)
		}
	}
	// The intermediate node's direct resources are one object, not one a
	// page.
	both := lazySplitOnly(t, in, "1-2", 0)[0]
	if n := len(regexp.MustCompile(`/F1 ?\d+ 0 R`).FindAll(both, -1)); n != 1 {
		t.Errorf("the inherited resources are written %d times in a part of two pages, want once", n)
	}
}

// TestSplitLazyTagged: Chromium's tagged print is split by the lazy path;
// the parts keep the text and carry nothing of the structure tree.
func TestSplitLazyTagged(t *testing.T) {
	needTools(t, "qpdf", "pdftotext", "pdfinfo")
	in := chromiumPDF(t)
	src := tmpPDF(t, in)
	for i, part := range lazySplitOnly(t, in, "", 1) {
		path := tmpPDF(t, part)
		qpdfCheck(t, path)
		if got, want := pageText(t, path, 1), pageText(t, src, i+1); strings.TrimSpace(got) == "" || got != want {
			t.Errorf("part %d: %q, want %q", i, got, want)
		}
		for _, s := range []string{"/StructTreeRoot", "/StructParents", "/StructElem"} {
			if bytes.Contains(part, []byte(s)) {
				t.Errorf("part %d carries %s", i, s)
			}
		}
		if info := pdfinfoFields(t, path); info["Title"] != chromiumTitle || !strings.Contains(info["Creator"], chromiumCreator) {
			t.Errorf("part %d: Info %v", i, info)
		}
	}
}

// TestSplitLazyMatchesPdfcpu: the benchmark document split by the lazy
// path and by pdfcpu's: the same pages, text per page and page sizes.
func TestSplitLazyMatchesPdfcpu(t *testing.T) {
	needTools(t, "qpdf", "pdftotext", "pdfinfo")
	in, err := os.ReadFile(splitBenchPDF)
	if err != nil {
		t.Skip(err)
	}
	spans := []pdfopts.PageRange{{First: 1, Last: 10}, {First: 11, Last: 20}, {First: 21, Last: 30}, {First: 31, Last: 40}, {First: 41, Last: 50}, {First: 7, Last: 7}, {First: 49, Last: 50}}
	lazy, ok, err := splitLazyParts(context.Background(), in, spans, 0, 100)
	if !ok || err != nil {
		t.Fatalf("splitLazyParts: ok %v, %v", ok, err)
	}
	cpu := pdfcpuSplit(t, in, spans)
	src := tmpPDF(t, in)
	for i, s := range spans {
		n := s.Last - s.First + 1
		lp, cp := tmpPDF(t, lazy[i]), tmpPDF(t, cpu[i])
		qpdfCheck(t, lp)
		if got := pdfinfoPages(t, lp); got != n {
			t.Fatalf("part %d: %d pages, want %d", i, got, n)
		}
		lt := strings.Split(run(t, "pdftotext", "-q", "-raw", lp, "-"), "\f")
		ct := strings.Split(run(t, "pdftotext", "-q", "-raw", cp, "-"), "\f")
		st := strings.Split(run(t, "pdftotext", "-q", "-raw", "-f", strconv.Itoa(s.First), "-l", strconv.Itoa(s.Last), src, "-"), "\f")
		for j := range n {
			if lt[j] != ct[j] || lt[j] != st[j] || strings.TrimSpace(lt[j]) == "" {
				t.Errorf("part %d page %d: text %.60q, pdfcpu's %.60q, the input's %.60q", i, j+1, lt[j], ct[j], st[j])
			}
		}
		if got, want := pageBoxes(t, lp, n, true), pageBoxes(t, cp, n, true); !slices.Equal(got, want) {
			t.Errorf("part %d: %q, pdfcpu's %q", i, got, want)
		}
		if bytes.Contains(lazy[i], []byte("/StructElem")) {
			t.Errorf("part %d carries structure elements", i)
		}
		if len(lazy[i]) > len(cpu[i])*11/10 {
			t.Errorf("part %d: %d bytes, pdfcpu's %d", i, len(lazy[i]), len(cpu[i]))
		}
	}
}

// classicCopy is pdf rewritten by qpdf without object streams (a classic
// xref table the lazy reader indexes).
func classicCopy(t *testing.T, pdf []byte) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "classic.pdf")
	run(t, "qpdf", "--object-streams=disable", tmpPDF(t, pdf), out)
	return readFile(t, out)
}

// TestSplitLazyFallback: what the lazy path leaves to pdfcpu, and what
// Split then answers (as before the lazy path).
func TestSplitLazyFallback(t *testing.T) {
	needTools(t, "qpdf", "pdftotext", "pdfinfo")
	good := rawPDF("F", 3, 0)
	// rawPDF: 1 catalog, 2 pages, 3 font, then page p at 4+2(p-1).
	cyclic := bytes.Replace(good, []byte("/Kids [4 0 R"), []byte("/Kids [2 0 R 4 0 R"), 1)
	twice := bytes.Replace(good, []byte("/Kids [4 0 R 6 0 R 8 0 R] /Count 3"), []byte("/Kids [4 0 R 4 0 R 8 0 R] /Count 3"), 1)
	catalogKid := bytes.Replace(good, []byte("/Kids [4 0 R 6 0 R 8 0 R] /Count 3"), []byte("/Kids [4 0 R 1 0 R 8 0 R] /Count 3"), 1)
	countLies := bytes.Replace(good, []byte("/Count 3"), []byte("/Count 4"), 1)
	noMediaBox := bytes.ReplaceAll(good, []byte("/MediaBox [0 0 595 842]"), []byte("                       "))
	directKid := classicPDF([]lazyObjDef{
		{1, 0, "<</Type /Catalog /Pages 2 0 R>>"},
		{2, 0, "<</Type /Pages /Kids [<</Type /Page /MediaBox [0 0 100 100]>>] /Count 1>>"},
	}, nil, "/Size 3 /Root 1 0 R")
	// 70 /Pages nodes, one in another, over one page.
	deep := []lazyObjDef{{1, 0, "<</Type /Catalog /Pages 2 0 R>>"}}
	for i := range 70 {
		deep = append(deep, lazyObjDef{2 + i, 0, fmt.Sprintf("<</Type /Pages /Kids [%d 0 R] /Count 1>>", 3+i)})
	}
	deep = append(deep, lazyObjDef{72, 0, "<</Type /Page /MediaBox [0 0 100 100]>>"})
	deepTree := classicPDF(deep, nil, "/Size 73 /Root 1 0 R")
	widget := bytes.Replace(good, []byte("/Contents 5 0 R"), []byte("/Contents 5 0 R /Annots [<</Type /Annot /Subtype /Widget /FT /Tx /T (name) /Rect [0 0 100 20]>>]"), 1)
	names := bytes.Replace(good, []byte("/Type /Catalog"), []byte("/Type /Catalog /Names <</Dests <</Names [(a) [4 0 R /Fit]]>>>>"), 1)
	off := bytes.Index(good, []byte("\n5 0 obj")) + 1
	badOffset := bytes.Replace(good, fmt.Appendf(nil, "%010d 00000 n", off), fmt.Appendf(nil, "%010d 00000 n", off+1), 1)
	form := classicCopy(t, formPDF(t, "Jane"))
	if _, err := readLazyPart(form); err != nil {
		t.Fatalf("the form's copy is not in the lazy layout: %v", err)
	}

	for _, tc := range []struct {
		name  string
		pdf   []byte
		pages int    // Split's parts (every 1), 0: a result or a bad input
		bad   string // Split's answer is a *BadInputError saying it
	}{
		{"cyclic page tree", cyclic, 0, ""},
		{"a page twice in the tree", twice, 0, ""},
		{"the catalog as a kid", catalogKid, 0, ""},
		{"a Count that lies", countLies, 0, ""},
		{"a page without MediaBox", noMediaBox, 0, "MediaBox"},
		{"a direct kid", directKid, 0, ""},
		{"70 levels deep", deepTree, 0, ""},
		{"a form field widget without AcroForm", widget, 3, ""},
		{"a name tree", names, 3, ""},
		{"an object off its offset", badOffset, 0, ""},
		{"truncated", good[:len(good)*2/3], 0, ""},
		{"object streams", qpdfPDF(t, "O", 3), 3, ""},
		{"a form", form, 1, ""},
		{"encrypted", encrypted(t, good, &jobspb.Encryption{UserPassword: "user", OwnerPassword: "owner"}), 0, "encrypted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, ok, err := splitLazyParts(ctx, tc.pdf, nil, 1, 100); ok {
				t.Fatalf("the lazy path took it (%v)", err)
			}
			parts, err := Split(ctx, bytes.NewReader(tc.pdf), "", 1, 100)
			switch {
			case tc.bad != "":
				if !isBad(err) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("Split: %v, want a bad input saying %q", err, tc.bad)
				}
			case tc.pages > 0:
				if err != nil || len(parts) != tc.pages {
					t.Fatalf("Split: %d parts, %v; want %d", len(parts), err, tc.pages)
				}
				for i, part := range parts {
					if n := pdfinfoPages(t, tmpPDF(t, part)); n != 1 {
						t.Errorf("part %d: %d pages", i, n)
					}
				}
			case err != nil && !isBad(err):
				t.Fatalf("Split: %v, neither a result nor a bad input", err)
			}
			if tc.name == "a form" && !bytes.Contains(parts[0], []byte("/AcroForm")) {
				t.Error("the form's part has no /AcroForm")
			}
		})
	}
}

// TestSplitContractBothPaths: Split's option errors and bounds are the
// same whichever path reads the document.
func TestSplitContractBothPaths(t *testing.T) {
	needTools(t, "qpdf")
	lazy := rawPDF("C", 10, 0)
	for _, doc := range []struct {
		name   string
		pdf    []byte
		isLazy bool
	}{{"lazy", lazy, true}, {"pdfcpu", qpdfPDF(t, "C", 10), false}} {
		if got := newLazySplit(doc.pdf) != nil; got != doc.isLazy {
			t.Fatalf("%s: lazy %v", doc.name, got)
		}
		for _, tc := range []struct {
			ranges   string
			every    int
			maxParts int
			field    string
			parts    int
		}{
			{"1-3,4-10", 0, 10, "", 2},
			{"", 3, 10, "", 4},
			{"", 1, 9, "every", 0},
			{"1,2,3", 0, 2, "ranges", 0},
			{"1-11", 0, 10, "ranges", 0},
			{"9-11,1", 0, 10, "ranges", 0},
			{"0-2", 0, 10, "ranges", 0},
			{"", -1, 10, "every", 0},
			{"1", 1, 10, "ranges", 0},
		} {
			parts, err := Split(context.Background(), bytes.NewReader(doc.pdf), tc.ranges, tc.every, tc.maxParts)
			if tc.field != "" {
				if optionField(err) != tc.field {
					t.Errorf("%s %q every %d: %v, want an option error naming %s", doc.name, tc.ranges, tc.every, err, tc.field)
				}
				continue
			}
			if err != nil || len(parts) != tc.parts {
				t.Errorf("%s %q every %d: %d parts, %v; want %d", doc.name, tc.ranges, tc.every, len(parts), err, tc.parts)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Split(ctx, bytes.NewReader(doc.pdf), "", 1, 10); !errors.Is(err, context.Canceled) {
			t.Errorf("%s, cancelled: %v", doc.name, err)
		}
	}

	// The decompression bound runs first: these bombs are in the lazy
	// path's layout, which decodes nothing itself.
	manyBombs := flateBombs()
	if newLazySplit(manyBombs) == nil {
		t.Fatal("the bombs are not in the lazy layout")
	}
	if _, err := Split(context.Background(), bytes.NewReader(manyBombs), "", 1, 10); !isBad(err) || !strings.Contains(err.Error(), "decompress") {
		t.Errorf("bombs: %v, want a bad input", err)
	}
	// Past MaxToolPages, pdfcpu's read refuses the document (the lazy
	// walk stops there).
	many := pagesSharingContent(MaxToolPages + 1)
	if newLazySplit(many) != nil {
		t.Error("the lazy path read more than MaxToolPages pages")
	}
	if _, err := Split(context.Background(), bytes.NewReader(many), "", 1, 100_000); !isBad(err) || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d pages: %v, want a bad input", MaxToolPages+1, err)
	}
}

// TestSplitLazyBoundedOutput: a node's large resources, inherited by many
// pages, are written once a part, not once a page.
func TestSplitLazyBoundedOutput(t *testing.T) {
	n := 2000
	big := strings.Repeat("/Pad"+strings.Repeat("x", 60)+" 1 ", 1000) // ~65 KB
	objs := []lazyObjDef{
		{1, 0, "<</Type /Catalog /Pages 2 0 R>>"},
		{3, 0, textStream("PAGE")},
		{4, 0, helvetica},
	}
	var kids strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", 5+i)
		objs = append(objs, lazyObjDef{5 + i, 0, "<</Type /Page /Parent 2 0 R /Contents 3 0 R>>"})
	}
	objs = append(objs, lazyObjDef{2, 0, fmt.Sprintf("<</Type /Pages /Kids [%s] /Count %d /MediaBox [0 0 100 100] /Resources <</Font <</F1 4 0 R>> %s>>>>", kids.String(), n, big)})
	slices.SortFunc(objs, func(a, b lazyObjDef) int { return a.n - b.n })
	in := classicPDF(objs, nil, fmt.Sprintf("/Size %d /Root 1 0 R", n+5))
	parts := lazySplitOnly(t, in, "1-2000", 0)
	if len(parts[0]) > len(in)+n*100 {
		t.Errorf("a part of %d bytes from %d bytes of input", len(parts[0]), len(in))
	}
}

// FuzzLazySplit: any bytes given to the lazy split are split or left to
// pdfcpu, never a panic (splitLazyParts runs without splitLazy's
// recover), a hang or an error other than the options'; what it splits,
// the lazy reader reads back, a page a part. Each input is also read as
// objects (asObjects) with an exact xref table, so that mutations reach
// the page tree, /Dests and annotations instead of breaking offsets.
func FuzzLazySplit(f *testing.F) {
	chromium, err := os.ReadFile("testdata/chromium.pdf")
	if err != nil {
		f.Fatal(err)
	}
	tricky, _ := lazyTrickyPDF()
	good := rawPDF("Z", 3, 0)
	for _, seed := range [][]byte{chromium, tricky, linksPDF(), inheritedPDF(), good,
		bytes.Replace(good, []byte("/Kids [4 0 R"), []byte("/Kids [2 0 R 4 0 R"), 1),
		chromium[:len(chromium)-40]} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		hang := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("FuzzLazySplit: no result after 10 s on %d bytes", len(data))) })
		defer hang.Stop()
		for _, in := range [][]byte{data, asObjects(data)} {
			parts, ok, err := splitLazyParts(context.Background(), in, nil, 1, MaxToolPages)
			if !ok {
				continue
			}
			if err != nil {
				if optionField(err) == "" {
					t.Fatalf("splitLazyParts: %v", err)
				}
				continue
			}
			for i, part := range parts {
				if s := newLazySplit(part); s == nil || len(s.pages) != 1 {
					t.Fatalf("part %d not read back as one page:\n%q\nfrom\n%q", i, part, in)
				}
			}
		}
	})
}

var objHead = regexp.MustCompile(`(?:^|\s)(\d{1,4}) \d+ obj`)

// asObjects reads data as object bodies separated by "endobj" (a PDF's
// objects keep their numbers, what is before "n g obj" dropped; other
// bodies are numbered after them)
// and writes them with an exact xref table; the first holding /Catalog
// is the root, the first holding /Producer or /Title the Info.
func asObjects(data []byte) []byte {
	chunks := bytes.Split(data, []byte("endobj"))
	if len(chunks) > 500 {
		return nil
	}
	var objs []lazyObjDef
	seen := map[int]bool{}
	next, root, info := 1, 0, 0
	for _, c := range chunks {
		n := 0
		if m := objHead.FindSubmatchIndex(c); m != nil {
			n, _ = strconv.Atoi(string(c[m[2]:m[3]]))
			c = c[m[1]:]
		}
		if n == 0 || seen[n] {
			for seen[next] {
				next++
			}
			n = next
		}
		seen[n] = true
		body := strings.TrimSpace(string(c))
		if root == 0 && strings.Contains(body, "/Catalog") {
			root = n
		}
		if info == 0 && (strings.Contains(body, "/Producer") || strings.Contains(body, "/Title")) {
			info = n
		}
		objs = append(objs, lazyObjDef{n, 0, body})
	}
	slices.SortFunc(objs, func(a, b lazyObjDef) int { return a.n - b.n })
	trailer := fmt.Sprintf("/Size %d /Root %d 0 R", objs[len(objs)-1].n+1, max(root, 1))
	if info > 0 {
		trailer += fmt.Sprintf(" /Info %d 0 R", info)
	}
	return classicPDF(objs, nil, trailer)
}

// BenchmarkSplitEvery10ObjStm is BenchmarkSplitEvery10 on the benchmark
// document rewritten with object streams (qpdf --object-streams=generate),
// which the lazy path leaves to pdfcpu: ms/split against qpdf's on the
// same file.
//
//	go test -run '^$' -bench SplitEvery10ObjStm -benchtime 10x ./pdfedit/
func BenchmarkSplitEvery10ObjStm(b *testing.B) {
	needTools(b, "qpdf")
	if _, err := os.Stat(splitBenchPDF); err != nil {
		b.Skip(err)
	}
	in := filepath.Join(b.TempDir(), "in.pdf")
	run(b, "qpdf", "--object-streams=generate", splitBenchPDF, in)
	data := readFile(b, in)
	if newLazySplit(data) != nil {
		b.Fatal("the lazy path reads object streams")
	}
	benchSplitAgainstQpdf(b, data, in)
}
