package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
)

// TestOnePDFUploadNotHashed: a one-PDF route (the tools, inspect) stores
// the upload whole without hashing it, since it makes no fingerprint; a
// merge still hashes each file for its fingerprint (DESIGN §4.20).
func TestOnePDFUploadNotHashed(t *testing.T) {
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("stream "), 20_000)...)
	newCtx := func() echo.Context {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		p, _ := mw.CreateFormFile("files", "in.pdf")
		p.Write(pdf)
		mw.WriteField("options", `{"every":1}`)
		mw.Close()
		req := httptest.NewRequest(http.MethodPost, "/pdf/split", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return echo.New().NewContext(req, httptest.NewRecorder())
	}
	s := &Server{Deps: Deps{Blobs: blobs}}
	up, err := s.readOnePDF(newCtx(), "jobs/a/in/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(up.sums) != 0 {
		t.Errorf("a one-PDF upload was hashed: %v", up.sums)
	}
	stored, err := blob.ReadAll(context.Background(), blobs, up.keys[0], 1<<20)
	if err != nil || !bytes.Equal(stored, pdf) || up.options != `{"every":1}` || up.notPDF[0] != "" {
		t.Errorf("stored %d bytes (%v), options %q, notPDF %q; want the %d sent", len(stored), err, up.options, up.notPDF[0], len(pdf))
	}

	up, err = readMergeParts(newCtx(), blobs, "jobs/b/in/", nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pdf)
	if len(up.sums) != 1 || up.sums[0] != hex.EncodeToString(sum[:]) {
		t.Errorf("merge sums %v, want [%x]", up.sums, sum)
	}
}
