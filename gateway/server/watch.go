package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/docrender/docrender/pkg/batch"
)

// One watcher per batch (issue 12). Every progress stream of a batch open
// on this gateway, and every synchronous batch request waiting for it,
// shares one read of the state store per interval: with one read per
// stream, 300 streams on one batch cost the state store about 1,300
// commands a second. Other gateways run their own watcher: progress lives
// in the state store, so none needs another's.

// progressUpdate is one reading of a batch's progress, as a watcher fans it out.
type progressUpdate struct {
	Progress batch.Progress
	// Err is set when the state store failed sseMaxFailures times in a
	// row: the watcher has stopped, and nothing follows.
	Err error
}

// last reports whether no update follows this one.
func (u progressUpdate) last() bool { return u.Err != nil || u.Progress.Terminal() }

// progressReader reads a batch's progress: the tracker's Progress.
type progressReader func(context.Context, *batch.Record) (batch.Progress, error)

// progressHub runs the watchers of one gateway, keyed by batch ID.
type progressHub struct {
	read     progressReader
	interval time.Duration
	log      *slog.Logger

	mu       sync.Mutex
	watchers map[string]*watcher
}

// watcher reads one batch's progress every interval for its subscribers.
type watcher struct {
	id     string
	cancel context.CancelFunc
	subs   map[*progressSub]struct{}
	// latest is given at once to a subscriber that joins later, so a
	// stream's first event does not wait for the next read.
	latest *progressUpdate
}

// progressSub is one subscriber of a watcher.
type progressSub struct {
	// C holds the latest update not yet taken: a new one replaces it, so
	// a slow subscriber skips readings instead of holding up the watcher.
	C   <-chan progressUpdate
	c   chan progressUpdate
	hub *progressHub
	w   *watcher
}

func newProgressHub(read progressReader, interval time.Duration, log *slog.Logger) *progressHub {
	return &progressHub{read: read, interval: interval, log: log, watchers: map[string]*watcher{}}
}

// subscribe follows rec's progress, starting its watcher if none runs.
// The caller must close the subscription.
func (h *progressHub) subscribe(rec *batch.Record) *progressSub {
	c := make(chan progressUpdate, 1)
	s := &progressSub{C: c, c: c, hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.watchers[rec.ID]
	if w == nil {
		// The watcher belongs to no one request: the last subscriber
		// leaving cancels it.
		ctx, cancel := context.WithCancel(context.Background())
		w = &watcher{id: rec.ID, cancel: cancel, subs: map[*progressSub]struct{}{}}
		h.watchers[rec.ID] = w
		go h.run(ctx, w, rec)
	}
	w.subs[s] = struct{}{}
	s.w = w
	if w.latest != nil {
		c <- *w.latest
	}
	return s
}

// close ends the subscription; the last subscriber leaving stops the watcher.
func (s *progressSub) close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(s.w.subs, s)
	if len(s.w.subs) == 0 && h.watchers[s.w.id] == s.w {
		delete(h.watchers, s.w.id)
		s.w.cancel()
	}
}

// run reads the batch's progress every interval and hands each reading
// to every subscriber, until the batch ends, the state store keeps
// failing, or no subscriber is left.
func (h *progressHub) run(ctx context.Context, w *watcher, rec *batch.Record) {
	defer w.cancel()
	t := time.NewTicker(h.interval)
	defer t.Stop()
	failures := 0
	for {
		p, err := h.read(ctx, rec)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			failures = 0
			if h.publish(w, progressUpdate{Progress: p}) {
				return
			}
		default:
			failures++
			h.log.Warn("reading batch progress failed", "batch_id", rec.ID, "err", err, "failures", failures)
			if failures >= sseMaxFailures {
				h.publish(w, progressUpdate{Err: fmt.Errorf("reading the progress of batch %s: %w", rec.ID, err)})
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publish hands u to every subscriber without waiting for any, and
// reports whether it was the last update. A watcher that published its
// last leaves the hub at once, so a later subscriber starts a new one
// instead of waiting on a watcher that has stopped.
func (h *progressHub) publish(w *watcher, u progressUpdate) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.latest = &u
	for s := range w.subs {
		// Only publish and subscribe send, both under h.mu: once the
		// stale update is taken out, the send cannot block.
		select {
		case <-s.c:
		default:
		}
		s.c <- u
	}
	if u.last() && h.watchers[w.id] == w {
		delete(h.watchers, w.id)
	}
	return u.last()
}

// wait returns rec's terminal progress, or ctx's error. When the state
// store keeps failing, a stream tells its client to poll instead; a
// waiting request has nobody to tell, so it waits one interval and
// follows a new watcher.
func (h *progressHub) wait(ctx context.Context, rec *batch.Record) (batch.Progress, error) {
	for {
		u, err := h.lastUpdate(ctx, rec)
		if err != nil {
			return batch.Progress{}, err
		}
		if u.Err == nil {
			return u.Progress, nil
		}
		select {
		case <-ctx.Done():
			return batch.Progress{}, ctx.Err()
		case <-time.After(h.interval):
		}
	}
}

// lastUpdate follows rec's watcher until its last update, or ctx ends.
func (h *progressHub) lastUpdate(ctx context.Context, rec *batch.Record) (progressUpdate, error) {
	s := h.subscribe(rec)
	defer s.close()
	for {
		select {
		case <-ctx.Done():
			return progressUpdate{}, ctx.Err()
		case u := <-s.C:
			if u.last() {
				return u, nil
			}
		}
	}
}

// watching is the number of batches being watched (tests).
func (h *progressHub) watching() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers)
}
