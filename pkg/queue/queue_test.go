package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrender/docrender/proto/jobspb"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// embedded connects to a fresh in-process NATS with the stream set up.
func embedded(t testing.TB, maxQueue int) *Conn {
	t.Helper()
	srv, err := StartEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	c, err := Connect(context.Background(), "", srv, "qtest", "test", quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Setup(context.Background(), Streams{MaxJobs: maxQueue}); err != nil {
		t.Fatal(err)
	}
	return c
}

func renderJob(id string) *jobspb.Job {
	return &jobspb.Job{Id: id, Kind: &jobspb.Job_Render{Render: &jobspb.RenderJob{}}}
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// machineNATS connects to the machine's nats-server (2.9 here, the oldest
// version docrender supports) with a namespace of the test's own, or skips.
func machineNATS(t testing.TB, maxQueue int) *Conn {
	t.Helper()
	if c, err := net.DialTimeout("tcp", "127.0.0.1:4222", time.Second); err != nil {
		t.Skip("no NATS on 127.0.0.1:4222 (scripts/setup --test starts it)")
	} else {
		c.Close()
	}
	ns := fmt.Sprintf("qt%d", time.Now().UnixNano())
	c, err := Connect(context.Background(), "nats://127.0.0.1:4222", nil, ns, "test", quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.js.DeleteStream(ctx, c.n.Stream)
		_ = c.js.DeleteStream(ctx, c.n.WebhookStream)
		c.Close()
	})
	if err := c.Setup(context.Background(), Streams{MaxJobs: maxQueue}); err != nil {
		t.Fatal(err)
	}
	return c
}

// servers are the NATS servers behaviour that depends on the server is
// checked on: the embedded one and the oldest supported one.
var servers = []struct {
	name    string
	connect func(testing.TB, int) *Conn
}{
	{"embedded", embedded},
	{"nats-server 2.9", machineNATS},
}

// The stream's MaxMsgs with DiscardNew is the deployment's bound: the
// publish past it is refused with ErrQueueFull, which the gateway turns
// into 429 with Retry-After. The refusal's wording comes from the server,
// so both the embedded server and the oldest supported one are asked.
func TestQueueFull(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			c := srv.connect(t, 2)
			ctx := context.Background()
			for _, id := range []string{"a", "b"} {
				if err := c.Publish(ctx, renderJob(id)); err != nil {
					t.Fatalf("publish %s: %v", id, err)
				}
			}
			_, err := c.Submit(ctx, renderJob("c"))
			if !errors.Is(err, ErrQueueFull) {
				t.Fatalf("third job: %v, want ErrQueueFull", err)
			}
			if n, _ := c.Depth(ctx); n != 2 {
				t.Fatalf("depth %d, want 2", n)
			}
		})
	}
}

// Without a connection a submit fails at once instead of waiting for an
// acknowledgement that cannot come.
func TestSubmitWithoutNATSFailsFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := Connect(context.Background(), "nats://"+addr, nil, "qtest", "test", quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		name string
		call func() error
	}{
		{"submit", func() error { _, err := c.Submit(context.Background(), renderJob("x")); return err }},
		{"publish", func() error { return c.Publish(context.Background(), renderJob("y")) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.call()
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err %v, want ErrUnavailable", err)
			}
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Fatalf("took %s", d)
			}
		})
	}
}

// consume runs Consume with h until the test ends.
func consume(t testing.TB, c *Conn, slots int, h Handler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Consume(ctx, slots, h, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// A cancel notice ends the running job's context with ErrCancelled; the job
// is acknowledged (not retried) and no result is sent.
func TestCancelNoticeStopsRunningJob(t *testing.T) {
	c := embedded(t, 100)
	var started, stopped atomic.Bool
	var cancelled atomic.Bool
	consume(t, c, 1, func(ctx context.Context, job *jobspb.Job, d Delivery) (*jobspb.Result, error) {
		started.Store(true)
		select {
		case <-ctx.Done():
			cancelled.Store(Cancelled(ctx))
			stopped.Store(true)
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return &jobspb.Result{}, nil
		}
	})
	p, err := c.Submit(context.Background(), renderJob("long"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Cancel()
	waitFor(t, "the job to start", started.Load)
	if err := c.CancelJob("long"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job to stop", stopped.Load)
	if !cancelled.Load() {
		t.Fatal("context ended without cause ErrCancelled")
	}
	waitFor(t, "the job to be acknowledged", func() bool { n, _ := c.Depth(context.Background()); return n == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if res, err := p.Wait(ctx); err == nil {
		t.Fatalf("a cancelled job answered %v", res)
	}
}

// A notice that overtakes its job (still queued) keeps the job from running.
func TestCancelNoticeBeforeJobStarts(t *testing.T) {
	c := embedded(t, 100)
	release := make(chan struct{})
	var ran atomic.Int32
	consume(t, c, 1, func(ctx context.Context, job *jobspb.Job, d Delivery) (*jobspb.Result, error) {
		ran.Add(1)
		if job.Id == "first" {
			<-release
		}
		return &jobspb.Result{}, nil
	})
	ctx := context.Background()
	if err := c.Publish(ctx, renderJob("first")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first job to start", func() bool { return ran.Load() == 1 })
	if err := c.Publish(ctx, renderJob("queued")); err != nil {
		t.Fatal(err)
	}
	if err := c.CancelJob("queued"); err != nil {
		t.Fatal(err)
	}
	// The notice is heard asynchronously: let it land before the slot frees.
	waitFor(t, "the notice to be remembered", func() bool {
		c.cancels.mu.Lock()
		defer c.cancels.mu.Unlock()
		_, ok := c.cancels.early["queued"]
		return ok
	})
	close(release)
	waitFor(t, "the queue to empty", func() bool { n, _ := c.Depth(ctx); return n == 0 })
	if n := ran.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want once (the cancelled job must not run)", n)
	}
}

func TestRetryDelayGrows(t *testing.T) {
	tests := []struct {
		attempt int
		want    time.Duration
	}{
		{0, 500 * time.Millisecond},
		{1, 500 * time.Millisecond},
		{2, 2 * time.Second},
		{3, 5 * time.Second},
		{9, 5 * time.Second},
	}
	for _, tc := range tests {
		if got := RetryDelay(tc.attempt); got != tc.want {
			t.Errorf("RetryDelay(%d) = %s, want %s", tc.attempt, got, tc.want)
		}
	}
}

// Early notices are forgotten after a while, so notices meant for other
// workers' jobs do not pile up.
func TestEarlyNoticesExpire(t *testing.T) {
	cs := newCancels()
	t0 := time.Now()
	cs.notice("old", t0)
	cs.notice("new", t0.Add(earlyNoticeTTL+time.Second))
	if _, ok := cs.early["old"]; ok {
		t.Fatal("an expired notice is still remembered")
	}
	if cs.start("new", func(error) {}) {
		t.Fatal("a job with a remembered notice may start")
	}
	if !cs.start("other", func(error) {}) {
		t.Fatal("a job without a notice may not start")
	}
}

// A result offered before anyone listens (the waiting gateway is still
// re-subscribing after a NATS restart) is offered again until taken.
func TestResultReachesLateSubscriber(t *testing.T) {
	c := embedded(t, 10)
	job := &jobspb.Job{Id: "late", ReplySubject: c.results.subject("late")}
	sent := make(chan error, 1)
	go func() { sent <- c.reply(job, &jobspb.Result{OutputKey: "out"}) }()
	time.Sleep(600 * time.Millisecond)
	ch, err := c.results.add("late")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := (&Pending{id: "late", r: c.results, ch: ch}).Wait(ctx)
	if err != nil || res.OutputKey != "out" {
		t.Fatalf("result %v, %v", res, err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("reply: %v", err)
	}
}

// One gateway holds many sync requests: each waiter costs bytes, not the
// pending buffer of a subscription of its own (~600 KB before).
func TestWaitersAreSmall(t *testing.T) {
	c := embedded(t, 10)
	const n = 20000
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		if _, err := c.results.add("job-" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d bytes of heap per waiting request", per)
	if per > 1024 {
		t.Fatalf("%d bytes per waiter, want well under a kilobyte", per)
	}
	for i := range n {
		c.results.remove("job-" + strconv.Itoa(i))
	}
}

// A result whose waiter left is refused at once, not offered for the whole
// result window; a result whose waiter is there arrives once.
func TestResultOfALeftWaiterIsRefused(t *testing.T) {
	c := embedded(t, 10)
	job := &jobspb.Job{Id: "gone", ReplySubject: c.results.subject("gone")}
	if _, err := c.results.add("other"); err != nil { // the subscription exists
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.reply(job, &jobspb.Result{}); !errors.Is(err, errWaiterGone) {
		t.Fatalf("reply to a left waiter: %v", err)
	}
	if d := time.Since(start); d > resultAckTimeout {
		t.Fatalf("the refusal took %s", d)
	}
	ch, err := c.results.add("here")
	if err != nil {
		t.Fatal(err)
	}
	p := &Pending{id: "here", r: c.results, ch: ch}
	if err := c.reply(&jobspb.Job{Id: "here", ReplySubject: c.results.subject("here")}, &jobspb.Result{OutputKey: "k"}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(context.Background())
	if err != nil || res.OutputKey != "k" {
		t.Fatalf("Wait = %v, %v", res, err)
	}
}
