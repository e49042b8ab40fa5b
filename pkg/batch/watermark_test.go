package batch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/proto/jobspb"
)

// submitWatermarked submits a batch of n documents with watermark wm and
// returns its jobs, every one accepted by the queue.
func submitWatermarked(t *testing.T, f fixture, n int, wm *jobspb.Watermark) (*Record, []*jobspb.Job, error) {
	t.Helper()
	q := &refusingQueue{accept: n}
	f.tr.q = q
	id := ids.New()
	r := &Record{ID: id, OwnerID: "u1", Name: "b", Total: n, ZipID: id, Retention: time.Hour, CreatedAt: time.Now()}
	docs := make([]Document, n)
	for i := range docs {
		docs[i] = Document{EntryName: "d" + strconv.Itoa(i) + ".pdf", HTML: "<p>doc " + strconv.Itoa(i)}
	}
	err := f.tr.Submit(context.Background(), r, docs, &jobspb.RenderJob{Watermark: wm}, time.Second)
	return r, q.jobs, err
}

// The watermark image is stored once per batch, before any document is
// queued; every document job names it and carries none of its bytes.
func TestSubmitOffloadsWatermarkImage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	img := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 64<<10) // 256 KiB
	wm := &jobspb.Watermark{ImagePng: img, Opacity: 0.3, Pages: "1"}
	r, jobs, err := submitWatermarked(t, f, 3, wm)
	if err != nil {
		t.Fatal(err)
	}
	key := blob.BatchWatermark(r.ID)
	for i, job := range jobs {
		got := job.GetBatchDocument().GetRender().GetWatermark()
		if got.GetImageKey() != key || len(got.GetImagePng()) != 0 || got.GetOpacity() != 0.3 || got.GetPages() != "1" {
			t.Fatalf("job %d watermark = %v", i, got)
		}
		if n := proto.Size(job); n > 1024 {
			t.Fatalf("job %d is %d bytes", i, n)
		}
	}
	if len(wm.ImagePng) != len(img) {
		t.Fatal("Submit changed the caller's watermark")
	}
	stored, err := blob.ReadAll(ctx, f.tr.blobs, key, int64(len(img)))
	if err != nil || !bytes.Equal(stored, img) {
		t.Fatalf("stored image: %d bytes, %v", len(stored), err)
	}

	// A text watermark travels as it is; nothing is stored for it.
	r, jobs, err = submitWatermarked(t, f, 2, &jobspb.Watermark{Text: "DRAFT"})
	if err != nil {
		t.Fatal(err)
	}
	if got := jobs[1].GetBatchDocument().GetRender().GetWatermark(); got.GetText() != "DRAFT" || got.GetImageKey() != "" {
		t.Fatalf("text watermark = %v", got)
	}
	if _, err := f.tr.blobs.Stat(ctx, blob.BatchWatermark(r.ID)); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("an image stored for a text watermark: %v", err)
	}
}

// The image outlives every document that may still need it: a failed
// batch removes it with the inputs only once its last document settles,
// a completed one once its ZIP is recorded.
func TestBatchWatermarkOutlivesItsDocuments(t *testing.T) {
	ctx := context.Background()
	wm := &jobspb.Watermark{ImagePng: []byte("png")}
	stored := func(t *testing.T, f fixture, r *Record) bool {
		t.Helper()
		_, err := f.tr.blobs.Stat(ctx, blob.BatchWatermark(r.ID))
		if err != nil && !errors.Is(err, blob.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}

	t.Run("failed", func(t *testing.T) {
		f := newFixture(t)
		r, _, err := submitWatermarked(t, f, 3, wm)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.tr.Fail(ctx, r, "document 0 failed"); err != nil {
			t.Fatal(err)
		}
		for i := range r.Total {
			if !stored(t, f, r) {
				t.Fatalf("image gone before document %d settled", i)
			}
			if err := f.tr.DocNotDone(ctx, r, i); err != nil {
				t.Fatal(err)
			}
		}
		if stored(t, f, r) {
			t.Fatal("image left after every document settled")
		}
	})

	t.Run("completed", func(t *testing.T) {
		f := newFixture(t)
		r, _, err := submitWatermarked(t, f, 2, wm)
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.Total {
			if _, err := f.tr.DocDone(ctx, r, i); err != nil {
				t.Fatal(err)
			}
		}
		if !stored(t, f, r) {
			t.Fatal("image gone before the ZIP was built")
		}
		if _, err := f.tr.Complete(ctx, r, f.tr.ZipFile(r, 10)); err != nil {
			t.Fatal(err)
		}
		if stored(t, f, r) {
			t.Fatal("image left after the batch completed")
		}
	})
}

// An image that cannot be stored queues nothing, and leaves no inputs.
func TestSubmitWatermarkStoreFails(t *testing.T) {
	f := newFixture(t)
	f.tr.blobs = noWatermarks{f.tr.blobs}
	r, jobs, err := submitWatermarked(t, f, 2, &jobspb.Watermark{ImagePng: []byte("png")})
	if !errors.Is(err, errNoWatermarks) {
		t.Fatalf("Submit: %v, want the store's error", err)
	}
	if len(jobs) != 0 {
		t.Fatalf("%d jobs queued", len(jobs))
	}
	if _, err := f.tr.blobs.Stat(context.Background(), blob.BatchInputs(r.ID, 0)+"index.html"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("inputs of an abandoned batch remain: %v", err)
	}
}

var errNoWatermarks = errors.New("store refuses watermarks")

// noWatermarks is a blob store that refuses to store watermark images.
type noWatermarks struct{ blob.Store }

func (s noWatermarks) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasSuffix(key, "watermark.png") {
		return errNoWatermarks
	}
	return s.Store.Put(ctx, key, r, size)
}
