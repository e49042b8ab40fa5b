// Package s3blob is the blob.Store on S3 / MinIO used in scaled-out mode, so
// that every gateway and worker sees the same files.
package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/lifecycle"

	"github.com/docrender/docrender/pkg/blob"
)

const (
	// partSize bounds the memory of a Put of unknown size: minio-go buffers
	// one part at a time and, left to itself, sizes parts for a 5 TiB object
	// (~537 MiB each). 16 MiB × 10000 parts still allows objects of 160 GiB.
	partSize = 16 << 20
	// smallPut is how much of a stream of unknown size Put reads ahead: a
	// stream that ends within it goes up as one PUT of known size, instead
	// of a multipart upload (three requests and a partSize buffer).
	smallPut = 5 << 20
)

// Config addresses the bucket (DOCRENDER_S3_* variables).
type Config struct {
	Endpoint  string // host:port, no scheme
	AccessKey string
	SecretKey string
	Bucket    string
	UseSSL    bool
}

// Store is a blob.Store in one S3 bucket.
type Store struct {
	client *minio.Client
	bucket string
}

var _ blob.Store = (*Store)(nil)

// New connects and creates the bucket if it does not exist yet, so a fresh
// MinIO needs no manual preparation. Bad credentials or an unreachable
// endpoint fail here rather than on the first job.
func New(ctx context.Context, c Config) (*Store, error) {
	if c.Endpoint == "" || c.Bucket == "" {
		return nil, errors.New("s3blob: endpoint and bucket are required")
	}
	client, err := minio.New(c.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure: c.UseSSL,
	})
	if err != nil {
		return nil, fmt.Errorf("s3blob: client for %s: %w", c.Endpoint, err)
	}
	s := &Store{client: client, bucket: c.Bucket}
	exists, err := client.BucketExists(ctx, c.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3blob: bucket %s: %w", c.Bucket, err)
	}
	if !exists {
		err := client.MakeBucket(ctx, c.Bucket, minio.MakeBucketOptions{})
		// Another process starting at the same time may have won the race.
		if err != nil && minio.ToErrorResponse(err).Code != minio.BucketAlreadyOwnedByYou {
			return nil, fmt.Errorf("s3blob: create bucket %s: %w", c.Bucket, err)
		}
	}
	return s, nil
}

// checkKey applies localblob's key rules, so a key is valid in both modes or
// in neither (S3 itself would accept "a//b" or "../x").
func checkKey(key string) error {
	if key == "" || strings.Contains(key, "\\") || strings.HasPrefix(key, "/") {
		return fmt.Errorf("s3blob: invalid key %q", key)
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("s3blob: invalid key %q", key)
		}
	}
	return nil
}

// Put uploads r. An S3 object only becomes visible once its upload
// completes, and minio-go aborts a multipart upload whose reader fails, so a
// failed Put leaves nothing behind.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if size < 0 {
		var head bytes.Buffer
		n, err := io.CopyN(&head, r, smallPut)
		switch {
		case err == io.EOF:
			r, size = &head, n
		case err != nil:
			return fmt.Errorf("s3blob: put %s: %w", key, err)
		default:
			r = io.MultiReader(&head, r)
		}
	}
	_, err := s.client.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{PartSize: partSize})
	if err != nil {
		return fmt.Errorf("s3blob: put %s: %w", key, err)
	}
	return nil
}

func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, blob.Info, error) {
	if err := checkKey(key); err != nil {
		return nil, blob.Info{}, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, blob.Info{}, s.wrap("get", key, err)
	}
	// GetObject is lazy: Stat sends the request, so a missing key is
	// reported here and the size comes from the same response.
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, blob.Info{}, s.wrap("get", key, err)
	}
	return obj, blob.Info{Key: key, Size: st.Size, ModTime: st.LastModified}, nil
}

func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := checkKey(key); err != nil {
		return blob.Info{}, err
	}
	st, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return blob.Info{}, s.wrap("stat", key, err)
	}
	return blob.Info{Key: key, Size: st.Size, ModTime: st.LastModified}, nil
}

// Delete removes key; S3 already treats a missing key as success.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return s.wrap("delete", key, err)
	}
	return nil
}

// DeletePrefix lists the keys under prefix and feeds them to a bulk delete
// (1000 keys per request) while the listing is still running.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objects := make(chan minio.ObjectInfo)
	listErr := make(chan error, 1)
	go func() {
		defer close(objects)
		for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if o.Err != nil {
				listErr <- o.Err
				return
			}
			select {
			case objects <- o:
			case <-ctx.Done():
				listErr <- ctx.Err()
				return
			}
		}
		listErr <- nil
	}()
	var err error
	// Drain every result: RemoveObjects stops only when objects is closed.
	for e := range s.client.RemoveObjects(ctx, s.bucket, objects, minio.RemoveObjectsOptions{}) {
		if err == nil {
			err = fmt.Errorf("s3blob: delete prefix %s: %s: %w", prefix, e.ObjectName, e.Err)
			cancel() // stop listing; the remaining results are drained below
		}
	}
	if lerr := <-listErr; err == nil && lerr != nil {
		err = fmt.Errorf("s3blob: delete prefix %s: list: %w", prefix, lerr)
	}
	return err
}

// List lists the keys under prefix; an object being uploaded is not
// listed until its upload completes.
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing when fn ends it early
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("s3blob: list %s: %w", prefix, o.Err)
		}
		if err := fn(blob.Info{Key: o.Key, Size: o.Size, ModTime: o.LastModified}); err != nil {
			return err
		}
	}
	return nil
}

// Ready checks that the endpoint answers, the credentials work and the
// bucket is still there.
func (s *Store) Ready(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("s3blob: ready: %w", err)
	}
	if !ok {
		return fmt.Errorf("s3blob: ready: bucket %s does not exist", s.bucket)
	}
	return nil
}

// ExpiryRuleID names the lifecycle rule SetExpiryRule installs for prefix.
func ExpiryRuleID(prefix string) string {
	return "docrender-expire:" + prefix
}

// SetExpiryRule makes the bucket delete objects under prefix days after
// their creation, a backstop for hosted files the sweeper misses. S3 stores
// one lifecycle document per bucket, so the rule is merged into it: rules of
// other prefixes are kept and a rule for the same prefix is replaced. The
// read-modify-write is not atomic; callers install rules at startup.
// Expiry runs on the server's own schedule (MinIO scans in the background),
// so objects may outlive the deadline by some hours.
func (s *Store) SetExpiryRule(ctx context.Context, prefix string, days int) error {
	if days < 1 {
		return fmt.Errorf("s3blob: expiry rule %q: days must be at least 1, got %d", prefix, days)
	}
	cfg, err := s.client.GetBucketLifecycle(ctx, s.bucket)
	if err != nil {
		if minio.ToErrorResponse(err).Code != "NoSuchLifecycleConfiguration" {
			return fmt.Errorf("s3blob: expiry rule %q: read lifecycle: %w", prefix, err)
		}
		cfg = lifecycle.NewConfiguration()
	}
	id := ExpiryRuleID(prefix)
	rule := lifecycle.Rule{
		ID:         id,
		Status:     "Enabled",
		RuleFilter: lifecycle.Filter{Prefix: prefix},
		Expiration: lifecycle.Expiration{Days: lifecycle.ExpirationDays(days)},
	}
	replaced := false
	for i := range cfg.Rules {
		if cfg.Rules[i].ID == id {
			cfg.Rules[i] = rule
			replaced = true
		}
	}
	if !replaced {
		cfg.Rules = append(cfg.Rules, rule)
	}
	if err := s.client.SetBucketLifecycle(ctx, s.bucket, cfg); err != nil {
		return fmt.Errorf("s3blob: expiry rule %q: %w", prefix, err)
	}
	return nil
}

// ExpiryRule reports the days of the rule SetExpiryRule installed for
// prefix; ok is false when there is none. Operators and tests use it to
// check what a gateway installed at start.
func (s *Store) ExpiryRule(ctx context.Context, prefix string) (days int, ok bool, err error) {
	cfg, err := s.client.GetBucketLifecycle(ctx, s.bucket)
	if err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchLifecycleConfiguration" {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("s3blob: read lifecycle: %w", err)
	}
	for _, r := range cfg.Rules {
		if r.ID == ExpiryRuleID(prefix) && r.Status == "Enabled" {
			return int(r.Expiration.Days), true, nil
		}
	}
	return 0, false, nil
}

// wrap maps S3's "no such key" to blob.ErrNotFound, keeping the S3 error
// in the chain too.
func (s *Store) wrap(op, key string, err error) error {
	if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return fmt.Errorf("s3blob: %s %s: %w: %w", op, key, blob.ErrNotFound, err)
	}
	return fmt.Errorf("s3blob: %s %s: %w", op, key, err)
}
