package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob/localblob"
)

// FuzzMultipart: any body sent to /pdf/generate or /pdf/merge is read into
// clean, valid file names under the request's prefix, or refused with a
// 4xx; never a panic or a 500. The same bytes go through both readers.
func FuzzMultipart(f *testing.F) {
	part := func(name, data string) string {
		return "--B\r\nContent-Disposition: form-data; name=\"files\"; filename=\"" + name + "\"\r\n\r\n" + data + "\r\n"
	}
	for _, s := range []string{
		part("index.html", "<p>x</p>") + "--B--\r\n",
		part("css/a.css", "p{}") + part("index.html", "x") + "--B\r\nContent-Disposition: form-data; name=\"options\"\r\n\r\n{\"format\":\"A4\"}\r\n--B--\r\n",
		part("../x.html", "x") + "--B--\r\n",
		part("a\xff.pdf", "%PDF-1.7") + "--B--\r\n",
		part("x.pdf", "%PDF-1.4\n%%EOF") + "--B--",
		"--B\r\n\r\n--B--",
		"",
	} {
		f.Add([]byte(s))
	}
	blobs, err := localblob.New(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	e := echo.New()
	var seq atomic.Int64
	f.Fuzz(func(t *testing.T, body []byte) {
		prefix := fmt.Sprintf("jobs/%d/in/", seq.Add(1))
		defer func() { _ = blobs.DeletePrefix(context.Background(), prefix) }()
		newCtx := func() echo.Context {
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
			return e.NewContext(req, httptest.NewRecorder())
		}
		u, err := readUpload(newCtx(), blobs, prefix, newRecordParts(blobs, prefix+"r/"))
		if err != nil {
			clientError(t, body, err)
		} else {
			for _, f := range u.files {
				if !utf8.ValidString(f.Name) || strings.HasPrefix(f.Name, "/") || strings.Contains("/"+f.Name+"/", "/../") {
					t.Fatalf("%q: stored name %q", body, f.Name)
				}
			}
		}
		if _, err := readMergeParts(newCtx(), blobs, prefix+"m/", newRecordParts(blobs, prefix+"mr/")); err != nil {
			clientError(t, body, err)
		}
	})
}

func clientError(t *testing.T, body []byte, err error) {
	t.Helper()
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 {
		t.Fatalf("%q: %v is not a 4xx", body, err)
	}
}
