package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrCancelled is the cause of a job context ended by a cancel notice: the
// client that waited for the job went away, so nobody will read its result.
var ErrCancelled = errors.New("queue: job cancelled by its client")

// earlyNoticeTTL is how long a worker remembers a cancel notice for a job it
// does not hold. A notice can overtake the job (the job is fetched right
// after the gateway gave up); a job that starts later than this finds its
// inputs deleted anyway and is answered as gone.
const earlyNoticeTTL = time.Minute

// CancelJob tells whichever worker holds the job to stop it. It is a core
// NATS message (fire and forget, every worker hears it): a notice lost to a
// disconnection only costs the render it would have saved.
func (c *Conn) CancelJob(jobID string) error {
	if err := c.nc.Publish(c.n.CancelPrefix+jobID, nil); err != nil {
		return fmt.Errorf("queue: cancel %s: %w", jobID, err)
	}
	return nil
}

// cancels tracks the jobs this process runs, so a cancel notice can reach
// the job's context, and notices that arrived before their job.
type cancels struct {
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	early   map[string]time.Time
}

func newCancels() *cancels {
	return &cancels{running: map[string]context.CancelCauseFunc{}, early: map[string]time.Time{}}
}

// start registers a job about to run. It returns false when a notice for
// it has already arrived: the job must not run.
func (cs *cancels) start(jobID string, cancel context.CancelCauseFunc) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if _, ok := cs.early[jobID]; ok {
		delete(cs.early, jobID)
		return false
	}
	cs.running[jobID] = cancel
	return true
}

// done forgets a finished job.
func (cs *cancels) done(jobID string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.running, jobID)
}

// notice cancels the job if it runs here, else remembers the notice for a
// while. It reports whether a running job was cancelled.
func (cs *cancels) notice(jobID string, now time.Time) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cancel, ok := cs.running[jobID]; ok {
		cancel(ErrCancelled)
		return true
	}
	for id, at := range cs.early {
		if now.Sub(at) > earlyNoticeTTL {
			delete(cs.early, id)
		}
	}
	cs.early[jobID] = now
	return false
}

// listenForCancels subscribes to every job's cancel subject while the
// process consumes jobs; notices for other workers' jobs are remembered
// briefly and then dropped.
func (c *Conn) listenForCancels() (*nats.Subscription, error) {
	sub, err := c.nc.Subscribe(c.n.CancelPrefix+"*", func(m *nats.Msg) {
		id := strings.TrimPrefix(m.Subject, c.n.CancelPrefix)
		if c.cancels.notice(id, time.Now()) {
			c.log.Info("cancel notice received", "job_id", id)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("queue: cancel subscription: %w", err)
	}
	return sub, nil
}

// Cancelled reports whether ctx (a job's context) was ended by a cancel notice.
func Cancelled(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrCancelled)
}
