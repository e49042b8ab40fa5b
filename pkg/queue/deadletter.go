package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/logging"
	"github.com/docrender/docrender/proto/jobspb"
)

// A job whose worker dies (or hangs without heartbeats) on every one of its
// MaxDeliver tries is never handled to an end: no handler returns for it.
// JetStream stops delivering it and keeps it in the work-queue stream, and
// says so in a max-deliveries advisory. Each consuming process listens for
// those (one of them, through a queue group, takes each), settles the job
// as a failure through the DeadHandler, answers its waiting client, and
// deletes it from the stream: a job that kills its workers ends as a
// failure, never comes back, and never leaves its batch waiting.

// advisory is the part of JetStream's max-deliveries advisory we read.
type advisory struct {
	Stream    string `json:"stream"`
	Consumer  string `json:"consumer"`
	StreamSeq uint64 `json:"stream_seq"`
}

// settleTimeout bounds settling one dead job (state store writes, the reply).
const settleTimeout = 30 * time.Second

// deadSubject is where the server announces jobs that used up their tries,
// for every job consumer (the "now" lane and each account's batch lane).
func (c *Conn) deadSubject() string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + c.n.Stream + ".*"
}

// settleDeadJobs subscribes to the advisories until the returned function
// is called.
func (c *Conn) settleDeadJobs(ctx context.Context, dead DeadHandler) (func(), error) {
	if dead == nil {
		return func() {}, nil
	}
	sub, err := c.nc.QueueSubscribe(c.deadSubject(), c.n.Consumer+"-dead", func(m *nats.Msg) {
		var a advisory
		if err := json.Unmarshal(m.Data, &a); err != nil || a.StreamSeq == 0 {
			c.log.Warn("unreadable max-deliveries advisory", "err", err)
			return
		}
		go c.settleDead(context.WithoutCancel(ctx), a.StreamSeq, dead)
	})
	if err != nil {
		return nil, fmt.Errorf("queue: dead-job advisories: %w", err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// settleDead settles the job at stream sequence seq and deletes it. A job
// already gone (another process settled it) is nothing to do; a job that
// cannot be settled now (the state store down) stays for an operator, and
// the failure is logged.
func (c *Conn) settleDead(ctx context.Context, seq uint64, dead DeadHandler) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	s, err := c.js.Stream(ctx, c.n.Stream)
	if err != nil {
		c.log.Error("dead job: stream", "seq", seq, "err", err)
		return
	}
	raw, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return
	}
	if err != nil {
		c.log.Error("dead job: read", "seq", seq, "err", err)
		return
	}
	job := &jobspb.Job{}
	if err := proto.Unmarshal(raw.Data, job); err != nil {
		c.log.Error("dead job: undecodable, deleting", "seq", seq, "err", err)
		_ = s.DeleteMsg(ctx, seq)
		return
	}
	batchID, _ := job.BatchRef()
	log := c.log.With("job_id", job.Id, "request_id", job.RequestId, "batch_id", batchID, "seq", seq)
	log.Error("job used up its tries without an answer (its worker died or hung every time); settling it as failed")
	res := c.settleContained(logging.With(ctx, "job_id", job.Id, "batch_id", batchID), dead, job)
	if res == nil {
		log.Error("dead job not settled; it stays in the stream")
		return
	}
	if err := s.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		log.Warn("dead job: delete", "err", err)
	}
	res.JobId = job.Id
	res.BatchId, res.BatchIndex = job.BatchRef()
	if err := c.reply(job, res); err != nil {
		log.Info("dead job's client is gone", "err", err)
	}
}

// settleContained runs dead, recovering a panic (nil: not settled).
func (c *Conn) settleContained(ctx context.Context, dead DeadHandler, job *jobspb.Job) (res *jobspb.Result) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("dead job: settling panicked", "job_id", job.Id, "panic", r)
			res = nil
		}
	}()
	return dead(ctx, job)
}
