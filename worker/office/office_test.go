package office

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/worker/office/officetest"
)

// shared is one engine of 2 slots for the tests that only convert: a slot
// starts in ~1–2 s, so starting one per test would dominate the run.
var shared struct {
	once sync.Once
	e    *Engine
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.e != nil {
		shared.e.Close()
	}
	os.Exit(code)
}

// needOffice skips when LibreOffice is absent (scripts/setup installs it);
// anything else missing (python3-uno) is a failure, not a skip.
func needOffice(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("soffice"); err != nil {
		t.Skip("LibreOffice (soffice) not installed; scripts/setup installs it")
	}
}

func testLog(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func sharedEngine(t testing.TB) *Engine {
	t.Helper()
	needOffice(t)
	shared.once.Do(func() {
		shared.e, shared.err = New(context.Background(), Config{Slots: 2, Timeout: 60 * time.Second, Log: testLog(t)})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.e
}

// newEngine is an engine of its own for a test that kills or restarts slots.
func newEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	needOffice(t)
	if cfg.Log == nil {
		cfg.Log = testLog(t)
	}
	began := time.Now()
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("engine of %d slot(s) started in %s", max(cfg.Slots, 1), time.Since(began).Round(time.Millisecond))
	t.Cleanup(e.Close)
	return e
}

func tool(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// pdfFacts is what the poppler tools say of a PDF.
type pdfFacts struct {
	text          string
	pages         int
	width, height float64
	meta, fonts   string
}

func inspect(t testing.TB, pdf []byte) pdfFacts {
	t.Helper()
	if _, err := exec.LookPath("pdfinfo"); err != nil {
		t.Skip("poppler-utils (pdfinfo, pdftotext, pdffonts) not installed; scripts/setup --test installs them")
	}
	path := filepath.Join(t.TempDir(), "out.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	var f pdfFacts
	info := tool(t, "pdfinfo", path)
	if m := regexp.MustCompile(`(?m)^Pages:\s+(\d+)`).FindStringSubmatch(info); m != nil {
		f.pages, _ = strconv.Atoi(m[1])
	}
	if m := regexp.MustCompile(`(?m)^Page size:\s+([\d.]+) x ([\d.]+)`).FindStringSubmatch(info); m != nil {
		f.width, _ = strconv.ParseFloat(m[1], 64)
		f.height, _ = strconv.ParseFloat(m[2], 64)
	}
	f.text = tool(t, "pdftotext", "-layout", path, "-")
	f.meta = tool(t, "pdfinfo", "-meta", path)
	f.fonts = tool(t, "pdffonts", path)
	return f
}

// manyPages is a docx of n pages, each opening with its own word.
func manyPages(t testing.TB, n int) []byte {
	var ps []officetest.Para
	for i := 1; i <= n; i++ {
		ps = append(ps, officetest.Para{Text: fmt.Sprintf("Page%03d heading", i), BreakPage: i > 1})
		ps = append(ps, officetest.Para{Text: strings.Repeat("Body text for the page. ", 30)})
	}
	return officetest.Docx(t, officetest.DocxBody(ps), "")
}

func TestConvert(t *testing.T) {
	e := sharedEngine(t)
	tests := []struct {
		name  string
		data  []byte
		words []string
		pages int
	}{
		{"letter.docx", officetest.Docx(t, officetest.DocxBody([]officetest.Para{{Text: "Dear customer, your invoice"}, {Text: "Second page here", BreakPage: true}}), ""), []string{"Dear customer", "Second page"}, 2},
		{"figures.xlsx", officetest.Xlsx(t, [][][]string{{{"Revenue", "Q1"}}, {{"Costs", "Q2"}}, {{"Margin", "Q3"}}}), []string{"Revenue", "Costs", "Margin"}, 3},
		{"deck.pptx", officetest.Pptx(t, []string{"Opening slide", "Closing slide"}), []string{"Opening slide", "Closing slide"}, 2},
		{"notes.odt", officetest.ODT(t, officetest.ODTContent([]string{"OpenDocument text works"}, "")), []string{"OpenDocument text works"}, 1},
		{"memo.rtf", []byte(`{\rtf1\ansi{\fonttbl{\f0 Arial;}}\f0 Rich text memo\par}`), []string{"Rich text memo"}, 1},
		{"plain.txt", []byte("Plain words, ünïcode kept\n"), []string{"Plain words", "ünïcode"}, 1},
		{"table.csv", []byte("name,amount\nwidget,42\n"), []string{"widget", "42"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			pdf, pages, err := e.Convert(context.Background(), Input{Name: tc.name, Data: tc.data}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("converted in %s", time.Since(began).Round(time.Millisecond))
			f := inspect(t, pdf)
			for _, w := range tc.words {
				if !strings.Contains(f.text, w) {
					t.Errorf("text lacks %q:\n%s", w, f.text)
				}
			}
			if f.pages != tc.pages || pages != tc.pages {
				t.Errorf("pages: pdfinfo %d, engine %d, want %d", f.pages, pages, tc.pages)
			}
			if tc.name == "table.csv" && strings.Contains(f.text, "doc") {
				t.Errorf("CSV printed our file name in a header:\n%s", f.text)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	e := sharedEngine(t)
	five := manyPages(t, 5)
	tests := []struct {
		name  string
		in    Input
		opt   Options
		check func(t *testing.T, f pdfFacts, pages int)
	}{
		{"portrait", Input{"a.docx", five}, Options{}, func(t *testing.T, f pdfFacts, _ int) {
			if f.width >= f.height {
				t.Errorf("page %gx%g is not portrait", f.width, f.height)
			}
		}},
		{"landscape", Input{"a.docx", five}, Options{Landscape: true}, func(t *testing.T, f pdfFacts, _ int) {
			if f.width <= f.height || f.width < 840 || f.width > 843 {
				t.Errorf("page %gx%g is not A4 landscape", f.width, f.height)
			}
		}},
		{"landscape xlsx", Input{"a.xlsx", officetest.Xlsx(t, [][][]string{{{"wide"}}})}, Options{Landscape: true}, func(t *testing.T, f pdfFacts, _ int) {
			if f.width <= f.height {
				t.Errorf("page %gx%g is not landscape", f.width, f.height)
			}
		}},
		{"page ranges", Input{"a.docx", five}, Options{PageRanges: "2-3,5"}, func(t *testing.T, f pdfFacts, pages int) {
			if f.pages != 3 || pages != 3 {
				t.Errorf("pages: pdfinfo %d, engine %d, want 3", f.pages, pages)
			}
			for _, w := range []string{"Page002", "Page003", "Page005"} {
				if !strings.Contains(f.text, w) {
					t.Errorf("text lacks %s", w)
				}
			}
			if strings.Contains(f.text, "Page001") || strings.Contains(f.text, "Page004") {
				t.Error("pages outside the ranges were exported")
			}
		}},
		{"pdfa 2b", Input{"a.docx", five}, Options{PDFA: "2b"}, func(t *testing.T, f pdfFacts, _ int) {
			if !regexp.MustCompile(`pdfaid:part(>|=")2`).MatchString(f.meta) || !regexp.MustCompile(`pdfaid:conformance(>|=")B`).MatchString(f.meta) {
				t.Errorf("no PDF/A-2b claim in XMP:\n%s", f.meta)
			}
		}},
		{"pdfa 3b", Input{"a.odt", officetest.ODT(t, officetest.ODTContent([]string{"archival"}, ""))}, Options{PDFA: "3b"}, func(t *testing.T, f pdfFacts, _ int) {
			if !regexp.MustCompile(`pdfaid:part(>|=")3`).MatchString(f.meta) {
				t.Errorf("no PDF/A-3 claim in XMP:\n%s", f.meta)
			}
		}},
		{"plain pdf claims no pdfa", Input{"a.odt", officetest.ODT(t, officetest.ODTContent([]string{"plain"}, ""))}, Options{}, func(t *testing.T, f pdfFacts, _ int) {
			if strings.Contains(f.meta, "pdfaid") {
				t.Errorf("PDF/A claim without asking:\n%s", f.meta)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pdf, pages, err := e.Convert(context.Background(), tc.in, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, inspect(t, pdf), pages)
		})
	}
}

// TestFonts: a docx set in the Microsoft fonts is printed with their
// metric-compatible stand-ins (so its line breaks hold), never a fallback.
func TestFonts(t *testing.T) {
	e := sharedEngine(t)
	body := officetest.DocxBody([]officetest.Para{
		{Text: "Set in Calibri", Font: "Calibri"},
		{Text: "Set in Arial", Font: "Arial"},
		{Text: "Set in Times New Roman", Font: "Times New Roman"},
		{Text: "Set in Cambria", Font: "Cambria"},
	})
	pdf, _, err := e.Convert(context.Background(), Input{"fonts.docx", officetest.Docx(t, body, "")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := inspect(t, pdf)
	for _, want := range []string{"Carlito", "LiberationSans", "LiberationSerif", "Caladea"} {
		if !strings.Contains(f.fonts, want) {
			t.Errorf("pdffonts lacks %s:\n%s", want, f.fonts)
		}
	}
}

func TestBadInput(t *testing.T) {
	e := sharedEngine(t)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	tests := []struct {
		name string
		in   Input
		opt  Options
		says string
	}{
		{"empty", Input{"empty.docx", nil}, Options{}, "empty"},
		{"image named docx", Input{"photo.docx", png}, Options{}, "not a .docx document"},
		{"unsupported type", Input{"tool.exe", []byte("MZ\x90\x00")}, Options{}, `".exe" files are not office documents`},
		{"no extension", Input{"README", []byte("hello")}, Options{}, "no extension"},
		{"binary as txt", Input{"data.txt", png}, Options{}, "not a UTF-8 text file"},
		{"not rtf", Input{"memo.rtf", []byte("hello")}, Options{}, "not an RTF document"},
		{"damaged zip", Input{"broken.xlsx", []byte("PK\x03\x04garbage")}, Options{}, "damaged"},
		{"zip of nothing office", Input{"odd.docx", officetest.Zip(t, officetest.Part{Name: "hello.txt", Body: "hi"})}, Options{}, "cannot read it as a .docx"},
		{"legacy doc of garbage", Input{"old.doc", append([]byte("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"), make([]byte, 600)...)}, Options{}, "cannot read it as a .doc"},
		{"password-protected", Input{"secret.odt", officetest.EncryptedODT(t, "s3cret")}, Options{}, "password-protected"},
		{"bad page ranges", Input{"a.txt", []byte("x")}, Options{PageRanges: "1-2;drop"}, "pageRanges"},
		{"bad pdfa", Input{"a.txt", []byte("x")}, Options{PDFA: "1a"}, "PDF/A level"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := e.Convert(context.Background(), tc.in, tc.opt)
			var bad *BadInputError
			if !errors.As(err, &bad) {
				t.Fatalf("want a *BadInputError, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.in.Name) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q should name %s and say %q", err, tc.in.Name, tc.says)
			}
			if strings.Contains(err.Error(), e.workDir) || strings.Contains(err.Error(), "doc.") && !strings.Contains(tc.in.Name, "doc") {
				t.Errorf("error %q shows our paths", err)
			}
		})
	}
	// The slots still convert after all that.
	if _, _, err := e.Convert(context.Background(), Input{"ok.txt", []byte("still fine")}, Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestUnavailable(t *testing.T) {
	_, err := New(context.Background(), Config{Path: "/nonexistent/soffice"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "DOCRENDER_OFFICE_PATH") {
		t.Fatalf("want ErrUnavailable naming DOCRENDER_OFFICE_PATH, got %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err = New(context.Background(), Config{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install") {
		t.Fatalf("want ErrUnavailable saying how to install, got %v", err)
	}
}
