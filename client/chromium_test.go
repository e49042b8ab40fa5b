package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestScreenshotAndMarkdown: each posts its files under "files", the url
// field for a page by URL, and its options; NoOutline sends outline:false
// over the Markdown route's default.
func TestScreenshotAndMarkdown(t *testing.T) {
	type sent struct{ path, options, url, file string }
	var got []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Fatal(err)
		}
		s := sent{path: r.URL.Path, options: r.FormValue("options"), url: r.FormValue("url")}
		if fhs := r.MultipartForm.File["files"]; len(fhs) > 0 {
			s.file = fhs[0].Filename
		}
		got = append(got, s)
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("out"))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	page := []Upload{UploadBytes("index.html", []byte("<p>hi"))}
	md := []Upload{UploadBytes("index.md", []byte("# hi"))}
	calls := []struct {
		call func() (*Download, error)
		want sent
	}{
		{func() (*Download, error) {
			return c.Screenshot(ctx, ScreenshotRequest{Files: page, Options: &ScreenshotOptions{Format: "webp", Quality: 70, Clip: &Clip{X: 1, Y: 2, Width: 3, Height: 4}}})
		}, sent{"/pdf/screenshot", `{"format":"webp","quality":70,"clip":{"x":1,"y":2,"width":3,"height":4}}`, "", "index.html"}},
		{func() (*Download, error) { return c.Screenshot(ctx, ScreenshotRequest{URL: "https://example.com/"}) },
			sent{"/pdf/screenshot", "", "https://example.com/", ""}},
		{func() (*Download, error) { return c.Markdown(ctx, MarkdownRequest{Files: md}) }, sent{"/pdf/markdown", "", "", "index.md"}},
		{func() (*Download, error) {
			return c.Markdown(ctx, MarkdownRequest{Files: md, NoOutline: true, Options: &PDFOptions{Format: "Letter"}})
		}, sent{"/pdf/markdown", `{"format":"Letter","outline":false}`, "", "index.md"}},
	}
	for i, tc := range calls {
		d, err := tc.call()
		if err != nil {
			t.Fatalf("%s: %v", tc.want.path, err)
		}
		if d.ContentType != "image/png" {
			t.Errorf("%s: content type %q", tc.want.path, d.ContentType)
		}
		d.Body.Close()
		if got[i] != tc.want {
			t.Errorf("sent %+v, want %+v", got[i], tc.want)
		}
	}
	if _, err := c.Screenshot(ctx, ScreenshotRequest{Files: page, URL: "https://example.com/"}); err == nil {
		t.Error("files and a URL together: no error")
	}
}
