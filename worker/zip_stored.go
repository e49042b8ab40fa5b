package worker

import (
	"archive/zip"
	"bytes"
	"fmt"
	"time"
)

// storedZip is the ZIP of files under names, each entry stored as it is
// (method Store), not deflated: what the tools put in a ZIP (split's parts,
// page images, office's PDFs) is compressed already, PDFs in their streams
// and PNG, JPEG and WebP in themselves. Deflating a 50-page split's five
// parts at the fastest level made them 8% smaller and took 3–5 ms of the
// request, storing them takes 0.4 (docs/benchmarks.md "A tool request's
// own cost"). A batch's ZIP (writeZip), streamed to the store off any
// request's path and downloaded later, still deflates.
func storedZip(names []string, files [][]byte, mod time.Time) ([]byte, error) {
	size := 22 // the end of the central directory
	for i, f := range files {
		// The file, its local header, data descriptor and directory entry.
		size += len(f) + 2*len(names[i]) + 128
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	zw := zip.NewWriter(buf)
	for i, f := range files {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: names[i], Method: zip.Store, Modified: mod})
		if err != nil {
			return nil, fmt.Errorf("worker: zip: entry %s: %w", names[i], err)
		}
		if _, err := fw.Write(f); err != nil {
			return nil, fmt.Errorf("worker: zip: entry %s: %w", names[i], err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("worker: zip: %w", err)
	}
	return buf.Bytes(), nil
}
