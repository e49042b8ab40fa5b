package browser_test

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/docrender/docrender/worker/browser"
)

// A Chromium that dies and cannot start again (a broken image, a full disk)
// must not wedge the worker: jobs are handed back within a bounded wait,
// readiness fails at once instead of hanging, liveness fails after a while
// (so the orchestrator restarts the process), and the pool recovers by
// itself when Chromium can start again.
func TestBrowserThatCannotStart(t *testing.T) {
	var log bytes.Buffer
	p, err := startPool(t, browser.Config{}, &log)
	if err != nil {
		t.Fatal(err)
	}
	good, err := browser.FindChromium("")
	if err != nil {
		t.Fatal(err)
	}
	p.SetUnhealthyAfter(2 * time.Second)
	p.SetBinary("/bin/false")
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	touch := func(tab *browser.Tab) error { return browser.Evaluate(tab.Page(), `() => 1`, nil) }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The job in hand when the browser died, and the next one waiting for a
	// browser, both end with ErrBrowserGone (the queue hands them on).
	for i := range 2 {
		if err := p.Tab(ctx, touch); !errors.Is(err, browser.ErrBrowserGone) {
			t.Fatalf("job %d: %v, want ErrBrowserGone", i, err)
		}
	}
	// A job whose context ends first stops waiting then.
	sctx, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err = p.Tab(sctx, touch)
	scancel()
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, browser.ErrBrowserGone) {
		t.Fatalf("job with a short context: %v", err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	err = p.Ready(rctx)
	rcancel()
	if err == nil {
		t.Fatal("ready without a browser")
	}
	waitUntil(t, 20*time.Second, "liveness fails", func() bool { return p.Healthy() != nil })

	p.SetBinary(good)
	waitUntil(t, 60*time.Second, "the pool recovers", func() bool {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		return p.Ready(rctx) == nil && p.Healthy() == nil
	})
	if err := p.Tab(ctx, touch); err != nil {
		t.Fatalf("job after recovery: %v", err)
	}
}

func waitUntil(t *testing.T, limit time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
