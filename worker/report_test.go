package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/batch"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/proto/jobspb"
)

// A batch with report:true gets report.json first in its ZIP, one entry per
// document in the ZIP's order: the report its document kept, or, for one
// that kept none or an unreadable one, an entry saying so (the PDFs are
// worth more than a missing report). Without report:true, no report.json.
func TestZipReport(t *testing.T) {
	ctx := context.Background()
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{blobs: blobs, log: slog.New(slog.DiscardHandler)}
	r := &batch.Record{ID: "b1", Total: 3, Report: true}
	for i := range r.Total {
		if err := blobs.Put(ctx, blob.BatchPDF(r.ID, i), strings.NewReader("%PDF-1.7 stand-in"), -1); err != nil {
			t.Fatal(err)
		}
	}
	kept := &jobspb.Report{Pages: 2, RenderMs: 40, BlockedRequests: []string{"http://10.0.0.1/x.png"},
		FailedRequests: []*jobspb.FailedRequest{{Url: "img/a.png", Status: 404}}, ConsoleErrors: []string{"boom"},
		ImagesWithoutAlt: []string{"img/logo.png"}, ImagesWithoutAltTotal: 3}
	if err := w.keepDocReport(ctx, r, 0, kept); err != nil {
		t.Fatal(err)
	}
	if err := blobs.Put(ctx, blob.BatchReport(r.ID, 2), strings.NewReader("{not json"), -1); err != nil {
		t.Fatal(err)
	}
	names := []string{"a.pdf", "b.pdf", "c.pdf"}

	entries := zipEntries(t, w, r, names)
	if got := strings.Join(entries.names, "|"); got != "report.json|a.pdf|b.pdf|c.pdf" {
		t.Fatalf("entries %q", got)
	}
	var report []map[string]any
	if err := json.Unmarshal(entries.data["report.json"], &report); err != nil || len(report) != 3 {
		t.Fatalf("report.json (%v):\n%s", err, entries.data["report.json"])
	}
	want := []string{
		`{"blockedRequests":["http://10.0.0.1/x.png"],"consoleErrors":["boom"],"failedRequests":[{"status":404,"url":"img/a.png"}],"fileName":"a.pdf","imagesWithoutAlt":["img/logo.png"],"imagesWithoutAltTotal":3,"pages":2,"passes":1,"renderMs":40}`,
		`{"blockedRequests":[],"consoleErrors":[],"error":"No render report was kept for this document.","failedRequests":[],"fileName":"b.pdf","imagesWithoutAlt":[],"imagesWithoutAltTotal":0,"pages":0,"renderMs":0}`,
		`{"blockedRequests":[],"consoleErrors":[],"error":"The render report of this document could not be read.","failedRequests":[],"fileName":"c.pdf","imagesWithoutAlt":[],"imagesWithoutAltTotal":0,"pages":0,"renderMs":0}`,
	}
	for i, e := range report {
		if got, _ := json.Marshal(e); string(got) != want[i] {
			t.Errorf("entry %d:\n got %s\nwant %s", i, got, want[i])
		}
	}

	r.Report = false
	if got := strings.Join(zipEntries(t, w, r, names).names, "|"); got != "a.pdf|b.pdf|c.pdf" {
		t.Errorf("without report: entries %q", got)
	}
}

type zipped struct {
	names []string
	data  map[string][]byte
}

func zipEntries(t *testing.T, w *Worker, r *batch.Record, names []string) zipped {
	t.Helper()
	var buf bytes.Buffer
	if err := w.writeZip(context.Background(), &buf, r, names); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	z := zipped{data: map[string][]byte{}}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		z.names = append(z.names, f.Name)
		z.data[f.Name] = b
	}
	return z
}
