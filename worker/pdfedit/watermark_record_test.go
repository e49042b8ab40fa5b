package pdfedit

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/proto/jobspb"
)

// fontRow is one font of pdffonts' table.
type fontRow struct {
	name          string
	emb, sub, uni bool
}

// pdffonts lists the fonts of the PDF at path, as poppler sees them.
func pdffonts(t *testing.T, path string) []fontRow {
	t.Helper()
	var rows []fontRow
	lines := strings.Split(strings.TrimSpace(run(t, "pdffonts", path)), "\n")
	for _, l := range lines[min(2, len(lines)):] { // a header and a rule
		f := strings.Fields(l)
		if len(f) < 7 {
			t.Fatalf("pdffonts row %q", l)
		}
		n := len(f)
		rows = append(rows, fontRow{name: f[0], emb: f[n-5] == "yes", sub: f[n-4] == "yes", uni: f[n-3] == "yes"})
	}
	return rows
}

// withoutSubsetTag is a font name without its subset tag ("ABCDEF+").
func withoutSubsetTag(name string) string {
	if len(name) > 7 && name[6] == '+' {
		return name[7:]
	}
	return name
}

// countFonts counts the fonts named name (subset tag aside).
func countFonts(rows []fontRow, name string) int {
	n := 0
	for _, r := range rows {
		if withoutSubsetTag(r.name) == name {
			n++
		}
	}
	return n
}

var pageContentsRe = regexp.MustCompile(`(?s)%% Contents for page (\d+)\n.*?\nstream\n(.*?)endstream`)

// pageContents is the content of each page of the PDF at path (its streams
// joined), as qpdf decodes it.
func pageContents(t *testing.T, path string) map[int]string {
	t.Helper()
	qdf := run(t, "qpdf", "--qdf", "--object-streams=disable", path, "-")
	pages := map[int]string{}
	for _, m := range pageContentsRe.FindAllStringSubmatch(qdf, -1) {
		p, _ := strconv.Atoi(m[1])
		pages[p] += m[2] + "\n"
	}
	return pages
}

// xobjectUse is one Do of a content stream and the marked content it is in.
type xobjectUse struct {
	name string
	// artifact: in an /Artifact sequence whose properties say
	// /Type /Pagination and /Subtype /Watermark, at the top level (not
	// inside tagged content: PDF/UA 7.1-1/2).
	artifact bool
	// marked is the tags of the enclosing sequences, outermost first.
	marked []string
}

type markedSeq struct {
	tag, props string
}

// xobjectUses scans a content stream (as qpdf decodes it) for its Do
// operators and the marked-content sequences around each.
func xobjectUses(content string) []xobjectUse {
	var uses []xobjectUse
	var stack []markedSeq
	var operands []string
	isDelim := func(c byte) bool { return strings.IndexByte("()<>[]{}/% \t\r\n\f", c) >= 0 }
	for i := 0; i < len(content); {
		c := content[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f':
			i++
		case c == '%':
			for i < len(content) && content[i] != '\n' {
				i++
			}
		case c == '(':
			start := i
			i = skipString(content, i)
			operands = append(operands, content[start:i])
		case strings.HasPrefix(content[i:], "<<"):
			depth, start := 0, i
			for i < len(content) {
				if content[i] == '(' {
					i = skipString(content, i)
				} else if strings.HasPrefix(content[i:], "<<") {
					depth++
					i += 2
				} else if strings.HasPrefix(content[i:], ">>") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			operands = append(operands, content[start:i])
		case c == '<':
			end := strings.IndexByte(content[i:], '>')
			if end < 0 {
				end = len(content) - i - 1
			}
			operands = append(operands, content[i:i+end+1])
			i += end + 1
		case c == '[' || c == ']' || c == '{' || c == '}':
			i++
		default:
			start := i
			i++
			for i < len(content) && !isDelim(content[i]) {
				i++
			}
			tok := content[start:i]
			if tok[0] == '/' || tok[0] == '-' || tok[0] == '+' || tok[0] == '.' || tok[0] >= '0' && tok[0] <= '9' {
				operands = append(operands, tok)
				continue
			}
			switch tok {
			case "BDC", "BMC":
				seq := markedSeq{}
				if len(operands) > 0 {
					seq.tag = operands[0]
				}
				if len(operands) > 1 {
					seq.props = operands[1]
				}
				stack = append(stack, seq)
			case "EMC":
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
			case "Do":
				u := xobjectUse{}
				if len(operands) > 0 {
					u.name = operands[len(operands)-1]
				}
				for _, s := range stack {
					u.marked = append(u.marked, s.tag)
				}
				if len(stack) == 1 && stack[0].tag == "/Artifact" {
					p := strings.Join(strings.Fields(stack[0].props), " ")
					u.artifact = strings.Contains(p, "/Type /Pagination") && strings.Contains(p, "/Subtype /Watermark")
				}
				uses = append(uses, u)
			case "BI":
				if end := strings.Index(content[i:], "EI"); end >= 0 {
					i += end + 2
				}
			}
			operands = operands[:0]
		}
	}
	return uses
}

// skipString returns the index just past the literal string that starts
// at content[i] ('('): parentheses nest, a backslash escapes.
func skipString(content string, i int) int {
	depth := 0
	for ; i < len(content); i++ {
		switch content[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(content)
}

// checkStampArtifact checks that each of pages invokes one stamp, inside a
// top-level Watermark artifact sequence, and that no stamp XObject is
// invoked outside one; the other pages have none.
func checkStampArtifact(t *testing.T, path string, pages []int, total int) {
	t.Helper()
	contents := pageContents(t, path)
	if len(contents) != total {
		t.Fatalf("%d pages with content, want %d", len(contents), total)
	}
	for p := 1; p <= total; p++ {
		uses := xobjectUses(contents[p])
		stamps := map[string]bool{}
		for _, u := range uses {
			if u.artifact {
				stamps[u.name] = true
			}
		}
		n := 0
		for _, u := range uses {
			switch {
			case u.artifact:
				n++
			case stamps[u.name]:
				t.Errorf("page %d: stamp %s invoked outside the artifact, in %v", p, u.name, u.marked)
			}
		}
		want := 0
		if slices.Contains(pages, p) {
			want = 1
		}
		if n != want {
			t.Errorf("page %d: %d stamps in a Watermark artifact, want %d; Do operators: %+v", p, n, want, uses)
		}
	}
}

// TestXObjectUses: the scanner sees the marked content around each Do,
// whatever strings and dictionaries the content holds.
func TestXObjectUses(t *testing.T) {
	content := `/P <</MCID 0>> BDC (a \) BDC /X Do) Tj /Figure <</MCID 1 /Alt (x>> EMC)>> BDC /Im1 Do EMC EMC
q /Artifact <</Subtype /Watermark /Type /Pagination >>BDC q 1 0 0 1 0 0 cm /GS0 gs /Fm0 Do Q EMC Q
/Artifact BMC /Fm1 Do EMC /Fm0 Do`
	got := xobjectUses(content)
	want := []xobjectUse{
		{name: "/Im1", marked: []string{"/P", "/Figure"}},
		{name: "/Fm0", artifact: true, marked: []string{"/Artifact"}},
		{name: "/Fm1", marked: []string{"/Artifact"}},
		{name: "/Fm0"},
	}
	if !slices.EqualFunc(got, want, func(a, b xobjectUse) bool {
		return a.name == b.name && a.artifact == b.artifact && slices.Equal(a.marked, b.marked)
	}) {
		t.Fatalf("uses %+v, want %+v", got, want)
	}
}

// stampOC is the optional content configuration of the PDF at path: its
// Name, whether it has AS, and whether its Order lists every group.
func stampOC(t *testing.T, pdf []byte) (name string, hasAS, orderComplete bool) {
	t.Helper()
	pc, err := readPDF(context.Background(), "", bytes.NewReader(pdf), newConf(model.LISTINFO))
	if err != nil {
		t.Fatal(err)
	}
	root, err := pc.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	props, err := pc.DereferenceDict(root["OCProperties"])
	if err != nil || props == nil {
		t.Fatalf("no OCProperties (%v)", err)
	}
	groups, _ := pc.DereferenceArray(props["OCGs"])
	config, err := pc.DereferenceDict(props["D"])
	if err != nil || config == nil {
		t.Fatalf("no D (%v)", err)
	}
	if s, ok := config["Name"].(types.StringLiteral); ok {
		name = s.Value()
	}
	_, hasAS = config["AS"]
	order, _ := pc.DereferenceArray(config["Order"])
	orderComplete = len(groups) > 0
	for _, g := range groups {
		if !slices.Contains(order, g) {
			orderComplete = false
		}
	}
	return name, hasAS, orderComplete
}

func stampWith(t *testing.T, in []byte, wm *jobspb.Watermark, o WatermarkOptions) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := WatermarkWith(context.Background(), bytes.NewReader(in), &out, wm, o); err != nil {
		t.Fatalf("WatermarkWith: %v", err)
	}
	return out.Bytes()
}

// TestWatermarkRecord: for a document of record the text watermark is set
// in Liberation Sans, embedded (a subset, mapped to Unicode), not in
// Helvetica, and shows characters beyond Windows-1252; the optional
// content configuration is one PDF/A and PDF/UA accept. Without the
// option the stamp is Helvetica, as it always was. Text or image, either
// way, each stamped page invokes the stamp inside a top-level
// /Artifact <</Type /Pagination /Subtype /Watermark>> sequence of its
// content, and nowhere else.
func TestWatermarkRecord(t *testing.T) {
	needTools(t, "pdffonts", "pdftotext", "qpdf")
	chromium, err := os.ReadFile("testdata/chromium.pdf")
	if err != nil {
		t.Fatal(err)
	}
	inFonts := pdffonts(t, tmpPDF(t, chromium))
	straight := func(w *jobspb.Watermark) { w.Rotation = 0 }
	tests := []struct {
		name   string
		wm     *jobspb.Watermark
		record bool
		// text is what pdftotext must find; fonts how many fonts the stamp adds.
		text     string
		helv     bool
		embedded int
	}{
		{name: "text", wm: textWM("DRAFT COPY", straight), text: "DRAFT COPY", helv: true},
		{name: "text, record", wm: textWM("ENTWURF Łódź Ω 漢 ok", straight), record: true, text: "ENTWURF Łódź Ω ok", embedded: 1},
		{name: "image, record", wm: &jobspb.Watermark{ImagePng: pngImage(t, 40, 20), Opacity: 0.5, Position: "center", Pages: "all"}, record: true},
		{name: "image", wm: &jobspb.Watermark{ImagePng: pngImage(t, 40, 20), Opacity: 0.5, Position: "center", Pages: "all"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := stampWith(t, chromium, tc.wm, WatermarkOptions{Record: tc.record})
			path := tmpPDF(t, out)
			checkStampArtifact(t, path, []int{1, 2}, 2)

			fonts := pdffonts(t, path)
			if got := countFonts(fonts, "Helvetica"); got != map[bool]int{true: 1, false: 0}[tc.helv] {
				t.Errorf("%d Helvetica fonts, want helvetica %v: %+v", got, tc.helv, fonts)
			}
			if got, want := countFonts(fonts, EmbeddedFont), countFonts(inFonts, EmbeddedFont)+tc.embedded; got != want {
				t.Errorf("%d %s fonts, want %d: %+v", got, EmbeddedFont, want, fonts)
			}
			if tc.record {
				for _, f := range fonts {
					if !f.emb || !f.uni {
						t.Errorf("font %s: embedded %v, Unicode %v; a document of record needs both", f.name, f.emb, f.uni)
					}
				}
				name, hasAS, complete := stampOC(t, out)
				if name != stampOCName || hasAS || !complete {
					t.Errorf("optional content configuration: Name %q, AS %v, Order lists every group %v", name, hasAS, complete)
				}
			}
			if tc.text != "" {
				if got := strings.Join(strings.Fields(run(t, "pdftotext", "-f", "1", "-l", "1", path, "-")), " "); !strings.Contains(got, tc.text) {
					t.Errorf("pdftotext: %q, want %q in it", got, tc.text)
				}
			}
		})
	}
}

// TestWatermarkRecordTwice: a second stamp of a document of record finds
// the optional content of the first and leaves it as it is (conformant),
// and each page then has two stamps, both artifacts.
func TestWatermarkRecordTwice(t *testing.T) {
	needTools(t, "qpdf")
	in := rawPDF("DOC", 3, 1)
	once := stampWith(t, in, textWM("ONE", nil), WatermarkOptions{Record: true})
	twice := stampWith(t, once, textWM("TWO", func(w *jobspb.Watermark) { w.Pages = "2" }), WatermarkOptions{Record: true})
	if name, hasAS, complete := stampOC(t, twice); name != stampOCName || hasAS || !complete {
		t.Errorf("optional content configuration: Name %q, AS %v, Order lists every group %v", name, hasAS, complete)
	}
	contents := pageContents(t, tmpPDF(t, twice))
	for p, want := range map[int]int{1: 1, 2: 2, 3: 1} {
		n := 0
		for _, u := range xobjectUses(contents[p]) {
			if !u.artifact {
				t.Errorf("page %d: %s invoked outside a Watermark artifact", p, u.name)
			}
			n++
		}
		if n != want {
			t.Errorf("page %d: %d stamps, want %d", p, n, want)
		}
	}
}

// TestFontText: characters Liberation Sans lacks, and controls, become
// spaces; line breaks stay.
func TestFontText(t *testing.T) {
	if err := UseEmbeddedFont(); err != nil {
		t.Fatal(err)
	}
	got, err := fontText("a\tb\r\nŁ€漢\x01z", EmbeddedFont)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a b\nŁ€  z"; got != want {
		t.Errorf("fontText = %q, want %q", got, want)
	}
}
