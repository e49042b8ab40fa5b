// Package localblob stores blobs as files under a directory (embedded mode).
package localblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/docrender/docrender/pkg/blob"
)

// Store is a blob.Store on local disk.
type Store struct{ root string }

// New creates the directory if needed.
func New(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("localblob: %w", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("localblob: %w", err)
	}
	return &Store{root: abs}, nil
}

// path maps a key to a file, refusing keys that would escape the root.
func (s *Store) path(key string) (string, error) {
	if key == "" || strings.Contains(key, "\\") || strings.HasPrefix(key, "/") {
		return "", fmt.Errorf("localblob: invalid key %q", key)
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("localblob: invalid key %q", key)
		}
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

func (s *Store) Put(ctx context.Context, key string, r io.Reader, _ int64) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return fmt.Errorf("localblob: put %s: %w", key, err)
	}
	// Write to a temporary name and rename, so readers never see a partial file.
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("localblob: put %s: %w", key, err)
	}
	_, err = io.Copy(tmp, ctxReader{ctx, r})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("localblob: put %s: %w", key, err)
	}
	return nil
}

func (s *Store) Get(_ context.Context, key string) (io.ReadCloser, blob.Info, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, blob.Info{}, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, blob.Info{}, s.wrap(key, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, blob.Info{}, s.wrap(key, err)
	}
	return f, blob.Info{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

func (s *Store) Stat(_ context.Context, key string) (blob.Info, error) {
	p, err := s.path(key)
	if err != nil {
		return blob.Info{}, err
	}
	st, err := os.Stat(p)
	if err != nil || st.IsDir() {
		if err == nil {
			err = fs.ErrNotExist
		}
		return blob.Info{}, s.wrap(key, err)
	}
	return blob.Info{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

func (s *Store) Delete(_ context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("localblob: delete %s: %w", key, err)
	}
	return nil
}

func (s *Store) DeletePrefix(_ context.Context, prefix string) error {
	// A prefix ending in "/" is a directory; otherwise match names in the parent.
	dir, namePrefix := filepath.Split(filepath.FromSlash(prefix))
	base := filepath.Join(s.root, dir)
	if !strings.HasPrefix(base, s.root) {
		return fmt.Errorf("localblob: invalid prefix %q", prefix)
	}
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("localblob: delete prefix %s: %w", prefix, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), namePrefix) {
			if err := os.RemoveAll(filepath.Join(base, e.Name())); err != nil {
				return fmt.Errorf("localblob: delete prefix %s: %w", prefix, err)
			}
		}
	}
	return nil
}

// List walks the directory of prefix. Files still being written (the
// temporary names of Put) are not listed.
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	dir, _ := filepath.Split(filepath.FromSlash(prefix))
	base := filepath.Join(s.root, dir)
	if !strings.HasPrefix(base, s.root) {
		return fmt.Errorf("localblob: invalid prefix %q", prefix)
	}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone while walking (deleted by another request)
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return fn(blob.Info{Key: key, Size: info.Size(), ModTime: info.ModTime()})
	})
	if err != nil {
		return fmt.Errorf("localblob: list %s: %w", prefix, err)
	}
	return nil
}

func (s *Store) Ready(context.Context) error {
	_, err := os.Stat(s.root)
	return err
}

func (s *Store) wrap(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("localblob: %s: %w", key, blob.ErrNotFound)
	}
	return fmt.Errorf("localblob: %s: %w", key, err)
}

// ctxReader stops a long copy when the context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
