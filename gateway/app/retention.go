package app

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/usage"
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
	if err := ex.SetExpiryRule(ctx, blob.FilesPrefix, days); err != nil {
		return err
	}
	if err := ex.SetExpiryRule(ctx, blob.JobsPrefix, 1); err != nil {
		return err
	}
	if err := ex.SetExpiryRule(ctx, blob.BatchesPrefix, days+1); err != nil {
		return err
	}
	log.Info("bucket lifecycle rules installed", "files_days", days, "jobs_days", 1, "batches_days", days+1)
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

// startSweeper deletes expired files every minute, gives back the
// conversions of requests whose gateway died mid-request, deletes the blobs
// of deleted templates after their grace, and on local disk
// deletes the temporary files of jobs abandoned more than an hour ago, until Close.
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
	a.sweepWG.Add(1)
	go func() {
		defer a.sweepWG.Done()
		// Deleted templates' blobs, once renders queued before the delete are over.
		a.Server.Templates().RunSweeper(ctx, a.sweepInterval(), func(err error) {
			a.Log.Warn("sweeping deleted templates failed", "err", err)
		})
	}()
	a.sweepWG.Add(1)
	go func() {
		defer a.sweepWG.Done()
		usage.New(a.state).RunSweeper(ctx, a.sweepInterval(), func(err error) {
			a.Log.Warn("sweeping pending reservations failed", "err", err)
		})
	}()
	if a.Config.S3Endpoint != "" {
		return // the bucket's lifecycle rules for jobs and batches do this on S3
	}
	a.sweepWG.Add(1)
	go func() {
		defer a.sweepWG.Done()
		a.sweepTempJobs(ctx)
	}()
}

// sweepTempJobs removes the temporary files of jobs whose newest file is
// older than tempJobAge, and of batches whose newest file is older than any
// batch lives (a batch that never ended: its record is gone by then), every
// sweep interval until ctx ends.
func (a *App) sweepTempJobs(ctx context.Context) {
	t := time.NewTicker(a.sweepInterval())
	defer t.Stop()
	batchAge := time.Duration(lifecycleDays(a.Config.Plans)+1) * 24 * time.Hour
	for {
		now := time.Now()
		if err := sweepStale(ctx, a.blobs, blob.JobsPrefix, now.Add(-tempJobAge)); err != nil && ctx.Err() == nil {
			a.Log.Warn("sweep temporary job files", "err", err)
		}
		if err := sweepStale(ctx, a.blobs, blob.BatchesPrefix, now.Add(-batchAge)); err != nil && ctx.Err() == nil {
			a.Log.Warn("sweep temporary batch files", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepStale deletes every folder under prefix (a job's blob.JobDir, a
// batch's blob.BatchDir) with no file newer than cutoff: one still being
// written keeps its folder.
func sweepStale(ctx context.Context, blobs blob.Store, prefix string, cutoff time.Time) error {
	newest := map[string]time.Time{}
	err := blobs.List(ctx, prefix, func(i blob.Info) error {
		id, _, ok := strings.Cut(strings.TrimPrefix(i.Key, prefix), "/")
		if ok && i.ModTime.After(newest[id]) {
			newest[id] = i.ModTime
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for id, t := range newest {
		if t.Before(cutoff) {
			if err := blobs.DeletePrefix(ctx, prefix+id+"/"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
