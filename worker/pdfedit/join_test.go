package pdfedit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/worker/pdfcheck"
)

// The Join tests print a small document with Chromium, in one piece and
// in parts (PageRanges: each part then has only its own pages'
// destinations, structure elements and outline entries, the shape of the
// parts of a split render), join the parts and compare the result with the
// one-piece print, read by independent tools (qpdf, poppler).

const joinSections = 5

// joinHTML is the test document: an h1, a navigation paragraph linking to
// every section and table, and joinSections sections of paragraphs and a
// 40-row table (with a header row that Chromium repeats on each page) that
// crosses page boundaries, each ending with a link back to the top. With
// from/to, only sections from..to (1-based), the h1 and navigation only
// with from == 1: a slice of the document, as a content split prints it.
func joinHTML(from, to int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Join test</title>
<style>body{font:12px serif} td,th{border-bottom:1px solid #ccc;padding:2px 6px}</style></head><body>`)
	if from == 1 {
		b.WriteString(`<h1 id="top">Quarterly report é</h1><p>`)
		for s := 1; s <= joinSections; s++ {
			fmt.Fprintf(&b, `<a href="#s%d">Section %d</a> <a href="#t%d">Table %d</a> `, s, s, s, s)
		}
		b.WriteString(`</p>`)
	}
	for s := from; s <= to; s++ {
		fmt.Fprintf(&b, `<h2 id="s%d">Section %d</h2>`, s, s)
		for i := range 6 {
			fmt.Fprintf(&b, "<p>Section %d paragraph %d. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>", s, i)
		}
		fmt.Fprintf(&b, `<h3 id="t%d">Table %d</h3><table><thead><tr><th>#</th><th>Item</th><th>Amount</th></tr></thead><tbody>`, s, s)
		for i := range 40 {
			fmt.Fprintf(&b, "<tr><td>%d</td><td>Item %d of section %d</td><td>%d.00</td></tr>", i, i, s, i*7)
		}
		b.WriteString(`</tbody></table><p><a href="#top">back to top</a></p>`)
	}
	b.WriteString(`</body></html>`)
	return b.String()
}

// joinHeadings is the outline of joinHTML, as the service gathers it
// from the headings.
func joinHeadings() []Heading {
	hs := []Heading{{Level: 1, Title: "Quarterly report é", Dest: "top"}}
	for s := 1; s <= joinSections; s++ {
		hs = append(hs, Heading{Level: 2, Title: fmt.Sprintf("Section %d", s), Dest: fmt.Sprintf("s%d", s)},
			Heading{Level: 3, Title: fmt.Sprintf("Table %d", s), Dest: fmt.Sprintf("t%d", s)})
	}
	return hs
}

type joinPrintSet struct {
	whole, wholeUntagged []byte
	parts2, parts3       [][]byte // tagged, PageRanges 1-3,4- and 1-2,3-4,5-
	untagged2            [][]byte
	slices               [][]byte // tagged, each slice of the document printed on its own
	err                  error
}

var (
	joinPrintsOnce sync.Once
	joinPrintsSet  joinPrintSet
)

// joinPrints prints the test document once per test process.
func joinPrints(t *testing.T) *joinPrintSet {
	t.Helper()
	if _, err := exec.LookPath("/usr/bin/chromium"); err != nil {
		t.Skip("chromium not found at /usr/bin/chromium")
	}
	for _, tool := range []string{"qpdf", "pdfinfo", "pdftotext"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	joinPrintsOnce.Do(func() { joinPrintsSet = printJoinSet() })
	if joinPrintsSet.err != nil {
		t.Fatal(joinPrintsSet.err)
	}
	return &joinPrintsSet
}

func printJoinSet() (set joinPrintSet) {
	l := launcher.New().Bin("/usr/bin/chromium").Headless(true).Set("no-sandbox").Set("disable-gpu")
	u, err := l.Launch()
	if err != nil {
		return joinPrintSet{err: fmt.Errorf("launch chromium: %w", err)}
	}
	defer l.Kill()
	b := rod.New().ControlURL(u).Timeout(60 * time.Second)
	if err := b.Connect(); err != nil {
		return joinPrintSet{err: err}
	}
	defer b.Close()
	print := func(html, ranges string, tagged bool) []byte {
		if set.err != nil {
			return nil
		}
		p, err := b.Page(proto.TargetCreateTarget{URL: "about:blank"})
		if err == nil {
			defer p.Close()
			err = p.SetDocumentContent(html)
		}
		if err == nil {
			err = p.WaitLoad()
		}
		var out []byte
		if err == nil {
			// Page.printToPDF called directly: rod's PagePrintToPDF omits
			// false booleans, and Chromium's default (the embedder's
			// choice) is a tagged PDF with an outline.
			var res []byte
			res, err = p.Call(p.GetContext(), string(p.SessionID), "Page.printToPDF", map[string]any{
				"printBackground": true, "generateTaggedPDF": tagged, "generateDocumentOutline": tagged, "pageRanges": ranges})
			var r struct{ Data []byte }
			if err == nil {
				err = json.Unmarshal(res, &r)
			}
			out = r.Data
		}
		if err != nil {
			set.err = fmt.Errorf("print %q: %w", ranges, err)
		}
		return out
	}
	html := joinHTML(1, joinSections)
	set.whole = print(html, "", true)
	set.wholeUntagged = print(html, "", false)
	set.parts2 = [][]byte{print(html, "1-3", true), print(html, "4-", true)}
	set.parts3 = [][]byte{print(html, "1-2", true), print(html, "3-4", true), print(html, "5-", true)}
	set.untagged2 = [][]byte{print(html, "1-3", false), print(html, "4-", false)}
	// A content split: the slices end and start inside table 3 (the
	// splitter repeats the table head), printed by separate tabs.
	first := joinHTML(1, 3)
	second := joinHTML(3, joinSections)
	cut := strings.LastIndex(first, "<tr><td>20</td>")
	first = first[:cut] + "</tbody></table></body></html>"
	head := second[:strings.Index(second, "<h2")]
	table := strings.Index(second, "<table>")
	tbody := strings.Index(second, "<tbody>") + len("<tbody>")
	second = head + second[table:tbody] + second[strings.Index(second, "<tr><td>20</td>"):]
	// Chromium writes a named destination only for the elements a link
	// of the same print points to: the links to sections 4 and 5 are in
	// the first slice. Hidden links make the second slice write them.
	var hidden strings.Builder
	for s := 4; s <= joinSections; s++ {
		fmt.Fprintf(&hidden, `<a href="#s%d" style="display:none"></a><a href="#t%d" style="display:none"></a>`, s, s)
	}
	second = strings.Replace(second, "</body>", hidden.String()+"</body>", 1)
	set.slices = [][]byte{print(first, "", true), print(second, "", true)}
	if os.Getenv("JOIN_DUMP") != "" {
		dump := func(name string, b []byte) { _ = os.WriteFile(filepath.Join(os.Getenv("JOIN_DUMP"), name), b, 0o644) }
		dump("whole.pdf", set.whole)
		for i, p := range set.slices {
			dump(fmt.Sprintf("slice%d.pdf", i+1), p)
		}
	}
	return set
}

func join(t *testing.T, parts [][]byte, outline []Heading) []byte {
	t.Helper()
	var out bytes.Buffer
	n, err := Join(context.Background(), parts, outline, 0, &out)
	if err != nil {
		t.Fatalf("Join: %v", err)
	}
	if got := pdfinfoPages(t, tmpPDF(t, out.Bytes())); got != n {
		t.Errorf("Join returned %d pages, pdfinfo counts %d", n, got)
	}
	if d := os.Getenv("JOIN_DUMP"); d != "" {
		_ = os.WriteFile(filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_")+".pdf"), out.Bytes(), 0o644)
	}
	return out.Bytes()
}

func TestJoinChromiumParts(t *testing.T) {
	set := joinPrints(t)
	whole := qpdfJSON(t, set.whole)
	for _, tc := range []struct {
		name  string
		parts [][]byte
	}{
		{"2 parts", set.parts2},
		{"3 parts", set.parts3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := join(t, tc.parts, joinHeadings())
			path := tmpPDF(t, out)
			checkQPDF(t, path)
			doc := qpdfJSON(t, out)

			// Pages and their text.
			if len(doc.pages) != len(whole.pages) {
				t.Fatalf("%d pages, the one-piece print has %d", len(doc.pages), len(whole.pages))
			}
			wholePath := tmpPDF(t, set.whole)
			for p := 1; p <= len(doc.pages); p++ {
				if got, want := pageText(t, path, p), pageText(t, wholePath, p); got != want {
					t.Errorf("page %d text differs from the one-piece print:\n got %q\nwant %q", p, got, want)
				}
			}

			// Destinations: every one of the one-piece print, on its page;
			// every link resolves, to the page the one-piece link goes to.
			gotDests, wantDests := doc.destPages(t), whole.destPages(t)
			for name, p := range wantDests {
				if gotDests[name] != p {
					t.Errorf("destination %q on page %d, want %d", name, gotDests[name], p)
				}
			}
			if got, want := doc.linkTargets(t), whole.linkTargets(t); !slices.Equal(got, want) {
				t.Errorf("links (page:dest→page):\n got %v\nwant %v", got, want)
			}
			if dp, _, err := DestPages(context.Background(), out); err != nil || len(dp) != len(wantDests) {
				t.Errorf("DestPages: %v, %v; want %d destinations", dp, err, len(wantDests))
			}

			// Structure tree.
			if got, want := doc.structShape(t), whole.structShape(t); got != want {
				t.Errorf("structure tree differs from the one-piece print:\n got %s\nwant %s", got, want)
			}
			doc.checkParentTree(t)
			doc.checkIDs(t)
			if mi := doc.dict(doc.catalog()["/MarkInfo"]); mi["/Marked"] != true {
				t.Errorf("MarkInfo = %v, want Marked true", mi)
			}
			if doc.catalog()["/Lang"] != "u:en" {
				t.Errorf("Lang = %v", doc.catalog()["/Lang"])
			}

			// Outline: titles, levels and pages of the one-piece print's.
			if got, want := doc.outline(), whole.outline(); !slices.Equal(got, want) {
				t.Errorf("outline:\n got %q\nwant %q", got, want)
			}

			// The repository's PDF/UA checker: nothing the one-piece
			// print does not have.
			checkUA(t, out, set.whole)
		})
	}
}

// TestJoinContentSplit joins slices of the document each printed on its
// own, the way a split render prints them: the cut falls inside table 3,
// the second slice repeats the table head, and each tab numbers the nodes
// of its own document (the header cells' IDs): "colliding IDs" makes the
// second slice's table 4 take the IDs of the first slice's table 1.
func TestJoinContentSplit(t *testing.T) {
	set := joinPrints(t)
	whole := qpdfJSON(t, set.whole)
	for _, tc := range []struct {
		name string
		edit func(string) string
	}{
		{"as printed", nil},
		{"colliding IDs", func(s string) string {
			for i := range 3 {
				s = strings.ReplaceAll(s, fmt.Sprintf("(node%08d)", 109+i), fmt.Sprintf("(node%08d)", 32+i))
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := slices.Clone(set.slices)
			if tc.edit != nil {
				parts[1] = qdfEdit(t, parts[1], tc.edit)
				if !bytes.Contains(parts[1], []byte("(node00000032)")) {
					t.Fatal("the edit changed nothing: Chromium numbers its nodes otherwise now")
				}
			}
			out := join(t, parts, joinHeadings())
			checkQPDF(t, tmpPDF(t, out))
			doc := qpdfJSON(t, out)
			if got, want := doc.structShape(t), whole.structShape(t); got != want {
				t.Errorf("structure tree differs from the one-piece print:\n got %s\nwant %s", got, want)
			}
			doc.checkParentTree(t)
			doc.checkIDs(t)
			// Titles and levels as printed in one piece (the pages differ:
			// the first slice ends mid-page).
			strip := func(o []string) []string {
				for i, s := range o {
					o[i] = s[:strings.LastIndex(s, "@")]
				}
				return o
			}
			if got, want := strip(doc.outline()), strip(whole.outline()); !slices.Equal(got, want) {
				t.Errorf("outline:\n got %q\nwant %q", got, want)
			}
			// The links of the first slice to sections of the second resolve.
			for _, l := range doc.linkTargets(t) {
				if strings.HasSuffix(l, "→0") {
					t.Errorf("link %s does not resolve", l)
				}
			}
			checkUA(t, out, set.whole)
		})
	}
}

func TestJoinUntagged(t *testing.T) {
	set := joinPrints(t)
	for _, tc := range []struct {
		name  string
		parts [][]byte
	}{
		{"untagged parts", set.untagged2},
		{"one part untagged", [][]byte{set.parts2[0], set.untagged2[1]}},
		{"first part untagged", [][]byte{set.untagged2[0], set.parts2[1]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := join(t, tc.parts, joinHeadings())
			path := tmpPDF(t, out)
			checkQPDF(t, path)
			if tc.name == "untagged parts" {
				// Untagged, the same pages as the untagged one-piece print.
				wholePath := tmpPDF(t, set.wholeUntagged)
				if got, want := pdfinfoPages(t, path), pdfinfoPages(t, wholePath); got != want {
					t.Fatalf("%d pages, want %d", got, want)
				}
				for p := 1; p <= pdfinfoPages(t, path); p++ {
					if got, want := pageText(t, path, p), pageText(t, wholePath, p); got != want {
						t.Errorf("page %d text differs from the one-piece print", p)
					}
				}
			}
			doc := qpdfJSON(t, out)
			cat := doc.catalog()
			if _, ok := cat["/StructTreeRoot"]; ok {
				t.Error("untagged parts: the result has a StructTreeRoot")
			}
			if mi := doc.dict(cat["/MarkInfo"]); mi["/Marked"] == true {
				t.Error("untagged parts: MarkInfo Marked true")
			}
			for _, o := range doc.objs {
				if d, ok := o.(map[string]any); ok {
					if _, ok := d["/StructParents"]; ok {
						t.Fatal("untagged result keeps /StructParents")
					}
				}
			}
			// Links and the outline do not need tags.
			for _, l := range doc.linkTargets(t) {
				if strings.HasSuffix(l, "→0") {
					t.Errorf("link %s does not resolve", l)
				}
			}
			if got := len(doc.outline()); got != 1+2*joinSections {
				t.Errorf("outline has %d items, want %d", got, 1+2*joinSections)
			}
		})
	}
}

// TestJoinOutline: nesting by level, headings without a destination left
// out with their children moved up, text strings.
func TestJoinOutline(t *testing.T) {
	set := joinPrints(t)
	dests := qpdfJSON(t, set.whole).destPages(t)
	for _, tc := range []struct {
		name string
		in   []Heading
		want []string // "level title@dest", depth-first
	}{
		{"none", nil, nil},
		{"flat", []Heading{{1, "A", "s1"}, {1, "B", "s4"}}, []string{"1 A@s1", "1 B@s4"}},
		{"jump 1→3 nests directly", []Heading{{1, "A", "top"}, {3, "B", "t1"}, {2, "C", "s2"}},
			[]string{"1 A@top", "2 B@t1", "2 C@s2"}},
		{"missing destination: children move up", []Heading{{1, "A", "top"}, {2, "gone", "nowhere"}, {3, "B", "t1"}, {2, "C", "s2"}},
			[]string{"1 A@top", "2 B@t1", "2 C@s2"}},
		{"all missing", []Heading{{1, "gone", "nowhere"}, {2, "", ""}}, nil},
		{"levels clamped", []Heading{{0, "A", "top"}, {9, "B", "s1"}}, []string{"1 A@top", "2 B@s1"}},
		{"unicode and escapes", []Heading{{1, "Überblick (1) \\ 価格 😀", "top"}, {1, "a (b) c\\", "s1"}},
			[]string{"1 Überblick (1) \\ 価格 😀@top", "1 a (b) c\\@s1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := join(t, set.parts2, tc.in)
			checkQPDF(t, tmpPDF(t, out))
			doc := qpdfJSON(t, out)
			want := slices.Clone(tc.want)
			for i, w := range want {
				at := strings.LastIndex(w, "@")
				want[i] = fmt.Sprintf("%s@%d", w[:at], dests[w[at+1:]])
			}
			if got := doc.outline(); !slices.Equal(got, want) {
				t.Errorf("outline:\n got %q\nwant %q", got, want)
			}
			if _, ok := doc.catalog()["/Outlines"]; ok != (len(tc.want) > 0) {
				t.Errorf("/Outlines present = %v, want %v", ok, len(tc.want) > 0)
			}
		})
	}
}

func TestJoinErrors(t *testing.T) {
	set := joinPrints(t)
	var be *BadInputError
	var out bytes.Buffer
	total := 0
	for _, p := range set.parts2 {
		total += pdfinfoPages(t, tmpPDF(t, p))
	}
	_, err := Join(context.Background(), set.parts2, nil, total-1, &out)
	if !errors.As(err, &be) || !strings.Contains(be.Reason, strconv.Itoa(total)) {
		t.Errorf("maxPages %d: err = %v, want a BadInputError naming %d", total-1, err, total)
	}
	if n, err := Join(context.Background(), set.parts2, nil, total, io.Discard); err != nil || n != total {
		t.Errorf("maxPages %d: %d pages, %v", total, n, err)
	}
	for name, bad := range map[string][]byte{"garbage": []byte("not a pdf at all"), "empty": nil,
		"truncated": set.parts2[1][:len(set.parts2[1])/2], "header only": []byte("%PDF-1.7\n%%EOF")} {
		_, err := Join(context.Background(), [][]byte{set.parts2[0], bad}, joinHeadings(), 0, io.Discard)
		if !errors.As(err, &be) || be.Name != "part 2" {
			t.Errorf("%s as part 2: err = %v, want a BadInputError naming part 2", name, err)
		}
	}
	if _, err := Join(context.Background(), nil, nil, 0, io.Discard); !errors.Is(err, ErrNoParts) {
		t.Errorf("no parts: err = %v", err)
	}
	if _, err := Join(context.Background(), set.parts2, nil, 0, nil); err == nil {
		t.Error("nil writer: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Join(ctx, set.parts2, nil, 0, io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	// One part alone is that part, minus its outline, plus the given one.
	if n, err := Join(context.Background(), set.parts2[:1], joinHeadings(), 0, io.Discard); err != nil || n != 3 {
		t.Errorf("one part: %d pages, %v", n, err)
	}
}

// TestJoinHostile: parts whose structure trees are malformed (cycles,
// wrong types, deep nesting) are joined or refused, never a panic.
func TestJoinHostile(t *testing.T) {
	set := joinPrints(t)
	edits := map[string]func(s string) string{
		"K cycle":      func(s string) string { return regexp.MustCompile(`/K \d+ 0 R`).ReplaceAllString(s, "/K 1 0 R") },
		"S not a name": func(s string) string { return strings.ReplaceAll(s, "/S /Table", "/S (Table)") },
		"Nums garbage": func(s string) string { return strings.Replace(s, "/Nums [", "/Nums [/x (y) -1 ", 1) },
		"ParentTree kids": func(s string) string {
			return strings.Replace(s, "/ParentTree", "/ParentTree << /Kids [1 0 R 2 0 R] >> /Old", 1)
		},
		"IDTree bad":       func(s string) string { return strings.Replace(s, "/IDTree", "/IDTree [1 2 3] /Old", 1) },
		"no Document":      func(s string) string { return strings.Replace(s, "/S /Document", "/S /Part", 1) },
		"StructParents -1": func(s string) string { return strings.ReplaceAll(s, "/StructParents 0", "/StructParents -1") },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			parts := make([][]byte, len(set.parts3))
			for i, p := range set.parts3 {
				parts[i] = qdfEdit(t, p, edit)
			}
			var out bytes.Buffer
			if _, err := Join(context.Background(), parts, joinHeadings(), 0, &out); err != nil {
				var be *BadInputError
				if !errors.As(err, &be) {
					t.Fatalf("err = %v, want nil or a BadInputError", err)
				}
				return
			}
			checkQPDF(t, tmpPDF(t, out.Bytes()))
		})
	}
}

// qdfEdit rewrites a PDF through qpdf's QDF form (uncompressed, one
// object per line group), applies edit to its text and lets fix-qdf
// repair the offsets.
func qdfEdit(t *testing.T, pdf []byte, edit func(string) string) []byte {
	t.Helper()
	dir := t.TempDir()
	in, qdf, out := filepath.Join(dir, "in.pdf"), filepath.Join(dir, "qdf.pdf"), filepath.Join(dir, "out.pdf")
	writeFile(t, in, pdf)
	run(t, "qpdf", "--qdf", "--object-streams=disable", in, qdf)
	writeFile(t, qdf, []byte(edit(string(readFile(t, qdf)))))
	cmd := exec.Command("fix-qdf", qdf)
	b, err := cmd.Output()
	if err != nil {
		t.Skipf("fix-qdf: %v", err)
	}
	writeFile(t, out, b)
	return b
}

// checkQPDF fails unless qpdf --check finds nothing wrong.
func checkQPDF(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command("qpdf", "--check", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "No syntax or stream encoding errors found") ||
		strings.Contains(strings.ToLower(string(out)), "warning") {
		t.Errorf("qpdf --check: %v\n%s", err, out)
	}
}

// checkUA fails when pdfcheck's PDF/UA-1 check of the joined document
// finds a rule broken that the one-piece print does not break.
func checkUA(t *testing.T, joined, whole []byte) {
	t.Helper()
	rules := func(b []byte) map[string]string {
		vs, err := pdfcheck.Check(b, pdfcheck.Level{PDFUA: true})
		if err != nil {
			t.Fatalf("pdfcheck: %v", err)
		}
		m := map[string]string{}
		for _, v := range vs {
			m[v.Rule] = v.String()
		}
		return m
	}
	want := rules(whole)
	for r, v := range rules(joined) {
		if _, ok := want[r]; !ok {
			t.Errorf("pdfcheck: the joined document breaks %s, the one-piece print does not", v)
		}
	}
}

// qpdfJSONDoc is a PDF as qpdf --json=2 shows it.
type qpdfJSONDoc struct {
	objs     map[string]any // "12 0 R" → value (a stream's dictionary)
	trailer  map[string]any
	pages    []string // page object refs in order
	outlines []qpdfJSONOutline
}

type qpdfJSONOutline struct {
	Title string            `json:"title"`
	Page  int               `json:"destpageposfrom1"`
	Kids  []qpdfJSONOutline `json:"kids"`
}

func qpdfJSON(t *testing.T, pdf []byte) *qpdfJSONDoc {
	t.Helper()
	raw := run(t, "qpdf", "--json=2", tmpPDF(t, pdf))
	var j struct {
		Pages []struct {
			Object string `json:"object"`
		} `json:"pages"`
		Outlines []qpdfJSONOutline            `json:"outlines"`
		QPDF     []map[string]json.RawMessage `json:"qpdf"`
	}
	if err := json.Unmarshal([]byte(raw), &j); err != nil || len(j.QPDF) < 2 {
		t.Fatalf("qpdf --json: %v", err)
	}
	d := &qpdfJSONDoc{objs: map[string]any{}, outlines: j.Outlines}
	for _, p := range j.Pages {
		d.pages = append(d.pages, p.Object)
	}
	for k, v := range j.QPDF[1] {
		var o struct {
			Value  any `json:"value"`
			Stream struct {
				Dict any `json:"dict"`
			} `json:"stream"`
		}
		if err := json.Unmarshal(v, &o); err != nil {
			t.Fatal(err)
		}
		if k == "trailer" {
			d.trailer, _ = o.Value.(map[string]any)
			continue
		}
		if o.Value == nil {
			o.Value = o.Stream.Dict
		}
		d.objs[strings.TrimPrefix(k, "obj:")] = o.Value
	}
	return d
}

var refRe = regexp.MustCompile(`^\d+ \d+ R$`)

// get dereferences o.
func (d *qpdfJSONDoc) get(o any) any {
	for range 10 {
		s, ok := o.(string)
		if !ok || !refRe.MatchString(s) {
			return o
		}
		o = d.objs[s]
	}
	return nil
}

func (d *qpdfJSONDoc) dict(o any) map[string]any {
	m, _ := d.get(o).(map[string]any)
	return m
}

func (d *qpdfJSONDoc) array(o any) []any {
	switch v := d.get(o).(type) {
	case []any:
		return v
	case nil:
		return nil
	default:
		return []any{v}
	}
}

func (d *qpdfJSONDoc) catalog() map[string]any { return d.dict(d.trailer["/Root"]) }

// destPages: named destination (without the leading slash) → page.
func (d *qpdfJSONDoc) destPages(t *testing.T) map[string]int {
	out := map[string]int{}
	for name, v := range d.dict(d.catalog()["/Dests"]) {
		arr := d.array(v)
		if len(arr) == 0 {
			continue
		}
		page, _ := arr[0].(string)
		out[strings.TrimPrefix(name, "/")] = slices.Index(d.pages, page) + 1
	}
	return out
}

// linkTargets lists the internal links as "page:dest→page" (→0 when the
// destination does not resolve), in page order.
func (d *qpdfJSONDoc) linkTargets(t *testing.T) []string {
	dests := d.destPages(t)
	var out []string
	for i, p := range d.pages {
		for _, a := range d.array(d.dict(p)["/Annots"]) {
			ad := d.dict(a)
			name, ok := ad["/Dest"].(string)
			if !ok || !strings.HasPrefix(name, "/") {
				continue
			}
			name = strings.TrimPrefix(name, "/")
			out = append(out, fmt.Sprintf("%d:%s→%d", i+1, name, dests[name]))
		}
	}
	return out
}

// structShape is the structure tree as nested types, leaving out
// Chromium's NonStruct text wrappers: "Document(H1 P(Link Link) …)".
// It fails unless the root has exactly one Document element, and checks
// every element's /P on the way.
func (d *qpdfJSONDoc) structShape(t *testing.T) string {
	t.Helper()
	rootRef, _ := d.catalog()["/StructTreeRoot"].(string)
	root := d.dict(rootRef)
	if root == nil {
		t.Fatal("no StructTreeRoot")
	}
	top := d.kids(root["/K"])
	if len(top) != 1 || d.dict(top[0])["/S"] != "/Document" {
		t.Fatalf("StructTreeRoot /K = %v, want one Document element", root["/K"])
	}
	seen := map[string]bool{}
	var shape func(ref any, parent string, depth int) []string
	shape = func(ref any, parent string, depth int) []string {
		s, isRef := ref.(string)
		e := d.dict(ref)
		if e == nil || e["/S"] == nil || depth > 100 {
			return nil
		}
		if isRef {
			if seen[s] {
				t.Fatalf("element %s twice in the tree", s)
			}
			seen[s] = true
			if p, _ := e["/P"].(string); p != parent {
				t.Errorf("element %s (%v): /P %v, want %s", s, e["/S"], e["/P"], parent)
			}
		}
		var kids []string
		for _, k := range d.kids(e["/K"]) {
			kids = append(kids, shape(k, s, depth+1)...)
		}
		typ := strings.TrimPrefix(e["/S"].(string), "/")
		if typ == "NonStruct" {
			return kids
		}
		if len(kids) > 0 {
			typ += "(" + strings.Join(kids, " ") + ")"
		}
		return []string{typ}
	}
	return strings.Join(shape(top[0], rootRef, 0), " ")
}

// kids is a /K value as a list, its references kept.
func (d *qpdfJSONDoc) kids(o any) []any {
	if arr, ok := d.get(o).([]any); ok {
		return arr
	}
	if o == nil {
		return nil
	}
	return []any{o}
}

// checkParentTree: one flat number tree, keys unique and below
// ParentTreeNextKey; every page's /StructParents and annotation's
// /StructParent a key; every marked-content entry pointing at an element
// that holds that MCID on that page, every annotation entry at an element
// holding an OBJR to it.
func (d *qpdfJSONDoc) checkParentTree(t *testing.T) {
	t.Helper()
	root := d.dict(d.catalog()["/StructTreeRoot"])
	pt := d.dict(root["/ParentTree"])
	if _, ok := pt["/Kids"]; ok {
		t.Error("ParentTree has /Kids, want one flat /Nums")
	}
	nums := d.array(pt["/Nums"])
	next, _ := root["/ParentTreeNextKey"].(float64)
	entries := map[int]any{}
	for i := 0; i+1 < len(nums); i += 2 {
		k := int(nums[i].(float64))
		if _, dup := entries[k]; dup {
			t.Errorf("ParentTree key %d twice", k)
		}
		if k >= int(next) {
			t.Errorf("ParentTree key %d ≥ ParentTreeNextKey %v", k, next)
		}
		entries[k] = nums[i+1]
	}
	// The elements of the tree: a parent tree entry must be one of them,
	// not an element merged away.
	inTree := map[string]bool{}
	stack := d.kids(root["/K"])
	for len(stack) > 0 && len(inTree) < 1e6 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if s, ok := k.(string); ok && !inTree[s] && d.dict(s)["/S"] != nil {
			inTree[s] = true
			stack = append(stack, d.kids(d.dict(s)["/K"])...)
		}
	}
	holds := func(elem any, mcid int, page string) bool {
		if s, _ := elem.(string); !inTree[s] {
			return false
		}
		e := d.dict(elem)
		pg, _ := e["/Pg"].(string)
		for _, k := range d.kids(e["/K"]) {
			switch v := d.get(k).(type) {
			case float64:
				if int(v) == mcid && pg == page {
					return true
				}
			case map[string]any:
				p, _ := v["/Pg"].(string)
				if p == "" {
					p = pg
				}
				if m, ok := v["/MCID"].(float64); ok && int(m) == mcid && p == page {
					return true
				}
			}
		}
		return false
	}
	for i, p := range d.pages {
		pd := d.dict(p)
		sp, ok := pd["/StructParents"].(float64)
		if !ok {
			t.Errorf("page %d has no /StructParents", i+1)
			continue
		}
		v, ok := entries[int(sp)]
		if !ok {
			t.Errorf("page %d: /StructParents %v not in the ParentTree", i+1, sp)
			continue
		}
		for mcid, e := range d.array(v) {
			if e != nil && !holds(e, mcid, p) {
				t.Errorf("page %d MCID %d: ParentTree points at %v (%v), which does not hold it", i+1, mcid, e, d.dict(e)["/S"])
			}
		}
		for _, a := range d.array(pd["/Annots"]) {
			ad := d.dict(a)
			sp, ok := ad["/StructParent"].(float64)
			if !ok {
				continue
			}
			ref, _ := entries[int(sp)].(string)
			e := d.dict(ref)
			found := false
			if !inTree[ref] {
				t.Errorf("page %d annotation %v: /StructParent %v points at %v, not in the tree", i+1, a, sp, ref)
			}
			for _, k := range d.kids(e["/K"]) {
				if kd := d.dict(k); kd["/Type"] == "/OBJR" && kd["/Obj"] == a {
					found = true
				}
			}
			if !found {
				t.Errorf("page %d annotation %v: /StructParent %v points at %v, which has no OBJR to it", i+1, a, sp, entries[int(sp)])
			}
		}
	}
}

// checkIDs: the IDTree's names are unique, each names an element with that
// /ID, and every /Headers ID of a cell names a TH of the same table.
func (d *qpdfJSONDoc) checkIDs(t *testing.T) {
	t.Helper()
	root := d.dict(d.catalog()["/StructTreeRoot"])
	idt := d.dict(root["/IDTree"])
	if _, ok := idt["/Kids"]; ok {
		t.Error("IDTree has /Kids, want one flat /Names")
	}
	names := d.array(idt["/Names"])
	ids := map[string]string{}
	for i := 0; i+1 < len(names); i += 2 {
		k, _ := names[i].(string)
		if _, dup := ids[k]; dup {
			t.Errorf("IDTree name %s twice", k)
		}
		ref, _ := names[i+1].(string)
		ids[k] = ref
		if e := d.dict(ref); e["/ID"] != k {
			t.Errorf("IDTree %s → %s whose /ID is %v", k, ref, e["/ID"])
		}
		if i > 0 && names[i-2].(string) >= k {
			t.Errorf("IDTree names not sorted: %s before %s", names[i-2], k)
		}
	}
	table := func(ref string) string {
		for range 20 {
			e := d.dict(ref)
			if e["/S"] == "/Table" {
				return ref
			}
			ref, _ = e["/P"].(string)
		}
		return ""
	}
	cells := 0
	for ref, o := range d.objs {
		e, ok := o.(map[string]any)
		if !ok || e["/S"] != "/TD" {
			continue
		}
		for _, a := range d.array(e["/A"]) {
			for _, h := range d.array(d.dict(a)["/Headers"]) {
				cells++
				hs, _ := h.(string)
				th, ok := ids[hs]
				if !ok || d.dict(th)["/S"] != "/TH" || table(th) != table(ref) {
					t.Errorf("cell %s: header %v is %v (%v), not a TH of its table", ref, h, th, d.dict(th)["/S"])
				}
			}
		}
	}
	if cells == 0 {
		t.Error("no /Headers found")
	}
}

// outline lists the outline depth-first as "level title@page".
func (d *qpdfJSONDoc) outline() []string {
	var out []string
	var walk func(items []qpdfJSONOutline, level int)
	walk = func(items []qpdfJSONOutline, level int) {
		for _, it := range items {
			out = append(out, fmt.Sprintf("%d %s@%d", level, it.Title, it.Page))
			walk(it.Kids, level+1)
		}
	}
	walk(d.outlines, 1)
	return out
}
