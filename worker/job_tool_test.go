package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfium"
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
