// Package blob defines the file store behind job inputs, results, hosted
// PDFs and ZIPs. Implementations: localblob (embedded default) and s3blob
// (MinIO / S3). Every implementation passes blobtest.Run.
package blob

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned (wrapped) for a key that does not exist.
var ErrNotFound = errors.New("blob: not found")

// Info describes a stored object.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// Store keeps opaque byte streams under slash-separated keys.
type Store interface {
	// Put stores r under key, replacing any previous object. size may be -1
	// when unknown. A reader that fails leaves no partial object visible.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens the object; the caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Stat describes the object without reading it.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the object; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every object whose key starts with prefix.
	DeletePrefix(ctx context.Context, prefix string) error
	// List calls fn with every object whose key starts with prefix, in no
	// set order, and stops at fn's first error, which it returns. Objects
	// still being written are not listed.
	List(ctx context.Context, prefix string, fn func(Info) error) error
	// Ready reports whether the store answers.
	Ready(ctx context.Context) error
}
