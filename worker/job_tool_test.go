package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/testenv/rawpdf"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfium"
	"github.com/docrender/docrender/worker/poppler"
)

// TestToolRefusals: what the document makes of an option is a BAD_INPUT
// naming the field; a file that is not a usable PDF names "files".
func TestToolRefusals(t *testing.T) {
	pdf, err := os.ReadFile("pdfedit/testdata/chromium.pdf") // 2 pages
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{}
	tests := []struct {
		name  string
		data  []byte
		tool  *jobspb.ToolJob
		field string
	}{
		{"split past the end", pdf, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Split{Split: &jobspb.SplitTool{Ranges: "1,3"}}}, "ranges"},
		{"select past the end", pdf, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Pages{Pages: &jobspb.PagesTool{Select: "5"}}}, "select"},
		{"nothing left", pdf, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Pages{Pages: &jobspb.PagesTool{Delete: "all"}}}, "delete"},
		{"truncated", pdf[:len(pdf)/3], &jobspb.ToolJob{Tool: &jobspb.ToolJob_Flatten{Flatten: &jobspb.FlattenTool{}}}, "files"},
		{"not a PDF", []byte("hello"), &jobspb.ToolJob{Tool: &jobspb.ToolJob_Optimize{Optimize: &jobspb.OptimizeTool{ImageQuality: 75}}}, "files"},
		{"too many pages asked", pdf, &jobspb.ToolJob{Tool: &jobspb.ToolJob_Text{Text: &jobspb.TextTool{Pages: "1-100000"}}}, "pages"},
	}
	for _, tc := range tests {
		tc.tool.InputName = "in.pdf"
		_, err := w.runTool(context.Background(), tc.tool, tc.data)
		res, rerr := toolFailure("in.pdf", err)
		if rerr != nil || res == nil || res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_BAD_INPUT || res.ErrorField != tc.field {
			t.Errorf("%s: %v → %v %v, want BAD_INPUT naming %q", tc.name, err, res, rerr, tc.field)
		}
	}

	// PDFium's refusals name their parameter, "file" as the upload.
	res, _ := toolFailure("a.pdf", &pdfium.BadInputError{Param: "file", Msg: "not a PDF"})
	if res.ErrorField != "files" || res.ErrorMessage != `Invalid PDF file "a.pdf": not a PDF.` {
		t.Errorf("pdfium file: %+v", res)
	}
	res, _ = toolFailure("a.pdf", &pdfium.BadInputError{Param: "pages", Msg: "page 9 does not exist"})
	if res.ErrorField != "pages" {
		t.Errorf("pdfium pages: %+v", res)
	}
	// Anything else is retried.
	if res, err := toolFailure("a.pdf", errors.New("disk")); res != nil || err == nil {
		t.Errorf("internal error: %v %v", res, err)
	}
}

// TestSplitZip: a split's parts come back as a ZIP whose entries sort in
// page order.
func TestSplitZip(t *testing.T) {
	pdf, err := os.ReadFile("pdfedit/testdata/chromium.pdf")
	if err != nil {
		t.Fatal(err)
	}
	out, err := (&Worker{}).runTool(context.Background(), &jobspb.ToolJob{FileName: "report",
		Tool: &jobspb.ToolJob_Split{Split: &jobspb.SplitTool{Every: 1}}}, pdf)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(out.data), int64(len(out.data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"report-1.pdf", "report-2.pdf"}) || out.meta.Files != 2 || out.meta.ContentType != "application/zip" {
		t.Errorf("entries %v, %+v", names, out.meta)
	}
}

func TestNumbered(t *testing.T) {
	got := numbered("a", 10, func(i int) int { return i + 1 }, "png")
	if got[0] != "a-01.png" || got[9] != "a-10.png" {
		t.Errorf("%v", got)
	}
	got = numbered("", 2, func(i int) int { return []int{100, 3}[i] }, "pdf")
	if !slices.Equal(got, []string{"document-100.pdf", "document-003.pdf"}) {
		t.Errorf("%v", got)
	}
}

// TestTextEngines: /pdf/text's plain text is pdftotext's where it reads the
// PDF, in the order asked and checked against the page count as PDFium
// checks it; a PDF it cannot open, or a worker without it, is read by
// PDFium, which refuses what it refuses in its words.
func TestTextEngines(t *testing.T) {
	pdf, err := os.ReadFile("pdfedit/testdata/chromium.pdf") // 2 pages
	if err != nil {
		t.Fatal(err)
	}
	cli, err := exec.Command("pdftotext", "-q", "-enc", "UTF-8", "pdfedit/testdata/chromium.pdf", "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	pages := strings.SplitAfter(string(cli), "\f")
	w := textWorker(t)
	for _, tc := range []struct{ spec, want string }{{"", pages[0] + pages[1]}, {"2,1", pages[1] + pages[0]}, {"2", pages[1]}} {
		if got, err := text(w, pdf, tc.spec); err != nil || got != tc.want {
			t.Errorf("pages %q: %q %v, want pdftotext's %q", tc.spec, got, err, tc.want)
		}
	}
	// PDFium's reading, without pdftotext: the same words.
	plain := &Worker{log: w.log, pdfium: w.pdfium}
	if got, err := text(plain, pdf, "2,1"); err != nil || strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(pages[1]+pages[0]), " ") {
		t.Errorf("PDFium: %q %v, want the words of %q", got, err, pages[1]+pages[0])
	}
	// Refusals, the same whichever engine read.
	encrypted, err := os.ReadFile("pdfium/testdata/encrypted.pdf")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []*Worker{w, plain} {
		for _, tc := range []struct {
			name, spec, field string
			data              []byte
		}{
			{"page past the end", "3", "pages", pdf},
			{"truncated", "", "files", pdf[:len(pdf)/3]},
			{"a password", "", "files", encrypted},
		} {
			_, err := text(w, tc.data, tc.spec)
			res, rerr := toolFailure("in.pdf", err)
			if rerr != nil || res == nil || res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_BAD_INPUT || res.ErrorField != tc.field {
				t.Errorf("pdftotext %t, %s: %v → %v %v, want BAD_INPUT naming %q", w.pdftotext != nil, tc.name, err, res, rerr, tc.field)
			}
		}
	}
}

// textWorker is a worker with both text engines, PDFium in-process.
func textWorker(t testing.TB) *Worker {
	t.Helper()
	pdftotext, err := poppler.New(poppler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{log: slog.New(slog.DiscardHandler), pdftotext: pdftotext, pdfium: &lazy[*pdfium.Engine]{
		start: func(ctx context.Context) (*pdfium.Engine, error) {
			return pdfium.New(ctx, pdfium.Config{InProcess: true, Interruptible: true})
		},
		stop: func(e *pdfium.Engine) { _ = e.Close() },
	}}
	t.Cleanup(w.pdfium.close)
	// Started here, not on the clock of the first job's 5 s: compiling
	// the engine took longer than that on a loaded CI machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := w.pdfium.get(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// text is /pdf/text's plain text of data's pages spec, as w reads it.
func text(w *Worker, data []byte, spec string) (string, error) {
	// The job's deadline, as in the service: a file that keeps an engine
	// busy past it is answered TIMEOUT (e2e TestPDFToolsSlowPage).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := w.runTool(ctx, &jobspb.ToolJob{InputName: "in.pdf", Tool: &jobspb.ToolJob_Text{Text: &jobspb.TextTool{Pages: spec}}}, data)
	if err != nil {
		return "", err
	}
	return string(out.data), nil
}

// FuzzTextTool: whatever the bytes, /pdf/text's plain text (pdftotext,
// PDFium after it) is text ended by a form feed or the client's error,
// never a crash or an internal error; the seeds run in plain go test.
func FuzzTextTool(f *testing.F) {
	pdf, err := os.ReadFile("pdfedit/testdata/chromium.pdf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pdf)
	f.Add(pdf[:len(pdf)/2])
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>"))
	// A page tree whose /Count says 5 of its 1 page.
	f.Add(rawpdf.Build("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 5 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>", rawpdf.Stream("", "BT ET")))
	f.Add(rawpdf.SlowPages(2, 4<<20))
	w := textWorker(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := text(w, data, "")
		if errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if err != nil {
			if res, rerr := toolFailure("in.pdf", err); rerr != nil || res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_BAD_INPUT {
				t.Fatalf("not the client's error: %v", err)
			}
			return
		}
		if !strings.HasSuffix(got, "\f") {
			t.Fatalf("no form feed: %q", got)
		}
	})
}
