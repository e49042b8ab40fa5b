package browser

import (
	"context"
	"strings"
	"sync"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// settledPrefix starts the console marks the tracker listens for (Tab.Open,
// fence).
const settledPrefix = "docrender-settled-"

// tracker follows a tab's requests from its network events, and the marks
// written to its console.
type tracker struct {
	mu       sync.Mutex
	inflight map[proto.NetworkRequestID]struct{}
	started  int
	mark     string
	// changed is closed and replaced on every change.
	changed chan struct{}
}

// track starts following page's events until page's context ends.
func track(page *rod.Page) *tracker {
	t := &tracker{inflight: map[proto.NetworkRequestID]struct{}{}, changed: make(chan struct{})}
	wait := page.EachEvent(func(e *proto.NetworkRequestWillBeSent) {
		t.update(func() {
			if _, ok := t.inflight[e.RequestID]; !ok {
				t.started++
			}
			t.inflight[e.RequestID] = struct{}{}
		})
	}, func(e *proto.NetworkLoadingFinished) {
		t.update(func() { delete(t.inflight, e.RequestID) })
	}, func(e *proto.NetworkLoadingFailed) {
		t.update(func() { delete(t.inflight, e.RequestID) })
	}, func(e *proto.RuntimeConsoleAPICalled) {
		if len(e.Args) == 1 {
			if s := e.Args[0].Value.String(); strings.HasPrefix(s, settledPrefix) {
				t.update(func() { t.mark = s })
			}
		}
	})
	go wait()
	return t
}

func (t *tracker) update(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *tracker) reset() {
	t.update(func() { clear(t.inflight) })
}

func (t *tracker) startedCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started
}

// waitMark waits until the tracker has seen mark.
func (t *tracker) waitMark(ctx context.Context, mark string) error {
	return t.waitUntil(ctx, func() bool { return t.mark == mark })
}

// waitIdle waits until the tracker has seen mark and no request is in flight.
func (t *tracker) waitIdle(ctx context.Context, mark string) error {
	return t.waitUntil(ctx, func() bool { return t.mark == mark && len(t.inflight) == 0 })
}

// waitUntil waits until done, called with t.mu held, is true.
func (t *tracker) waitUntil(ctx context.Context, done func() bool) error {
	for {
		t.mu.Lock()
		ok, changed := done(), t.changed
		t.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}
