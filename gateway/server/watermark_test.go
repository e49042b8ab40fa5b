package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/proto/jobspb"
)

// noisyPNG is a PNG that does not compress: about 4 bytes a pixel.
func noisyPNG(t *testing.T, side int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	x := uint32(1)
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = uint8(x)
	}
	img.Set(0, 0, color.RGBA{A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// peekQueue is the fake queue calling peek with each job as it is
// submitted, while its request still waits for it.
type peekQueue struct {
	*fakeQueue
	peek func(*jobspb.Job)
}

func (q peekQueue) Submit(ctx context.Context, job *jobspb.Job) (Waiter, error) {
	q.peek(job)
	return q.fakeQueue.Submit(ctx, job)
}

func watermarkOptions(t *testing.T, img []byte, more map[string]any) string {
	t.Helper()
	opts := map[string]any{"watermark": map[string]any{"image": base64.StdEncoding.EncodeToString(img), "opacity": 0.5}}
	for k, v := range more {
		opts[k] = v
	}
	b, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A watermark image travels to the worker by blob key: stored in the
// job's folder before the job is queued, the job carrying none of its
// bytes, and removed with the job's files once answered. Generate and merge.
func TestWatermarkImageTravelsByKey(t *testing.T) {
	img := noisyPNG(t, 200) // about 160 KB
	pdf := [2]string{"a.pdf", "%PDF-1.7\n..."}
	tests := []struct {
		name string
		path string
		body func(t *testing.T) *form2
		wm   func(*jobspb.Job) *jobspb.Watermark
	}{
		{"generate", "/pdf/generate", func(t *testing.T) *form2 { return multipartBody(t, watermarkOptions(t, img, nil), page) },
			func(j *jobspb.Job) *jobspb.Watermark { return j.GetRender().GetWatermark() }},
		{"merge", "/pdf/merge", func(t *testing.T) *form2 { return multipartBody(t, watermarkOptions(t, img, nil), pdf) },
			func(j *jobspb.Job) *jobspb.Watermark { return j.GetMerge().GetWatermark() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, nil)
			var key string
			g.srv.Queue = peekQueue{g.queue, func(job *jobspb.Job) {
				wm := tc.wm(job)
				key = wm.GetImageKey()
				if key != blob.JobWatermark(job.Id) || len(wm.GetImagePng()) != 0 || wm.GetOpacity() != 0.5 {
					t.Errorf("job's watermark: key %q, %d image bytes, opacity %v", key, len(wm.GetImagePng()), wm.GetOpacity())
				}
				stored, err := blob.ReadAll(context.Background(), g.srv.Blobs, key, int64(len(img)))
				if err != nil || !bytes.Equal(stored, img) {
					t.Errorf("stored image: %d bytes, %v", len(stored), err)
				}
			}}
			g.do(req{method: "POST", path: tc.path, body: tc.body(t)}).check(t, expect{status: 200})
			if len(g.queue.submitted) != 1 || key == "" {
				t.Fatalf("%d jobs ran", len(g.queue.submitted))
			}
			// Deleted right after the answer went out (sendBlob flushes it
			// first, so the client does not wait for the cleanup).
			deadline := time.Now().Add(5 * time.Second)
			for _, err := g.srv.Blobs.Stat(context.Background(), key); !errors.Is(err, blob.ErrNotFound); _, err = g.srv.Blobs.Stat(context.Background(), key) {
				if time.Now().After(deadline) {
					t.Fatalf("image left after the answer: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// Storing the image does not change what the generate cache hashes: the
// same request again is a hit, which stores nothing and runs nothing.
func TestWatermarkImageCacheHit(t *testing.T) {
	g := newGateway(t, nil)
	opts := watermarkOptions(t, noisyPNG(t, 20), map[string]any{"documentId": "doc-1"})
	for _, want := range []string{"MISS", "HIT"} {
		g.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, opts, page)}).
			check(t, expect{status: 200, header: map[string]string{"X-Cache": want}})
	}
	if len(g.queue.submitted) != 1 {
		t.Fatalf("%d jobs ran, want 1", len(g.queue.submitted))
	}
}

// A text watermark rides in the job as before.
func TestWatermarkTextInJob(t *testing.T) {
	g := newGateway(t, nil)
	g.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"watermark":{"text":"DRAFT"}}`, page)}).check(t, expect{status: 200})
	if wm := g.queue.submitted[0].GetRender().GetWatermark(); wm.GetText() != "DRAFT" || wm.GetImageKey() != "" {
		t.Fatalf("job's watermark %v", wm)
	}
}

// An image that cannot be stored fails the request before anything is
// queued, and gives back what it reserved.
func TestWatermarkImageStoreFails(t *testing.T) {
	g := newGateway(t, nil)
	g.srv.Blobs = noWatermarkPuts{g.srv.Blobs}
	img := noisyPNG(t, 20)
	for _, r := range []struct{ path, opts string }{
		{"/pdf/generate", watermarkOptions(t, img, map[string]any{"host": true})},
		{"/pdf/merge", watermarkOptions(t, img, map[string]any{"host": true})},
	} {
		file := page
		if r.path == "/pdf/merge" {
			file = [2]string{"a.pdf", "%PDF-1.7\n..."}
		}
		g.do(req{method: "POST", path: r.path, body: multipartBody(t, r.opts, file)}).check(t, expect{status: http.StatusInternalServerError})
	}
	if len(g.queue.submitted) != 0 {
		t.Fatalf("%d jobs ran", len(g.queue.submitted))
	}
	if n, err := g.srv.files.HostedCount(context.Background(), g.user.ID); err != nil || n != 0 {
		t.Fatalf("hosted slots %d (%v), want 0", n, err)
	}
}

// A batch stores its image once; every document job names it.
func TestBatchWatermarkImageByKey(t *testing.T) {
	g := newGateway(t, nil)
	img := noisyPNG(t, 200)
	docs := []map[string]string{{"fileName": "a", "htmlContent": "<p>a"}, {"fileName": "b", "htmlContent": "<p>b"}, {"fileName": "c", "htmlContent": "<p>c"}}
	a := g.do(req{method: "POST", path: "/pdf/generate-batch", body: map[string]any{"documents": docs, "stream": true,
		"options": map[string]any{"watermark": map[string]any{"image": base64.StdEncoding.EncodeToString(img)}}}})
	a.check(t, expect{status: 200})
	id, _ := a.json["batchId"].(string)
	if len(g.queue.published) != 3 {
		t.Fatalf("%d documents queued, want 3", len(g.queue.published))
	}
	for i, job := range g.queue.published {
		wm := job.GetBatchDocument().GetRender().GetWatermark()
		if wm.GetImageKey() != blob.BatchWatermark(id) || len(wm.GetImagePng()) != 0 {
			t.Fatalf("document %d: key %q, %d image bytes", i, wm.GetImageKey(), len(wm.GetImagePng()))
		}
	}
	stored, err := blob.ReadAll(context.Background(), g.srv.Blobs, blob.BatchWatermark(id), int64(len(img)))
	if err != nil || !bytes.Equal(stored, img) {
		t.Fatalf("stored image: %d bytes, %v", len(stored), err)
	}
}

// noWatermarkPuts is a blob store that refuses to store watermark images.
type noWatermarkPuts struct{ blob.Store }

func (s noWatermarkPuts) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasSuffix(key, "watermark.png") {
		return errors.New("store refuses")
	}
	return s.Store.Put(ctx, key, r, size)
}
