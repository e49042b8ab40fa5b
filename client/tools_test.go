package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTools: each tool posts the PDF under "files" and its own fields as
// the options to its route; ToolHosted adds host:true; the answer's
// headers are read into the Download.
func TestTools(t *testing.T) {
	type sent struct {
		path, options, file, fileType string
	}
	var got []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Fatal(err)
		}
		s := sent{path: r.URL.Path, options: r.FormValue("options")}
		if fhs := r.MultipartForm.File["files"]; len(fhs) == 1 {
			f, _ := fhs[0].Open()
			b, _ := io.ReadAll(f)
			s.file, s.fileType = fhs[0].Filename+":"+string(b), fhs[0].Header.Get("Content-Type")
		}
		got = append(got, s)
		if r.URL.Path == "/pdf/text" {
			w.Write([]byte(`{"url":"u","pdfId":"p","expiresAt":"2030-01-01T00:00:00Z"}`))
			return
		}
		w.Header().Set("X-Files", "3")
		w.Header().Set("X-Bytes-Before", "100")
		w.Header().Set("X-Bytes-After", "40")
		w.Write([]byte("out"))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	pdf := UploadBytes("in.pdf", []byte("%PDF"))
	calls := []struct {
		call        func() (*Download, error)
		path, wantO string
	}{
		{func() (*Download, error) { return c.Split(ctx, SplitRequest{File: pdf, Every: 2}) }, "/pdf/split", `{"every":2}`},
		{func() (*Download, error) {
			return c.Pages(ctx, PagesRequest{File: pdf, Select: "2,1", Rotate: map[string]int{"1": 90}, ToolOptions: ToolOptions{FileName: "x"}})
		}, "/pdf/pages", `{"fileName":"x","rotate":{"1":90},"select":"2,1"}`},
		{func() (*Download, error) { return c.Flatten(ctx, FlattenRequest{File: pdf}) }, "/pdf/flatten", `{}`},
		{func() (*Download, error) {
			return c.Flatten(ctx, FlattenRequest{File: pdf, PDFSteps: PDFSteps{Stages: []Stage{NewStage(StagePDFA, map[string]any{"level": PDFA2B})}}})
		}, "/pdf/flatten", `{"stages":[{"level":"2b","op":"pdfa"}]}`},
		{func() (*Download, error) { return c.Optimize(ctx, OptimizeRequest{File: pdf, MaxImageDpi: Int(0)}) }, "/pdf/optimize", `{"maxImageDpi":0}`},
		{func() (*Download, error) {
			return c.SetMetadata(ctx, MetadataRequest{File: pdf, Metadata: &Metadata{Title: "T"}})
		}, "/pdf/metadata", `{"metadata":{"title":"T"}}`},
		{func() (*Download, error) { return c.Images(ctx, ImagesRequest{File: pdf, Format: "webp", DPI: 150}) }, "/pdf/images", `{"dpi":150,"format":"webp"}`},
	}
	for i, tc := range calls {
		d, err := tc.call()
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		d.Body.Close()
		var o map[string]any
		if err := json.Unmarshal([]byte(got[i].options), &o); err != nil {
			t.Fatalf("%s: options %q", tc.path, got[i].options)
		}
		again, _ := json.Marshal(o)
		if got[i].path != tc.path || string(again) != tc.wantO || got[i].file != "in.pdf:%PDF" || got[i].fileType != "application/pdf" {
			t.Errorf("%s: sent %+v, options %s, want %s", tc.path, got[i], again, tc.wantO)
		}
		if d.Files != 3 || d.BytesBefore != 100 || d.BytesAfter != 40 {
			t.Errorf("%s: download %+v", tc.path, d)
		}
	}
	h, err := c.ToolHosted(ctx, TextRequest{File: pdf, Format: "markdown"})
	if err != nil || h.PdfID != "p" {
		t.Fatalf("hosted: %+v %v", h, err)
	}
	if last := got[len(got)-1]; last.options != `{"format":"markdown","host":true}` {
		t.Errorf("hosted options %s", last.options)
	}
	if _, err := c.Flatten(ctx, FlattenRequest{}); err == nil {
		t.Error("a tool without its PDF was sent")
	}
}

// A tool's attachments step takes the request's uploads, sent as form
// parts named "attachments" beside the PDF.
func TestToolAttachments(t *testing.T) {
	var names []string
	var options string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Fatal(err)
		}
		options = r.FormValue("options")
		for _, field := range []string{"files", "attachments"} {
			for _, fh := range r.MultipartForm.File[field] {
				names = append(names, field+":"+fh.Filename)
			}
		}
		w.Write([]byte("out"))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	d, err := c.Split(context.Background(), SplitRequest{File: UploadBytes("in.pdf", []byte("%PDF")), Every: 1,
		PDFSteps: PDFSteps{Stages: []Stage{NewStage(StageAttachments, nil)}, Attachments: []Upload{UploadBytes("data.csv", []byte("a,b"))}}})
	if err != nil {
		t.Fatal(err)
	}
	d.Body.Close()
	if strings.Join(names, " ") != "files:in.pdf attachments:data.csv" || options != `{"every":1,"stages":[{"op":"attachments"}]}` {
		t.Errorf("sent %v, options %s", names, options)
	}
}
