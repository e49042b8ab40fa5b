package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/pkg/limits"
	"github.com/docrender/docrender/pkg/limits/limitstest"
	"github.com/docrender/docrender/proto/jobspb"
)

// onePagePDF is a blank A4 page, offsets and xref exact.
func onePagePDF() []byte {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	buf.WriteString("%PDF-1.4\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << >> >>")
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return buf.Bytes()
}

func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 20))
	for y := range 20 {
		for x := range 40 {
			img.Set(x, y, color.RGBA{uint8(x * 6), 0, uint8(y * 12), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// imageWM is the gateway's image watermark with its defaults.
func imageWM() *jobspb.Watermark {
	return &jobspb.Watermark{FontSize: 48, Color: "#888888", Opacity: 0.3, Rotation: 45, Position: "center", Pages: "all"}
}

// hasImage reports whether pdf holds an image XObject (a stream, so never
// hidden in an object stream).
func hasImage(pdf []byte) bool { return bytes.Contains(pdf, []byte("/Subtype/Image")) }

func testWorker(t *testing.T) (*Worker, blob.Store) {
	t.Helper()
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &Worker{blobs: blobs}, blobs
}

// A watermark image named by key is read from the blob store and stamped;
// one inline (a job of an older gateway) is stamped as before.
func TestStampWatermarkImageByKey(t *testing.T) {
	ctx := context.Background()
	w, blobs := testWorker(t)
	img := testPNG(t)
	key := blob.JobWatermark("j1")
	if err := blobs.Put(ctx, key, bytes.NewReader(img), int64(len(img))); err != nil {
		t.Fatal(err)
	}
	pdf := onePagePDF()
	if hasImage(pdf) {
		t.Fatal("the blank page has an image already")
	}

	byKey := imageWM()
	byKey.ImageKey = key
	out, err := w.stampWatermark(ctx, pdf, byKey, nil)
	if err != nil {
		t.Fatalf("by key: %v", err)
	}
	if !hasImage(out) {
		t.Fatal("by key: no image stamped")
	}
	if byKey.ImageKey != key || len(byKey.ImagePng) != 0 {
		t.Fatal("stampWatermark changed the job's watermark")
	}

	inline := imageWM()
	inline.ImagePng = img
	if out, err := w.stampWatermark(ctx, pdf, inline, nil); err != nil || !hasImage(out) {
		t.Fatalf("inline: image stamped %v, %v", err == nil && hasImage(out), err)
	}
}

// A key whose image is gone, too large, hostile or doubled with inline
// bytes fails the job with a message (never a panic); the oversized one is
// refused without being read past the bound.
func TestStampWatermarkImageByKeyRefused(t *testing.T) {
	ctx := context.Background()
	w, blobs := testWorker(t)
	put := func(key string, data []byte) string {
		if err := blobs.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		return key
	}
	big := append(testPNG(t), make([]byte, limits.WatermarkImageBytes)...)
	tests := []struct {
		name     string
		key      string
		inline   []byte
		wantKind jobspb.ErrorKind
		wantMsg  string
	}{
		{"missing", "jobs/gone/watermark.png", nil, jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The watermark image is gone."},
		{"over the byte bound", put("big.png", big), nil, jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "over 524288 bytes"},
		{"over the pixel bound", put("bomb.png", limitstest.BombPNG(10_000_000, 10_000_000)), nil, jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "Invalid watermark"},
		{"not a PNG", put("gif.png", []byte("GIF89a.....")), nil, jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "Invalid watermark"},
		{"inline and by key", put("ok.png", testPNG(t)), testPNG(t), jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "not both"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wm := imageWM()
			wm.ImageKey, wm.ImagePng = tc.key, tc.inline
			_, err := w.stampWatermark(ctx, onePagePDF(), wm, nil)
			if err == nil {
				t.Fatal("stamped")
			}
			// Merge sorts with editFailure, a render with renderedWatermarkFailure.
			for _, sort := range []func(error) (*jobspb.Result, error){editFailure, renderedWatermarkFailure} {
				res, rerr := sort(err)
				if rerr != nil || res == nil || res.ErrorKind != tc.wantKind || !strings.Contains(res.ErrorMessage, tc.wantMsg) {
					t.Fatalf("%v sorted as %v, %v; want %v with %q", err, res, rerr, tc.wantKind, tc.wantMsg)
				}
			}
		})
	}
}

// A blob store that is unreachable is retried, not blamed on the client;
// one that sends more than the bound is not read past it.
func TestStampWatermarkImageByKeyStore(t *testing.T) {
	ctx := context.Background()
	wm := imageWM()
	wm.ImageKey = "k"

	w := &Worker{blobs: brokenStore{}}
	_, err := w.stampWatermark(ctx, onePagePDF(), wm, nil)
	if res, rerr := editFailure(err); res != nil || !errors.Is(rerr, errBroken) {
		t.Fatalf("unreachable store sorted as %v, %v; want the error, to retry", res, rerr)
	}

	endless := &endlessReader{}
	w = &Worker{blobs: endlessStore{r: endless}}
	_, err = w.stampWatermark(ctx, onePagePDF(), wm, nil)
	if res, _ := editFailure(err); res == nil || res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_BAD_INPUT {
		t.Fatalf("endless image sorted as %v (%v)", res, err)
	}
	if endless.read > limits.WatermarkImageBytes+1 {
		t.Fatalf("read %d bytes of an endless image", endless.read)
	}
}

// The merge job reads its watermark by key too, and a missing one fails
// the merge without storing anything.
func TestMergeWatermarkByKey(t *testing.T) {
	ctx := context.Background()
	w, blobs := testWorker(t)
	pdf, img := onePagePDF(), testPNG(t)
	in, key := blob.JobInputs("m1")+"0000.pdf", blob.JobWatermark("m1")
	for k, data := range map[string][]byte{in: pdf, key: img} {
		if err := blobs.Put(ctx, k, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	job := func(key string) *jobspb.Job {
		wm := imageWM()
		wm.ImageKey = key
		return &jobspb.Job{Id: "m1", OutputKey: blob.JobResult("m1"), Kind: &jobspb.Job_Merge{Merge: &jobspb.MergeJob{
			InputKeys: []string{in}, InputNames: []string{"a.pdf"}, Watermark: wm,
		}}}
	}
	res, err := w.handleMerge(ctx, job(key))
	if err != nil || res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_NONE {
		t.Fatalf("merge: %v, %v", res, err)
	}
	out, err := blob.ReadAll(ctx, blobs, res.OutputKey, 1<<20)
	if err != nil || !hasImage(out) {
		t.Fatalf("merged PDF stamped %v (%v)", err == nil && hasImage(out), err)
	}
	if err := blobs.Delete(ctx, res.OutputKey); err != nil {
		t.Fatal(err)
	}

	res, err = w.handleMerge(ctx, job(blob.JobWatermark("gone")))
	if err != nil || res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_INTERNAL || res.ErrorMessage != "The watermark image is gone." {
		t.Fatalf("merge with its image gone: %v, %v", res, err)
	}
	if _, err := blobs.Stat(ctx, blob.JobResult("m1")); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a failed merge stored a result: %v", err)
	}
}

var errBroken = errors.New("blob store unreachable")

// brokenStore fails every call.
type brokenStore struct{ blob.Store }

func (brokenStore) Get(context.Context, string) (io.ReadCloser, blob.Info, error) {
	return nil, blob.Info{}, errBroken
}

// endlessStore answers every Get with r and no stated size.
type endlessStore struct {
	blob.Store
	r io.Reader
}

func (s endlessStore) Get(_ context.Context, key string) (io.ReadCloser, blob.Info, error) {
	return io.NopCloser(s.r), blob.Info{Key: key, Size: -1}, nil
}

// endlessReader yields zero bytes for ever and counts them.
type endlessReader struct{ read int }

func (r *endlessReader) Read(p []byte) (int, error) {
	clear(p)
	r.read += len(p)
	return len(p), nil
}

// A text watermark on a document of record is set in an embedded font and
// its optional content configured as PDF/A asks, so the PDF/A the job
// asks for passes the conformance check after the watermark; the stamp as
// it is without a record fails it, naming 6.2.11.4.1-1 (Helvetica is not
// embedded) and 6.9-4 (pdfcpu's AS). Text or image alike.
func TestStampWatermarkForRecord(t *testing.T) {
	ctx := context.Background()
	w, _ := testWorker(t)
	text := &jobspb.Watermark{Text: "ENTWURF – Łódź", FontSize: 48, Color: "#888888", Opacity: 0.3, Rotation: 45, Position: "center", Pages: "all"}
	image := imageWM()
	image.ImagePng = testPNG(t)
	rec := &jobspb.Record{Pdfa: "2u"}
	tests := []struct {
		name      string
		wm        *jobspb.Watermark
		stampFor  *jobspb.Record
		wantRules []string // none: passes
	}{
		{"text, record", text, rec, nil},
		{"text, pdfua", text, &jobspb.Record{Pdfua: true}, nil},
		{"image, record", image, rec, nil},
		{"text, as without a record", text, nil, []string{"6.2.11.4.1-1", "6.9-4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stamped, err := w.stampWatermark(ctx, onePagePDF(), tc.wm, tc.stampFor)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.finishDocument(ctx, stamped, &jobspb.DocInfo{Title: "Draft"}, nil, rec)
			var ce *conformanceError
			switch {
			case tc.wantRules == nil && err != nil:
				t.Fatalf("finishDocument: %v", err)
			case tc.wantRules == nil:
			case !errors.As(err, &ce):
				t.Fatalf("err %v, want a conformance error naming %s", err, tc.wantRules)
			}
			for _, rule := range tc.wantRules {
				if !strings.Contains(err.Error(), rule) {
					t.Errorf("err %v, want %s", err, rule)
				}
			}
		})
	}
}
