package worker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/proto/jobspb"
)

// pdfinfoOf runs pdfinfo (poppler) with args on pdf and returns its output.
func pdfinfoOf(t *testing.T, pdf []byte, args ...string) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(path, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("pdfinfo", append(args, path)...).CombinedOutput()
	return string(out), err
}

// The merge job sets the document information and encrypts, after merging
// and stamping: the result opens with the user password only, carries the
// information, and the page count comes with it.
func TestMergeInfoAndEncryption(t *testing.T) {
	ctx := context.Background()
	w, blobs := testWorker(t)
	var keys []string
	for i, pdf := range [][]byte{onePagePDF(), onePagePDF()} {
		key := blob.JobInputs("e1") + string(rune('0'+i)) + ".pdf"
		if err := blobs.Put(ctx, key, bytes.NewReader(pdf), int64(len(pdf))); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	job := func(enc *jobspb.Encryption) *jobspb.Job {
		return &jobspb.Job{Id: "e1", OutputKey: blob.JobResult("e1"), Kind: &jobspb.Job_Merge{Merge: &jobspb.MergeJob{
			InputKeys: keys, InputNames: []string{"a.pdf", "b.pdf"},
			Watermark:  &jobspb.Watermark{Text: "MARK", FontSize: 48, Color: "#888888", Opacity: 0.3, Position: "center", Pages: "all"},
			Info:       &jobspb.DocInfo{Title: "Merged Title", Keywords: []string{"k1", "k2"}},
			Encryption: enc,
		}}}
	}

	res, err := w.handleMerge(ctx, job(&jobspb.Encryption{UserPassword: "user pw", OwnerPassword: "owner pw", AllowPrinting: true}))
	if err != nil || res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_NONE {
		t.Fatalf("merge: %v, %v", res, err)
	}
	if res.Pages != 2 {
		t.Errorf("Result.Pages %d, want 2", res.Pages)
	}
	out, err := blob.ReadAll(ctx, blobs, res.OutputKey, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := pdfinfoOf(t, out); err == nil {
		t.Errorf("opened without the user password:\n%s", msg)
	}
	info, err := pdfinfoOf(t, out, "-upw", "user pw")
	if err != nil {
		t.Fatalf("pdfinfo -upw: %v\n%s", err, info)
	}
	for _, want := range []string{"Title:           Merged Title", "Keywords:        k1, k2", "Pages:           2", "AES-256"} {
		if !strings.Contains(info, want) {
			t.Errorf("pdfinfo lacks %q:\n%s", want, info)
		}
	}
	if err := blobs.Delete(ctx, res.OutputKey); err != nil {
		t.Fatal(err)
	}

	// Options the gateway would have refused fail the job as the client's,
	// storing nothing.
	res, err = w.handleMerge(ctx, job(&jobspb.Encryption{UserPassword: "same", OwnerPassword: "same"}))
	if err != nil || res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_BAD_INPUT ||
		res.ErrorMessage != "Invalid encryption: the user password equals the owner password." {
		t.Fatalf("merge with bad encryption: %v, %v", res, err)
	}
	if _, err := blobs.Stat(ctx, blob.JobResult("e1")); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a failed merge stored a result: %v", err)
	}
}

// finishDocument's failures are sorted: pdfcpu failing on the worker's own
// PDF is INTERNAL and names the step, bad options are BAD_INPUT, and
// cancellation is an error for the queue.
func TestFinishDocumentFailures(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	enc := &jobspb.Encryption{OwnerPassword: "o"}
	info := &jobspb.DocInfo{Title: "T"}
	tests := []struct {
		name     string
		ctx      context.Context
		pdf      []byte
		info     *jobspb.DocInfo
		enc      *jobspb.Encryption
		wantKind jobspb.ErrorKind // NONE: an error, no result
		wantMsg  string
	}{
		{"unreadable, info", context.Background(), []byte("%PDF-1.4 garbage"), info, enc, jobspb.ErrorKind_ERROR_KIND_INTERNAL, "Could not set the document information."},
		{"unreadable, encryption", context.Background(), []byte("%PDF-1.4 garbage"), nil, enc, jobspb.ErrorKind_ERROR_KIND_INTERNAL, "Could not encrypt the PDF."},
		{"no owner password", context.Background(), onePagePDF(), info, &jobspb.Encryption{UserPassword: "u"}, jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "Invalid encryption: the owner password is required."},
		{"cancelled", cancelled, onePagePDF(), info, enc, jobspb.ErrorKind_ERROR_KIND_NONE, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&Worker{}).finishDocument(tc.ctx, tc.pdf, tc.info, tc.enc, nil)
			if err == nil {
				t.Fatal("no error")
			}
			res, err := finishFailure(err)
			if tc.wantKind == jobspb.ErrorKind_ERROR_KIND_NONE {
				if res != nil || !errors.Is(err, context.Canceled) {
					t.Fatalf("got %v, %v; want context.Canceled", res, err)
				}
				return
			}
			if err != nil || res.ErrorKind != tc.wantKind || res.ErrorMessage != tc.wantMsg {
				t.Fatalf("got %v, %v; want %v %q", res, err, tc.wantKind, tc.wantMsg)
			}
		})
	}
}

// Without metadata or encryption the PDF passes through untouched.
func TestFinishDocumentNothing(t *testing.T) {
	pdf := onePagePDF()
	out, err := (&Worker{}).finishDocument(context.Background(), pdf, nil, nil, nil)
	if err != nil || !bytes.Equal(out, pdf) {
		t.Fatalf("changed (%v)", err)
	}
}
