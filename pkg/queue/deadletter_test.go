package queue

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrender/docrender/proto/jobspb"
)

// A handler that panics ends its job with a failure, once: the job is not
// retried (it would panic again) and the process goes on taking jobs.
func TestPanickingHandlerFailsItsJobOnce(t *testing.T) {
	c := embedded(t, 100)
	var calls atomic.Int32
	consume(t, c, 1, func(ctx context.Context, job *jobspb.Job, d Delivery) (*jobspb.Result, error) {
		calls.Add(1)
		if job.Id == "boom" {
			ids := []string{}
			_ = ids[len(job.Id)] // a runtime panic: index out of range
		}
		return &jobspb.Result{OutputKey: "ok"}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		id       string
		wantKind jobspb.ErrorKind
	}{
		{"boom", jobspb.ErrorKind_ERROR_KIND_INTERNAL},
		{"after", jobspb.ErrorKind_ERROR_KIND_NONE},
	} {
		p, err := c.Submit(ctx, renderJob(tc.id))
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Wait(ctx)
		if err != nil {
			t.Fatalf("%s: %v", tc.id, err)
		}
		if res.ErrorKind != tc.wantKind {
			t.Fatalf("%s: result %v, want kind %v", tc.id, res, tc.wantKind)
		}
	}
	waitFor(t, "the queue to empty", func() bool { n, _ := c.Depth(ctx); return n == 0 })
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2 (the panicking job once)", n)
	}
}

// dyingWorker fetches jobs and never answers, as a worker process that
// crashes on them would; it returns how many deliveries it saw.
func dyingWorker(t *testing.T, c *Conn) *atomic.Int32 {
	t.Helper()
	var seen atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cons, err := c.js.Consumer(ctx, c.n.Stream, c.nowConsumer(jobspb.KindChromium))
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
			if err != nil {
				continue
			}
			for range msgs.Messages() {
				seen.Add(1)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &seen
}

// A job whose worker dies on every delivery is settled once JetStream gives
// up on it: the dead handler records the failure, the waiting client hears
// it, and the job leaves the stream (a work-queue stream would keep it).
// The deliveries straddle a restart of the NATS server on the same store,
// as when the process that embeds it is the one that crashes.
func TestJobThatKillsItsWorkersIsSettled(t *testing.T) {
	dir := t.TempDir()
	start := func() (*server.Server, *Conn) {
		srv, err := StartEmbedded(dir)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Connect(context.Background(), "", srv, "qtest", "test", quietLog())
		if err != nil {
			t.Fatal(err)
		}
		c.ackWait = 500 * time.Millisecond
		if err := c.Setup(context.Background(), Streams{MaxJobs: 100}); err != nil {
			t.Fatal(err)
		}
		return srv, c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	srv, c := start()
	if err := c.Publish(ctx, renderJob("poison")); err != nil {
		t.Fatal(err)
	}
	seen := dyingWorker(t, c)
	waitFor(t, "two deliveries", func() bool { return seen.Load() >= 2 })
	c.Close()
	srv.Shutdown()
	srv.WaitForShutdown()

	srv, c = start()
	t.Cleanup(func() { c.Close(); srv.Shutdown() })
	var settled atomic.Int32
	stop, err := c.settleDeadJobs(ctx, func(ctx context.Context, job *jobspb.Job) *jobspb.Result {
		if job.Id != "poison" {
			t.Errorf("settled %q", job.Id)
		}
		settled.Add(1)
		return &jobspb.Result{ErrorKind: jobspb.ErrorKind_ERROR_KIND_INTERNAL, ErrorMessage: "dead"}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	seen2 := dyingWorker(t, c)
	waitFor(t, "the job to be settled", func() bool { return settled.Load() == 1 })
	waitFor(t, "the job to leave the stream", func() bool { n, _ := c.Depth(ctx); return n == 0 })
	if total := seen.Load() + seen2.Load(); total != MaxDeliver {
		t.Fatalf("the job was delivered %d times, want %d", total, MaxDeliver)
	}
	time.Sleep(3 * c.ackWait)
	if n := settled.Load(); n != 1 {
		t.Fatalf("settled %d times, want once", n)
	}
}

// A dead job's waiting client gets the dead handler's answer, on the
// embedded server and on the oldest supported one (2.9 on this machine).
func TestDeadJobAnswersItsClient(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			c := srv.connect(t, 100)
			c.ackWait = 300 * time.Millisecond
			if err := c.Setup(context.Background(), Streams{MaxJobs: 100}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			stop, err := c.settleDeadJobs(ctx, func(context.Context, *jobspb.Job) *jobspb.Result {
				return &jobspb.Result{ErrorKind: jobspb.ErrorKind_ERROR_KIND_INTERNAL, ErrorMessage: "worker died every time"}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			p, err := c.Submit(ctx, renderJob("sync"))
			if err != nil {
				t.Fatal(err)
			}
			dyingWorker(t, c)
			res, err := p.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.ErrorMessage != "worker died every time" || res.JobId != "sync" {
				t.Fatalf("result %v", res)
			}
			waitFor(t, "the job to leave the stream", func() bool { n, _ := c.Depth(ctx); return n == 0 })
		})
	}
}
