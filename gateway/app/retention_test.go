package app

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
// those of requests in flight stay.
func TestSweepTempJobs(t *testing.T) {
	dir := t.TempDir()
	blobs, err := localblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, key := range []string{"jobs/old/in/index.html", "jobs/new/in/index.html", "files/keep"} {
		if err := blobs.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "blobs", "jobs", "old"), old, old); err != nil {
		t.Fatal(err)
	}
	a := &App{Config: config.Config{DataDir: dir}, blobs: blobs, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done, cancel := context.WithCancel(ctx)
	cancel() // one pass, then stop
	a.sweepTempJobs(done)
	for key, wantGone := range map[string]bool{"jobs/old/in/index.html": true, "jobs/new/in/index.html": false, "files/keep": false} {
		_, err := blobs.Stat(ctx, key)
		if gone := err != nil; gone != wantGone {
			t.Errorf("%s: gone %v, want %v (%v)", key, gone, wantGone, err)
		}
	}
}
