package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/batch"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
)

// Entry names stored by a batch made before names were cleaned at the
// gateway lose their hidden characters in the ZIP all the same.
func TestZipEntryNamesCleaned(t *testing.T) {
	ctx := context.Background()
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &batch.Record{ID: "b1", Total: 2}
	for i := range r.Total {
		if err := blobs.Put(ctx, blob.BatchPDF(r.ID, i), strings.NewReader("%PDF-1.7 stand-in"), -1); err != nil {
			t.Fatal(err)
		}
	}
	w := &Worker{blobs: blobs}
	var buf bytes.Buffer
	if err := w.writeZip(ctx, &buf, r, []string{"in\u202Evoice\u200B.pdf", "\uFEFFplain\x07.pdf"}); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, "|"), "invoice.pdf|plain.pdf"; got != want {
		t.Fatalf("entries %q, want %q", got, want)
	}
}
