package pdfedit

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
)

// TestFinishKeepsAttachments: an attachment's file specification is
// referenced only from pdfcpu's in-memory name tree until the write binds
// it into the catalog; the trailer's clean-up (fixTrailerSize) must count
// it as live. Checked on Chromium's PDF and on each part of a split (the
// stages of /pdf/split): qpdf finds no warning at all, and poppler
// extracts the file byte for byte.
func TestFinishKeepsAttachments(t *testing.T) {
	needTools(t, "qpdf", "pdfdetach")
	in, err := os.ReadFile("testdata/chromium.pdf")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := Split(context.Background(), bytes.NewReader(in), "", 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	csv := []byte("a,b\n1,2\n")
	rec := &jobspb.Record{Attachments: []*jobspb.Attachment{{FileName: "data.csv", MimeType: "text/csv", Data: csv}}}
	for i, pdf := range append([][]byte{in}, parts...) {
		for _, spec := range []RecordSpec{
			{Record: rec},
			{Info: &jobspb.DocInfo{Title: "T"}, Record: rec},
			{Record: &jobspb.Record{Attachments: rec.Attachments, Pdfa: "3b"}},
		} {
			out, err := Finish(context.Background(), pdf, spec)
			if err != nil {
				t.Fatalf("input %d: %v", i, err)
			}
			path := tmpPDF(t, out)
			if got, _ := exec.Command("qpdf", "--check", path).CombinedOutput(); !strings.Contains(string(got), "No syntax or stream encoding errors") || strings.Contains(string(got), "WARNING") {
				t.Errorf("input %d, pdfa %q: qpdf --check:\n%s", i, spec.Record.Pdfa, got)
			}
			dir := t.TempDir()
			run(t, "pdfdetach", "-saveall", "-o", dir, path)
			if got, err := os.ReadFile(filepath.Join(dir, "data.csv")); err != nil || !bytes.Equal(got, csv) {
				t.Errorf("input %d, pdfa %q: attachment %q, %v", i, spec.Record.Pdfa, got, err)
			}
		}
	}
}
