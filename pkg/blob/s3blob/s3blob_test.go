package s3blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/blobtest"
	"github.com/docrender/docrender/pkg/blob/s3blob"
	miniotest "github.com/docrender/docrender/pkg/testenv/minio"
)

// One MinIO for the whole package; every test gets its own bucket.
func TestMain(m *testing.M) { miniotest.Main(m) }

func newStore(t *testing.T) (*s3blob.Store, s3blob.Config) {
	t.Helper()
	cfg := miniotest.Start(t)
	s, err := s3blob.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}

// rawClient talks to the server directly, to check what the Store did.
func rawClient(t *testing.T, cfg s3blob.Config) *minio.Client {
	t.Helper()
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: cfg.UseSSL,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestContract(t *testing.T) {
	s, _ := newStore(t)
	blobtest.Run(t, s)
}

func TestNewCreatesBucket(t *testing.T) {
	ctx := t.Context()
	cfg := miniotest.Start(t)
	raw := rawClient(t, cfg)
	if ok, err := raw.BucketExists(ctx, cfg.Bucket); err != nil || ok {
		t.Fatalf("bucket before New: exists=%v err=%v", ok, err)
	}
	if _, err := s3blob.New(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if ok, err := raw.BucketExists(ctx, cfg.Bucket); err != nil || !ok {
		t.Fatalf("bucket after New: exists=%v err=%v", ok, err)
	}
	// A second process starting against the same bucket.
	if _, err := s3blob.New(ctx, cfg); err != nil {
		t.Fatalf("New on an existing bucket: %v", err)
	}
}

func TestNewConcurrent(t *testing.T) {
	cfg := miniotest.Start(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := s3blob.New(t.Context(), cfg)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestWrongCredentials(t *testing.T) {
	good := miniotest.Start(t)
	for name, mutate := range map[string]func(*s3blob.Config){
		"secret key": func(c *s3blob.Config) { c.SecretKey = "not-the-secret" },
		"access key": func(c *s3blob.Config) { c.AccessKey = "nobody" },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			mutate(&cfg)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s, err := s3blob.New(ctx, cfg)
			if err == nil {
				t.Fatalf("New with a wrong %s succeeded: %v", name, s)
			}
			t.Logf("New: %v", err)
			if strings.Contains(err.Error(), cfg.SecretKey) {
				t.Errorf("error leaks the secret key: %v", err)
			}
		})
	}
}

func TestReadyFailsWithoutBucket(t *testing.T) {
	s, cfg := newStore(t)
	if err := s.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := rawClient(t, cfg).RemoveBucket(t.Context(), cfg.Bucket); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(t.Context()); err == nil {
		t.Fatal("Ready with the bucket gone")
	}
}

func TestSetExpiryRule(t *testing.T) {
	ctx := t.Context()
	s, cfg := newStore(t)
	for _, r := range []struct {
		prefix string
		days   int
	}{{"hosted/", 1}, {"batches/", 7}, {"hosted/", 30}} {
		if err := s.SetExpiryRule(ctx, r.prefix, r.days); err != nil {
			t.Fatalf("SetExpiryRule(%q, %d): %v", r.prefix, r.days, err)
		}
	}
	lc, err := rawClient(t, cfg).GetBucketLifecycle(ctx, cfg.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range lc.Rules {
		got[r.RuleFilter.Prefix] = fmt.Sprintf("%s %s %d", r.ID, r.Status, r.Expiration.Days)
	}
	want := map[string]string{
		"hosted/":  s3blob.ExpiryRuleID("hosted/") + " Enabled 30", // replaced, not duplicated
		"batches/": s3blob.ExpiryRuleID("batches/") + " Enabled 7", // kept
	}
	if len(lc.Rules) != len(want) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lifecycle rules = %v (%d rules), want %v", got, len(lc.Rules), want)
	}
	if days, ok, err := s.ExpiryRule(ctx, "hosted/"); err != nil || !ok || days != 30 {
		t.Fatalf("ExpiryRule(hosted/) = %d, %v, %v; want 30", days, ok, err)
	}
	if _, ok, err := s.ExpiryRule(ctx, "none/"); err != nil || ok {
		t.Fatalf("ExpiryRule(none/) = %v, %v; want none", ok, err)
	}
	if err := s.SetExpiryRule(ctx, "x/", 0); err == nil {
		t.Fatal("SetExpiryRule with 0 days accepted")
	}
}

type failAfter struct{ n int }

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("source broke")
	}
	n := min(len(p), f.n)
	clear(p[:n])
	f.n -= n
	return n, nil
}

// Each way an upload can go (read-ahead of an unknown size, one PUT of a
// declared size up to 16 MiB, multipart of a declared or unknown size)
// leaves the previous object whole when the source fails.
func TestFailedPut(t *testing.T) {
	ctx := t.Context()
	s, cfg := newStore(t)
	raw := rawClient(t, cfg)
	for _, tc := range []struct {
		name       string
		size       int64
		failsAfter int
	}{
		{"unknown size in read-ahead", -1, 1 << 20},
		{"unknown size multipart", -1, 21 << 20},
		{"declared size single put", 1 << 20, 1<<20 - 4096},
		{"declared size multipart", 20 << 20, 20<<20 - 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "fail/" + strings.ReplaceAll(tc.name, " ", "-")
			if err := s.Put(ctx, key, strings.NewReader("previous"), 8); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, key, &failAfter{n: tc.failsAfter}, tc.size); err == nil {
				t.Fatal("Put with a failing reader succeeded")
			}
			// The old version stays whole.
			rc, info, err := s.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			if string(b) != "previous" || info.Size != 8 {
				t.Fatalf("after failed Put: %q size %d", b, info.Size)
			}
			// And the aborted upload does not linger on the server.
			for u := range raw.ListIncompleteUploads(ctx, cfg.Bucket, key, true) {
				if u.Err != nil {
					t.Fatal(u.Err)
				}
				t.Fatalf("incomplete upload left behind: %+v", u)
			}
		})
	}
}

// Streams of unknown size around the read-ahead limit (5 MiB), where Put
// switches from one PUT to a multipart upload.
func TestUnknownSizeBoundaries(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	for _, n := range []int{0, 1, 5<<20 - 1, 5 << 20, 5<<20 + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data := bytes.Repeat([]byte{'d'}, n)
			key := fmt.Sprintf("b/%d", n)
			if err := s.Put(ctx, key, io.MultiReader(bytes.NewReader(data)), -1); err != nil {
				t.Fatal(err)
			}
			rc, info, err := s.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != int64(n) || !bytes.Equal(got, data) {
				t.Fatalf("size %d, read %d bytes", info.Size, len(got))
			}
		})
	}
}

func TestLargeUnknownSize(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), (33<<20)/16) // three parts
	if err := s.Put(ctx, "big", io.MultiReader(bytes.NewReader(data)), -1); err != nil {
		t.Fatal(err)
	}
	rc, info, err := s.Get(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(data)) || !bytes.Equal(got, data) {
		t.Fatalf("size %d, read %d bytes, equal %v", info.Size, len(got), bytes.Equal(got, data))
	}
}

func TestDeletePrefixManyObjects(t *testing.T) {
	ctx := t.Context()
	s, cfg := newStore(t)
	const n = 1100 // more than one bulk-delete request (1000 keys)
	var wg sync.WaitGroup
	keys := make(chan string)
	errs := make(chan error, n)
	for range 32 {
		wg.Go(func() {
			for k := range keys {
				errs <- s.Put(ctx, k, strings.NewReader("x"), 1)
			}
		})
	}
	for i := range n {
		keys <- fmt.Sprintf("many/%04d", i)
	}
	close(keys)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "manyx", strings.NewReader("keep"), 4); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePrefix(ctx, "many/"); err != nil {
		t.Fatal(err)
	}
	left := 0
	for o := range rawClient(t, cfg).ListObjects(ctx, cfg.Bucket, minio.ListObjectsOptions{Prefix: "many", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if o.Key != "manyx" {
			left++
		}
	}
	if left != 0 {
		t.Fatalf("%d objects left under many/", left)
	}
	if _, err := s.Stat(ctx, "manyx"); err != nil {
		t.Fatalf("sibling outside the prefix: %v", err)
	}
}

func TestNotFoundKeepsS3Error(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.Stat(t.Context(), "missing")
	var resp minio.ErrorResponse
	if !errors.Is(err, blob.ErrNotFound) || !errors.As(err, &resp) || resp.Code != minio.NoSuchKey {
		t.Fatalf("Stat(missing) = %v", err)
	}
}

func TestRejectsInvalidKeys(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	// The keys localblob refuses, so both modes agree on what a key is.
	for _, k := range []string{"../x", "a/../../x", "/etc/passwd", "a//b", `a\b`, "", "a/./b", "dir/"} {
		if err := s.Put(ctx, k, strings.NewReader("x"), 1); err == nil {
			t.Errorf("Put(%q) accepted", k)
		}
		if _, _, err := s.Get(ctx, k); err == nil || errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want an invalid-key error", k, err)
		}
	}
}
