package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/pkg/config"
)

func TestLifecycleDays(t *testing.T) {
	plan := func(d time.Duration) config.Plan { return config.Plan{Retention: d} }
	tests := []struct {
		name  string
		plans map[string]config.Plan
		want  int
	}{
		{"defaults: enterprise 30 days", map[string]config.Plan{"hobby": plan(24 * time.Hour), "pro": plan(168 * time.Hour), "enterprise": plan(720 * time.Hour)}, 30},
		{"rounded up", map[string]config.Plan{"hobby": plan(25 * time.Hour)}, 2},
		{"seconds still a day", map[string]config.Plan{"hobby": plan(3 * time.Second)}, 1},
		{"no plans", nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := lifecycleDays(tc.plans); got != tc.want {
				t.Fatalf("lifecycleDays = %d, want %d", got, tc.want)
			}
		})
	}
}

// Temporary job files of a process that died mid-request go after an hour;
// those of requests in flight stay, also when an old input sits beside a
// result being written now.
func TestSweepTempJobs(t *testing.T) {
	dir := t.TempDir()
	blobs, err := localblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := []string{"jobs/old/in/index.html", "jobs/old/in/a.css", "jobs/new/in/index.html",
		"jobs/busy/in/index.html", "jobs/busy/out.pdf", "files/keep", "batches/b/in/0/index.html"}
	for _, key := range keys {
		if err := blobs.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, key := range []string{"jobs/old/in/index.html", "jobs/old/in/a.css", "jobs/busy/in/index.html", "files/keep", "batches/b/in/0/index.html"} {
		if err := os.Chtimes(filepath.Join(dir, "blobs", filepath.FromSlash(key)), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := sweepStale(ctx, blobs, blob.JobsPrefix, time.Now().Add(-tempJobAge)); err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{"jobs/old/in/index.html": true, "jobs/old/in/a.css": true}
	for _, key := range keys {
		_, err := blobs.Stat(ctx, key)
		if got := err != nil; got != gone[key] {
			t.Errorf("%s: gone %v, want %v (%v)", key, got, gone[key], err)
		}
	}
}

// A batch that never ended leaves its folder until it is older than any
// batch lives; one still running keeps it.
func TestSweepStaleBatches(t *testing.T) {
	dir := t.TempDir()
	blobs, err := localblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := []string{"batches/dead/in/0/index.html", "batches/dead/pdf/0.pdf", "batches/live/in/0/index.html", "files/keep"}
	for _, key := range keys {
		if err := blobs.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-40 * 24 * time.Hour)
	for _, key := range []string{"batches/dead/in/0/index.html", "batches/dead/pdf/0.pdf", "files/keep"} {
		if err := os.Chtimes(filepath.Join(dir, "blobs", filepath.FromSlash(key)), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := sweepStale(ctx, blobs, blob.BatchesPrefix, time.Now().Add(-31*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		_, err := blobs.Stat(ctx, key)
		if got, want := err != nil, strings.HasPrefix(key, "batches/dead/"); got != want {
			t.Errorf("%s: gone %v, want %v (%v)", key, got, want, err)
		}
	}
}
