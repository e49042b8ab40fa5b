package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/proto/jobspb"
)

func newStore(t *testing.T) blob.Store {
	t.Helper()
	s, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An image watermark goes to the store once; the copy the job carries
// names the key and none of the bytes, and the caller's options (hashed by
// the generate cache) are left as they were. LoadWatermark gives the image back.
func TestOffloadWatermark(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	img := bytes.Repeat([]byte("png!"), 100<<10) // 400 KiB
	wm := &jobspb.Watermark{ImagePng: img, Opacity: 0.4, Position: "top-left", Pages: "2"}
	key := blob.BatchWatermark("b1")

	out, err := blob.OffloadWatermark(ctx, s, key, wm)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ImagePng) != 0 || out.ImageKey != key || out.Opacity != 0.4 || out.Position != "top-left" || out.Pages != "2" {
		t.Fatalf("offloaded watermark = %v", out)
	}
	if len(wm.ImagePng) != len(img) || wm.ImageKey != "" {
		t.Fatal("OffloadWatermark changed its argument")
	}
	if n := proto.Size(&jobspb.Job{Kind: &jobspb.Job_Render{Render: &jobspb.RenderJob{Watermark: out}}}); n > 1024 {
		t.Fatalf("a job with the offloaded watermark is %d bytes", n)
	}
	stored, err := blob.ReadAll(ctx, s, key, int64(len(img)))
	if err != nil || !bytes.Equal(stored, img) {
		t.Fatalf("stored image: %d bytes, %v", len(stored), err)
	}

	back, err := blob.LoadWatermark(ctx, s, out, int64(len(img)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.ImagePng, img) || back.ImageKey != "" || back.Opacity != 0.4 || back.Pages != "2" {
		t.Fatalf("loaded watermark: %d bytes, key %q, %v", len(back.ImagePng), back.ImageKey, back.Opacity)
	}
	if out.ImageKey != key || len(out.ImagePng) != 0 {
		t.Fatal("LoadWatermark changed its argument")
	}
}

// Nothing to offload or load: the watermark is used as it is, nothing stored.
func TestOffloadWatermarkWithoutImage(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	inline := &jobspb.Watermark{ImagePng: []byte("inline")}
	for _, wm := range []*jobspb.Watermark{nil, {Text: "DRAFT"}} {
		out, err := blob.OffloadWatermark(ctx, s, "jobs/j/watermark.png", wm)
		if err != nil || out != wm {
			t.Fatalf("OffloadWatermark(%v) = %v, %v", wm, out, err)
		}
	}
	for _, wm := range []*jobspb.Watermark{nil, {Text: "DRAFT"}, inline} {
		out, err := blob.LoadWatermark(ctx, s, wm, 10)
		if err != nil || out != wm {
			t.Fatalf("LoadWatermark(%v) = %v, %v", wm, out, err)
		}
	}
	var n int
	if err := s.List(ctx, "", func(blob.Info) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d objects stored (%v)", n, err)
	}
}

func TestOffloadWatermarkStoreFails(t *testing.T) {
	_, err := blob.OffloadWatermark(context.Background(), failingStore{}, "k", &jobspb.Watermark{ImagePng: []byte("x")})
	if !errors.Is(err, errStore) {
		t.Fatalf("err = %v, want the store's", err)
	}
}

func TestLoadWatermarkRefuses(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Put(ctx, "big.png", bytes.NewReader(make([]byte, 101)), 101); err != nil {
		t.Fatal(err)
	}
	if _, err := blob.LoadWatermark(ctx, s, &jobspb.Watermark{ImageKey: "big.png"}, 100); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("oversized image: %v, want ErrTooLarge", err)
	}
	if _, err := blob.LoadWatermark(ctx, s, &jobspb.Watermark{ImageKey: "gone.png"}, 100); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("missing image: %v, want ErrNotFound", err)
	}
}

func TestReadAll(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for _, n := range []int{0, 99, 100, 101} {
		key := strings.Repeat("x", n+1)
		data := bytes.Repeat([]byte{'a'}, n)
		if err := s.Put(ctx, key, bytes.NewReader(data), int64(n)); err != nil {
			t.Fatal(err)
		}
		got, err := blob.ReadAll(ctx, s, key, 100)
		if n > 100 {
			if !errors.Is(err, blob.ErrTooLarge) || got != nil {
				t.Errorf("%d bytes over a limit of 100: %d bytes, %v", n, len(got), err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%d bytes: %d bytes, %v", n, len(got), err)
		}
	}
	if _, err := blob.ReadAll(ctx, s, "missing", 100); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("missing key: %v, want ErrNotFound", err)
	}
}

// A store that states no size, or a size smaller than the object, still
// gets no more than limit+1 bytes read from it, and no larger allocation.
func TestReadAllBoundsWhatTheStoreSays(t *testing.T) {
	ctx := context.Background()
	const limit = 1 << 20
	tests := []struct {
		name    string
		stated  int64
		real    int
		want    string // "ok", "too large" or "error"
		maxRead int
	}{
		{"unknown size, under the limit", -1, 10, "ok", 10},
		{"unknown size, endless", -1, 1 << 30, "too large", limit + 1},
		{"stated small, really endless", 10, 1 << 30, "error", 11},
		{"stated over the limit", limit + 1, limit + 1, "too large", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &countingReader{left: tc.real}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := blob.ReadAll(ctx, sizedStore{size: tc.stated, r: r}, "k", limit)
			runtime.ReadMemStats(&after)
			switch tc.want {
			case "ok":
				if err != nil || len(got) != tc.real {
					t.Fatalf("%d bytes, %v; want %d", len(got), err, tc.real)
				}
			case "too large":
				if !errors.Is(err, blob.ErrTooLarge) {
					t.Fatalf("err = %v, want ErrTooLarge", err)
				}
			default:
				if err == nil || errors.Is(err, blob.ErrTooLarge) {
					t.Fatalf("err = %v, want an error other than ErrTooLarge", err)
				}
			}
			if r.read > tc.maxRead {
				t.Fatalf("read %d bytes, want at most %d", r.read, tc.maxRead)
			}
			// One buffer of at most limit+1 bytes, and small change for errors.
			if n := after.TotalAlloc - before.TotalAlloc; n > limit+limit/8 {
				t.Fatalf("%d bytes allocated for a limit of %d", n, limit)
			}
		})
	}
}

// countingReader yields `left` zero bytes and counts what was read.
type countingReader struct{ left, read int }

func (r *countingReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.left)
	clear(p[:n])
	r.left -= n
	r.read += n
	return n, nil
}

// sizedStore answers every Get with r and the stated size.
type sizedStore struct {
	failingStore
	size int64
	r    io.Reader
}

func (s sizedStore) Get(_ context.Context, key string) (io.ReadCloser, blob.Info, error) {
	return io.NopCloser(s.r), blob.Info{Key: key, Size: s.size}, nil
}

var errStore = errors.New("store refuses")

// failingStore refuses everything.
type failingStore struct{ blob.Store }

func (failingStore) Put(context.Context, string, io.Reader, int64) error { return errStore }
func (failingStore) Get(context.Context, string) (io.ReadCloser, blob.Info, error) {
	return nil, blob.Info{}, errStore
}
