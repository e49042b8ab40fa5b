// Package blobtest is the contract every blob.Store implementation passes.
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/blob"
)

type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("boom")
	}
	n := min(len(p), f.n)
	f.n -= n
	return n, nil
}

// Run exercises s; keys are created under a fresh prefix.
func Run(t *testing.T, s blob.Store) {
	ctx := context.Background()
	prefix := "contract-" + rand.Text()[:10] + "/"
	read := func(t *testing.T, key string) []byte {
		t.Helper()
		rc, info, err := s.Get(ctx, key)
		if err != nil {
			t.Fatalf("Get(%s): %v", key, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size != int64(len(b)) {
			t.Fatalf("Get(%s) size %d, read %d bytes", key, info.Size, len(b))
		}
		return b
	}
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"put get stat", func(t *testing.T) {
			data := bytes.Repeat([]byte("docrender"), 100000)
			if err := s.Put(ctx, prefix+"a/b.pdf", bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
			if got := read(t, prefix+"a/b.pdf"); !bytes.Equal(got, data) {
				t.Fatal("content differs")
			}
			info, err := s.Stat(ctx, prefix+"a/b.pdf")
			if err != nil || info.Size != int64(len(data)) {
				t.Fatalf("Stat = %+v, %v", info, err)
			}
		}},
		{"unknown size", func(t *testing.T) {
			if err := s.Put(ctx, prefix+"unknown", strings.NewReader("hello"), -1); err != nil {
				t.Fatal(err)
			}
			if got := read(t, prefix+"unknown"); string(got) != "hello" {
				t.Fatalf("got %q", got)
			}
		}},
		{"overwrite", func(t *testing.T) {
			for _, v := range []string{"one", "two"} {
				if err := s.Put(ctx, prefix+"ow", strings.NewReader(v), int64(len(v))); err != nil {
					t.Fatal(err)
				}
			}
			if got := read(t, prefix+"ow"); string(got) != "two" {
				t.Fatalf("got %q", got)
			}
		}},
		{"missing is ErrNotFound", func(t *testing.T) {
			if _, _, err := s.Get(ctx, prefix+"nope"); !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("Get: %v", err)
			}
			if _, err := s.Stat(ctx, prefix+"nope"); !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("Stat: %v", err)
			}
			if err := s.Delete(ctx, prefix+"nope"); err != nil {
				t.Fatalf("Delete of missing key: %v", err)
			}
		}},
		{"failed put leaves nothing", func(t *testing.T) {
			if err := s.Put(ctx, prefix+"partial", &failingReader{n: 1 << 20}, -1); err == nil {
				t.Fatal("Put with a failing reader succeeded")
			}
			if _, err := s.Stat(ctx, prefix+"partial"); !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("partial object visible: %v", err)
			}
		}},
		{"delete", func(t *testing.T) {
			if err := s.Put(ctx, prefix+"del", strings.NewReader("x"), 1); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, prefix+"del"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Stat(ctx, prefix+"del"); !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("after delete: %v", err)
			}
		}},
		{"delete prefix", func(t *testing.T) {
			for _, k := range []string{"job1/index.html", "job1/css/a.css", "job2/index.html"} {
				if err := s.Put(ctx, prefix+"dp/"+k, strings.NewReader(k), int64(len(k))); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.DeletePrefix(ctx, prefix+"dp/job1/"); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"job1/index.html", "job1/css/a.css"} {
				if _, err := s.Stat(ctx, prefix+"dp/"+k); !errors.Is(err, blob.ErrNotFound) {
					t.Fatalf("%s survived DeletePrefix: %v", k, err)
				}
			}
			if got := read(t, prefix+"dp/job2/index.html"); string(got) != "job2/index.html" {
				t.Fatalf("sibling damaged: %q", got)
			}
		}},
		{"list", func(t *testing.T) {
			want := map[string]int64{}
			for _, k := range []string{"job1/in/index.html", "job1/out.pdf", "job10/in/a.css", "job2/in/index.html"} {
				v := strings.Repeat("x", len(k))
				if err := s.Put(ctx, prefix+"ls/"+k, strings.NewReader(v), int64(len(v))); err != nil {
					t.Fatal(err)
				}
				want[prefix+"ls/"+k] = int64(len(k))
			}
			list := func(p string) map[string]int64 {
				t.Helper()
				got := map[string]int64{}
				err := s.List(ctx, p, func(i blob.Info) error {
					if i.ModTime.IsZero() || time.Since(i.ModTime) > time.Hour {
						t.Errorf("%s: ModTime %v", i.Key, i.ModTime)
					}
					got[i.Key] = i.Size
					return nil
				})
				if err != nil {
					t.Fatalf("List(%s): %v", p, err)
				}
				return got
			}
			if got := list(prefix + "ls/"); !maps.Equal(got, want) {
				t.Fatalf("List(ls/) = %v, want %v", got, want)
			}
			// A prefix that is not a folder matches names, as DeletePrefix does.
			if got := list(prefix + "ls/job1"); len(got) != 3 {
				t.Fatalf("List(ls/job1) = %v, want job1/* and job10/*", got)
			}
			if got := list(prefix + "ls/job1/"); len(got) != 2 {
				t.Fatalf("List(ls/job1/) = %v, want job1/* only", got)
			}
			if got := list(prefix + "ls/none/"); len(got) != 0 {
				t.Fatalf("List of an empty prefix = %v", got)
			}
			stop := errors.New("stop")
			n := 0
			err := s.List(ctx, prefix+"ls/", func(blob.Info) error { n++; return stop })
			if !errors.Is(err, stop) || n != 1 {
				t.Fatalf("List stopped by fn: err %v after %d calls, want stop after 1", err, n)
			}
		}},
		{"concurrent puts", func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					v := strings.Repeat(string(rune('a'+i)), 1000)
					errs <- s.Put(ctx, prefix+"conc", strings.NewReader(v), int64(len(v)))
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			got := read(t, prefix+"conc")
			if len(got) != 1000 || strings.Count(string(got), string(got[0])) != 1000 {
				t.Fatal("interleaved writes")
			}
		}},
		{"ready", func(t *testing.T) {
			if err := s.Ready(ctx); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
	_ = s.DeletePrefix(ctx, prefix)
}
