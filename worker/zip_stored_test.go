package worker

import (
	"archive/zip"
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
)

// TestToolZipStored: a tool's ZIP holds its files stored, not deflated
// (storedZip), each read back whole, its checksum right, in the order and
// under the names given.
func TestToolZipStored(t *testing.T) {
	files := [][]byte{[]byte("%PDF-1.7 part one"), bytes.Repeat([]byte("x"), 100_000), {}}
	names := []string{"r-1.pdf", "r-2.pdf", "r-3.pdf"}
	out, err := zipOutput(&toolOutput{meta: &jobspb.ToolOutput{}}, names, files)
	if err != nil {
		t.Fatal(err)
	}
	if out.meta.Files != 3 || out.meta.ContentType != "application/zip" {
		t.Errorf("meta %+v", out.meta)
	}
	zr, err := zip.NewReader(bytes.NewReader(out.data), int64(len(out.data)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, f := range zr.File {
		got = append(got, f.Name)
		if f.Method != zip.Store {
			t.Errorf("%s: method %d, want %d (stored)", f.Name, f.Method, zip.Store)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc) // checks the CRC-32 at the end
		rc.Close()
		if err != nil || !bytes.Equal(b, files[i]) {
			t.Errorf("%s: %d bytes, %v; want the %d given", f.Name, len(b), err, len(files[i]))
		}
	}
	if !slices.Equal(got, names) {
		t.Errorf("entries %v, want %v", got, names)
	}
	// Stored: the repetitive entry is not made smaller.
	if len(out.data) < 100_000 {
		t.Errorf("ZIP of %d bytes: deflated?", len(out.data))
	}
}
