package app

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/files"
)

// Retention of stored files (spec §8, DESIGN §2): expired files answer 404 at
// once (the index checks expiry on every read); the sweeper deletes their
// bytes every DOCRENDER_SWEEP_INTERVAL (a minute), and on S3 a bucket lifecycle rule is the backstop for
// whatever the sweeper misses.
const (
	// tempJobAge is when a job's temporary files (jobs/<id>/) count as
	// abandoned: requests delete their own at the end, so only those of a
	// process that died mid-request are left. Far above any render timeout.
	tempJobAge = time.Hour
)

// sweepInterval is DOCRENDER_SWEEP_INTERVAL, a minute when unset.
func (a *App) sweepInterval() time.Duration {
	if a.Config.SweepInterval > 0 {
		return a.Config.SweepInterval
	}
	return time.Minute
}

// expirer is the part of s3blob.Store that installs lifecycle rules.
type expirer interface {
	SetExpiryRule(ctx context.Context, prefix string, days int) error
}

// installExpiryRules makes an S3 bucket expire stored files after the
// longest plan retention (whole days, rounded up: the rule is a backstop, the
// sweeper and the index enforce the exact time) and temporary job files
// after a day. Other blob stores have no such rules; it does nothing there.
func installExpiryRules(ctx context.Context, blobs blob.Store, cfg config.Config, log *slog.Logger) error {
	ex, ok := blobs.(expirer)
	if !ok {
		return nil
	}
	days := lifecycleDays(cfg.Plans)
	if err := ex.SetExpiryRule(ctx, "files/", days); err != nil {
		return err
	}
	if err := ex.SetExpiryRule(ctx, "jobs/", 1); err != nil {
		return err
	}
	log.Info("bucket lifecycle rules installed", "files_days", days, "jobs_days", 1)
	return nil
}

// lifecycleDays is the longest plan retention in days, rounded up, at least 1.
func lifecycleDays(plans map[string]config.Plan) int {
	var longest time.Duration
	for _, p := range plans {
		longest = max(longest, p.Retention)
	}
	return max(1, int(math.Ceil(longest.Hours()/24)))
}

// startSweeper deletes expired files every minute, and on local disk the
// temporary files of jobs abandoned more than an hour ago, until Close.
func (a *App) startSweeper(index *files.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	a.stopSweep = cancel
	a.sweepWG.Add(1)
	go func() {
		defer a.sweepWG.Done()
		log := a.Log.With("component", "sweeper")
		index.RunSweeper(ctx, a.sweepInterval(), func(err error) {
			log.Warn("sweep failed", "err", err)
		})
	}()
	if a.Config.S3Endpoint != "" {
		return // the bucket's "jobs/" lifecycle rule does this on S3
	}
	a.sweepWG.Add(1)
	go func() {
		defer a.sweepWG.Done()
		a.sweepTempJobs(ctx)
	}()
}

// sweepTempJobs removes jobs/<id>/ prefixes older than tempJobAge. The blob
// interface cannot list keys, so this reads the local store's directory
// (localblob maps keys to paths under <data dir>/blobs one to one).
func (a *App) sweepTempJobs(ctx context.Context) {
	dir := filepath.Join(a.Config.DataDir, "blobs", "jobs")
	t := time.NewTicker(a.sweepInterval())
	defer t.Stop()
	for {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			a.Log.Warn("list temporary job files", "err", err)
		}
		for _, e := range entries {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > tempJobAge {
				if err := a.blobs.DeletePrefix(ctx, "jobs/"+e.Name()+"/"); err != nil {
					a.Log.Warn("delete temporary job files", "job", e.Name(), "err", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
