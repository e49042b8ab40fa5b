package benchapi

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
)

// CheckZip verifies the ZIP holds n PDFs.
func CheckZip(data []byte, n int) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("ZIP: %w", err)
	}
	if len(zr.File) != n {
		return fmt.Errorf("ZIP has %d entries, want %d", len(zr.File), n)
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return err
		}
		head := make([]byte, 5)
		_, err = io.ReadFull(rc, head)
		rc.Close()
		if err != nil || string(head) != "%PDF-" {
			return fmt.Errorf("entry %s is not a PDF", f.Name)
		}
	}
	return nil
}
