// Package queue carries render and merge jobs from gateways to workers over
// NATS JetStream, and results back over core NATS. Jobs sit in a work-queue
// stream with a shared durable pull consumer: each worker pulls only when it
// has a free slot, so load spreads over every worker, and a job whose worker
// dies is redelivered after AckWait.
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/logging"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
)

// Names of the default namespace on the NATS side; operators see them in
// nats CLI output. Another namespace (DOCRENDER_QUEUE_NAMESPACE) gives every
// name its own prefix, so several deployments or test runs share one NATS.
const (
	Stream        = "DOCRENDER_JOBS"
	Consumer      = "docrender-workers"
	SubjectPrefix = "docrender.jobs."
	ResultPrefix  = "docrender.results."
	CancelPrefix  = "docrender.cancel."
	// MaxDeliver bounds how often a job is tried before it fails for good.
	MaxDeliver = 4
	// defaultAckWait is how long a job's worker may stay silent before
	// JetStream hands the job to another (heartbeats every third of it).
	defaultAckWait = 15 * time.Second
	// publishTimeout bounds waiting for JetStream's acknowledgement of a
	// job: a NATS that accepts connections but does not answer (frozen,
	// partitioned) makes the gateway answer 503 rather than hang.
	publishTimeout = 3 * time.Second
)

// ErrQueueFull is returned by Submit when the stream holds MaxQueue jobs.
var ErrQueueFull = errors.New("queue: full")

// ErrUnavailable is returned when NATS cannot be reached.
var ErrUnavailable = errors.New("queue: unavailable")

// StartEmbedded runs an in-process NATS server with JetStream file storage
// under dir. It listens on no port; clients connect in-process.
func StartEmbedded(dir string) (*server.Server, error) {
	srv, err := server.NewServer(&server.Options{
		ServerName: "docrender-embedded",
		DontListen: true,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: embedded server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("queue: embedded server did not start")
	}
	return srv, nil
}

// Names are the stream, consumer and subject names of one namespace.
type Names struct {
	Stream, Consumer, SubjectPrefix, ResultPrefix  string
	WebhookStream, WebhookConsumer, WebhookSubject string
	// CancelPrefix + job ID is the core NATS subject of a job's cancel notice.
	CancelPrefix string
}

// NamesFor derives the names of namespace ns ("" or "docrender": the defaults).
func NamesFor(ns string) Names {
	if ns == "" || ns == "docrender" {
		return Names{Stream: Stream, Consumer: Consumer, SubjectPrefix: SubjectPrefix, ResultPrefix: ResultPrefix,
			WebhookStream: WebhookStream, WebhookConsumer: WebhookConsumer, WebhookSubject: WebhookSubject, CancelPrefix: CancelPrefix}
	}
	up := strings.ToUpper(ns)
	return Names{
		Stream: up + "_JOBS", Consumer: ns + "-workers", SubjectPrefix: ns + ".jobs.", ResultPrefix: ns + ".results.",
		WebhookStream: up + "_WEBHOOKS", WebhookConsumer: ns + "-webhooks", WebhookSubject: ns + ".webhooks.deliver",
		CancelPrefix: ns + ".cancel.",
	}
}

// Conn is a connection to the job queue.
type Conn struct {
	n   Names
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger
	// cancels are this process's running jobs, for cancel notices (cancel.go).
	cancels *cancels
	// ackWait is defaultAckWait; tests shorten it.
	ackWait time.Duration
	// oldJobsEvery is defaultOldJobsEvery; tests shorten it.
	oldJobsEvery time.Duration
	// results are the waiters of this process's submitted jobs.
	results *results
	// maxJobs is the stream's limit (Setup), for Admit.
	maxJobs atomic.Int64
	// tracer traces publishing and processing jobs (trace.go).
	tracer trace.Tracer
}

// Connect dials url, or the in-process server when srv is not nil.
func Connect(ctx context.Context, url string, srv *server.Server, ns, name string, log *slog.Logger, options ...Option) (*Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("nats reconnected") }),
	}
	if srv != nil {
		opts = append(opts, nats.InProcessServer(srv))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("queue: connect %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("queue: jetstream: %w", err)
	}
	n := NamesFor(ns)
	c := &Conn{n: n, nc: nc, js: js, log: log, cancels: newCancels(), ackWait: defaultAckWait, oldJobsEvery: defaultOldJobsEvery, results: newResults(nc, n.ResultPrefix),
		tracer: noTracer()}
	for _, o := range options {
		o(c)
	}
	return c, nil
}

// Close drains the connection.
func (c *Conn) Close() { c.nc.Close() }

// NATS exposes the core connection (for health checks).
func (c *Conn) NATS() *nats.Conn { return c.nc }

// Setup creates or updates the stream and the shared consumer. It uses only
// features of nats-server 2.9, which some deployments still run.
func (c *Conn) Setup(ctx context.Context, st Streams) error {
	st = st.withDefaults()
	c.maxJobs.Store(int64(st.MaxJobs))
	cfg := jetstream.StreamConfig{
		Name:       c.n.Stream,
		Subjects:   []string{c.n.SubjectPrefix + ">"},
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Discard:    jetstream.DiscardNew,
		MaxMsgs:    int64(st.MaxJobs),
		MaxBytes:   st.MaxJobBytes,
		Duplicates: 2 * time.Minute,
		Replicas:   st.Replicas,
	}
	if err := c.upsertStream(ctx, cfg); err != nil {
		return fmt.Errorf("queue: stream: %w", err)
	}
	s, err := c.js.Stream(ctx, c.n.Stream)
	if err != nil {
		return fmt.Errorf("queue: stream: %w", err)
	}
	if err := c.setupConsumers(ctx, s); err != nil {
		return err
	}
	return c.setupWebhooks(ctx, st)
}

// Streams are the limits of the job and webhook streams.
type Streams struct {
	// MaxJobs bounds the jobs waiting or running (DOCRENDER_MAX_QUEUE):
	// past it a publish is refused with ErrQueueFull.
	MaxJobs int
	// MaxJobBytes bounds the job stream's storage; 0: DefaultMaxJobBytes.
	MaxJobBytes int64
	// MaxWebhookBytes bounds the webhook stream's; 0: DefaultMaxWebhookBytes.
	MaxWebhookBytes int64
	// Replicas is how many JetStream servers keep each stream
	// (DOCRENDER_JOB_REPLICAS); 0 means 1. A start never lowers the
	// replicas an operator raised on a stream that exists.
	Replicas int
}

// Storage bounds of the streams: a job is a few kilobytes (inputs travel
// by blob key), a webhook delivery a few hundred bytes.
const (
	DefaultMaxJobBytes     = 1 << 30
	DefaultMaxWebhookBytes = 256 << 20
)

func (s Streams) withDefaults() Streams {
	if s.MaxJobBytes <= 0 {
		s.MaxJobBytes = DefaultMaxJobBytes
	}
	if s.MaxWebhookBytes <= 0 {
		s.MaxWebhookBytes = DefaultMaxWebhookBytes
	}
	s.Replicas = max(s.Replicas, 1)
	return s
}

// upsertStream creates the stream or updates its configuration, keeping
// replicas an operator raised (nats stream edit --replicas 3) above what
// this process asks for: every process start applies its configuration,
// and one started with the default must not shrink a cluster's copies.
func (c *Conn) upsertStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	if s, err := c.js.Stream(ctx, cfg.Name); err == nil {
		if have := s.CachedInfo().Config.Replicas; have > cfg.Replicas {
			c.log.Info("keeping the stream's replicas", "stream", cfg.Name, "replicas", have, "asked", cfg.Replicas)
			cfg.Replicas = have
		}
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	_, err := c.js.CreateOrUpdateStream(ctx, cfg)
	return err
}

// Ready reports whether jobs can be queued now: connected, and the job
// stream answers (it has a leader). A stream whose servers lost their
// quorum fails it while the connection itself is fine.
func (c *Conn) Ready(ctx context.Context) error {
	if !c.nc.IsConnected() {
		return fmt.Errorf("%w: %s", ErrUnavailable, c.nc.Status())
	}
	s, err := c.js.Stream(ctx, c.n.Stream)
	if err != nil {
		return fmt.Errorf("%w: job stream: %v", ErrUnavailable, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("%w: job stream: %v", ErrUnavailable, err)
	}
	return quorum(info.Cluster)
}

// quorum reports whether a replicated stream can take writes. A leader keeps
// answering info for up to Raft's lost-quorum interval (10 s) after its peers
// are gone; peers that shut down are marked offline at once, so count them.
func quorum(ci *jetstream.ClusterInfo) error {
	if ci == nil || len(ci.Replicas) == 0 {
		return nil // a single server, or a stream with one replica
	}
	if ci.Leader == "" {
		return fmt.Errorf("%w: job stream has no leader", ErrUnavailable)
	}
	up := 1 // the leader
	for _, p := range ci.Replicas {
		if p != nil && !p.Offline {
			up++
		}
	}
	if need := (len(ci.Replicas)+1)/2 + 1; up < need {
		return fmt.Errorf("%w: job stream has %d of %d replicas, needs %d", ErrUnavailable, up, len(ci.Replicas)+1, need)
	}
	return nil
}

// Depth is the number of jobs waiting or in flight.
func (c *Conn) Depth(ctx context.Context) (uint64, error) {
	s, err := c.js.Stream(ctx, c.n.Stream)
	if err != nil {
		return 0, fmt.Errorf("queue: depth: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("queue: depth: %w", err)
	}
	return info.State.Msgs, nil
}

// Publish puts job on the queue without waiting for its result (batches).
// Without a connection it fails at once with ErrUnavailable: while the
// client reconnects, a publish would otherwise sit in its buffer until the
// acknowledgement times out.
func (c *Conn) Publish(ctx context.Context, job *jobspb.Job) error {
	return c.publishTo(ctx, job, job.Id)
}

// publishTo publishes job deduplicated by msgID.
func (c *Conn) publishTo(ctx context.Context, job *jobspb.Job, msgID string) (err error) {
	ctx, span := c.startPublish(ctx, job)
	defer func() { tracing.End(span, err) }()
	if !c.nc.IsConnected() {
		return fmt.Errorf("%w: %s", ErrUnavailable, c.nc.Status())
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	data, err := proto.Marshal(job)
	if err != nil {
		return fmt.Errorf("queue: marshal job: %w", err)
	}
	msg := &nats.Msg{Subject: c.subjectFor(job), Data: data, Header: nats.Header{}}
	// The job ID deduplicates a publish retried after a lost acknowledgement.
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	InjectTrace(ctx, msg.Header)
	if _, err := c.js.PublishMsg(ctx, msg); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && isFull(apiErr.Description) {
			return ErrQueueFull
		}
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
			(apiErr != nil && apiErr.Code == 503) || !c.nc.IsConnected() {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return fmt.Errorf("queue: publish: %w", err)
	}
	return nil
}

// Submit publishes job with a reply subject of this process's and returns
// a handle to wait for its result (results.go). The waiter exists before
// the job is published, so no result can be missed.
func (c *Conn) Submit(ctx context.Context, job *jobspb.Job) (*Pending, error) {
	if !c.nc.IsConnected() {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, c.nc.Status())
	}
	ch, err := c.results.add(job.Id)
	if err != nil {
		return nil, err
	}
	job.ReplySubject = c.results.subject(job.Id)
	if err := c.Publish(ctx, job); err != nil {
		c.results.remove(job.Id)
		return nil, err
	}
	return &Pending{id: job.Id, r: c.results, ch: ch}, nil
}

// Delivery tells a handler which try this is.
type Delivery struct {
	Attempt int
	Last    bool
}

// Handler processes one job. A returned Result is sent to the job's reply
// subject and the job is acknowledged. A returned error means the job could
// not be processed here (a dead browser, say): it is retried, on this or
// another worker, unless this was the last delivery.
type Handler func(ctx context.Context, job *jobspb.Job, d Delivery) (*jobspb.Result, error)

// DeadHandler settles a job that used up its deliveries without an answer:
// its worker died or hung on every try (a page that crashes the process,
// say). It returns the failure the job's client is told, after recording
// whatever the job's failure means (a batch document failed, a conversion
// given back), and must not run the job again. nil means it could not be
// settled now (the state store down): the job stays in the stream.
type DeadHandler func(ctx context.Context, job *jobspb.Job) *jobspb.Result

// Consume runs slots concurrent pullers until ctx ends, then waits for the
// jobs in hand to finish (graceful shutdown hands nothing back half-done).
// A job that arrives after ctx ended is handed back at once (Nak) for
// another worker. While it runs, Consume also hears cancel notices, and
// hands jobs that used up their deliveries to dead (deadletter.go).
func (c *Conn) Consume(ctx context.Context, slots int, h Handler, dead DeadHandler) error {
	kinds := map[string]int{}
	for _, k := range jobspb.WorkerKinds() {
		kinds[k] = slots
	}
	return c.ConsumeKinds(ctx, kinds, h, dead)
}

// ConsumeKinds is Consume of the jobs of the worker kinds in slots (kind:
// its concurrent pullers; DOCRENDER_WORKER_KINDS), each kind from its own
// lanes with its own slots: a slow kind never holds another's slots.
func (c *Conn) ConsumeKinds(ctx context.Context, slots map[string]int, h Handler, dead DeadHandler) error {
	type kindLanes struct {
		l     *lanes
		slots int
	}
	var all []kindLanes
	for _, kind := range jobspb.WorkerKinds() {
		if slots[kind] <= 0 {
			continue
		}
		l, err := c.newLanes(ctx, kind)
		if err != nil {
			return err
		}
		all = append(all, kindLanes{l, slots[kind]})
	}
	if len(all) == 0 {
		return errors.New("queue: no worker kind to consume")
	}
	sub, err := c.listenForCancels()
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	stopDead, err := c.settleDeadJobs(ctx, dead)
	if err != nil {
		return err
	}
	defer stopDead()
	var wg sync.WaitGroup
	wg.Go(func() { c.keepMovingOldJobs(ctx) })
	for _, k := range all {
		wg.Go(func() {
			slotsLoop(ctx, k.slots, k.l.next, func(msg jetstream.Msg) {
				if ctx.Err() != nil {
					// Fetched as we began to stop: another worker takes it now.
					_ = msg.Nak()
					return
				}
				c.handle(msg, h)
			})
		})
	}
	wg.Wait()
	return nil
}

// pull runs slots concurrent pullers of one message each until ctx ends,
// then waits for the messages in hand. Pulling one at a time keeps a busy
// process from hoarding messages another could take.
func (c *Conn) pull(ctx context.Context, cons jetstream.Consumer, slots int, fn func(jetstream.Msg)) {
	slotsLoop(ctx, slots, func(ctx context.Context) jetstream.Msg {
		msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			if ctx.Err() == nil {
				c.log.Debug("fetch failed", "err", err)
				time.Sleep(250 * time.Millisecond)
			}
			return nil
		}
		for msg := range msgs.Messages() {
			return msg
		}
		return nil
	}, fn)
}

// slotsLoop runs slots goroutines that each take a message from next (nil:
// none yet) and handle it with fn, until ctx ends; then it waits for the
// messages in hand.
func slotsLoop(ctx context.Context, slots int, next func(context.Context) jetstream.Msg, fn func(jetstream.Msg)) {
	var wg sync.WaitGroup
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if msg := next(ctx); msg != nil {
					fn(msg)
				}
			}
		}()
	}
	wg.Wait()
}

// retryDelays space the tries of a job that failed for a reason not its
// own. They grow so that an outage of a few seconds (Redis or the blob
// store restarting) is outlasted rather than burning every try at once.
var retryDelays = []time.Duration{500 * time.Millisecond, 2 * time.Second, 5 * time.Second}

// RetryDelay is the wait before the try after attempt.
func RetryDelay(attempt int) time.Duration {
	return retryDelays[min(max(attempt, 1), len(retryDelays))-1]
}

// handle runs one job detached from the consumer's context: shutdown lets
// it finish; only its own timeout or a cancel notice stops it.
func (c *Conn) handle(msg jetstream.Msg, h Handler) {
	job, err := decodeJob(msg.Data())
	if err != nil {
		c.log.Error("dropping undecodable job", "subject", msg.Subject(), "err", err)
		_ = msg.Term()
		return
	}
	d := Delivery{Attempt: 1}
	if md, err := msg.Metadata(); err == nil {
		d.Attempt = int(md.NumDelivered)
	}
	d.Last = d.Attempt >= MaxDeliver
	batchID, _ := job.BatchRef()
	log := c.log.With("job_id", job.Id, "request_id", job.RequestId, "batch_id", batchID, "attempt", d.Attempt)

	// The job's IDs travel in its context: every line logged with it (in the
	// worker, the batch tracker, ...) carries them. A cancel notice ends the
	// context with cause ErrCancelled.
	ctx, cancel := context.WithCancelCause(logging.With(context.Background(),
		"job_id", job.Id, "request_id", job.RequestId, "batch_id", batchID))
	defer cancel(nil)
	// This try's span, a child of the publisher's (trace.go).
	ctx, span := c.startProcess(ctx, msg.Headers(), job, d)
	var res *jobspb.Result
	defer func() { endProcess(span, res, err, Cancelled(ctx), d.Last) }()
	if !c.cancels.start(job.Id, cancel) {
		log.Info("job cancelled before it started")
		c.ack(msg, log)
		return
	}
	defer c.cancels.done(job.Id)
	// Keep the job ours while it runs.
	go func() {
		t := time.NewTicker(c.ackWait / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	res, err = contained(ctx, h, job, d)
	if errors.Is(err, ErrPanicked) {
		// A panic is no passing fault: trying again would hit it again.
		log.Error("job panicked", "err", err)
		res, err = &jobspb.Result{ErrorKind: jobspb.ErrorKind_ERROR_KIND_INTERNAL,
			ErrorMessage: "The job failed with an internal error."}, nil
	}
	if Cancelled(ctx) {
		// Its client went away: nobody waits for a result, and a retry
		// would redo what was just stopped on purpose.
		log.Info("job cancelled", "err", err)
		c.ack(msg, log)
		return
	}
	if err != nil {
		if !d.Last {
			log.Warn("job failed, will retry", "err", err, "retry_in", RetryDelay(d.Attempt))
			_ = msg.NakWithDelay(RetryDelay(d.Attempt))
			return
		}
		log.Error("job failed on its last try", "err", err)
		res = &jobspb.Result{JobId: job.Id, ErrorKind: jobspb.ErrorKind_ERROR_KIND_INTERNAL,
			ErrorMessage: "The document could not be rendered."}
	}
	res.JobId = job.Id
	res.BatchId, res.BatchIndex = job.BatchRef()
	if err := c.reply(job, res); err != nil {
		log.Error("publishing result failed", "err", err)
	}
	c.ack(msg, log)
}

// ErrPanicked wraps a panic recovered from a handler.
var ErrPanicked = errors.New("queue: handler panicked")

// contained runs h, turning a panic into an error wrapping ErrPanicked: a
// job may fail, the process that runs it never (DESIGN §5). Handlers that
// must record a failure of their own (batch documents) recover first.
func contained(ctx context.Context, h Handler, job *jobspb.Job, d Delivery) (res *jobspb.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("%w: %v\n%s", ErrPanicked, r, debug.Stack())
		}
	}()
	return h(ctx, job, d)
}

// ack acknowledges msg and waits for the server to confirm. A lost ack
// (NATS unreachable) means the job runs again after AckWait; results are
// idempotent per job ID, so that costs a render, not a duplicate.
func (c *Conn) ack(msg jetstream.Msg, log *slog.Logger) {
	if err := msg.DoubleAck(context.Background()); err != nil {
		log.Warn("ack failed", "err", err)
	}
}

// Delivery of a result to the gateway that waits for it. Core NATS drops a
// message nobody is subscribed to, and right after a NATS restart the
// waiting gateway may not have re-subscribed yet while the worker has
// already reconnected and flushed its result. So the result is a request
// that the gateway confirms, offered again until confirmed or resultWindow
// has passed (then the gateway is gone: its client left or it crashed).
const (
	resultWindow     = 5 * time.Second
	resultAckTimeout = 2 * time.Second
	resultRetryEvery = 250 * time.Millisecond
)

// isFull tells a publish refused by the stream's limits (messages or bytes).
func isFull(desc string) bool {
	d := strings.ToLower(desc)
	return strings.Contains(d, "maximum messages") || strings.Contains(d, "maximum bytes")
}

// errWaiterGone is a result whose gateway no longer waits for it.
var errWaiterGone = errors.New("queue: nobody waits for the result any more")

func (c *Conn) reply(job *jobspb.Job, res *jobspb.Result) error {
	if job.ReplySubject == "" {
		return nil
	}
	data, err := proto.Marshal(res)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(resultWindow)
	for {
		ack, err := c.nc.Request(job.ReplySubject, data, resultAckTimeout)
		if err == nil && ack.Header.Get(goneHeader) != "" {
			return errWaiterGone
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queue: result not taken within %s: %w", resultWindow, err)
		}
		time.Sleep(resultRetryEvery)
	}
}

func decodeJob(data []byte) (*jobspb.Job, error) {
	job := &jobspb.Job{}
	if err := proto.Unmarshal(data, job); err != nil {
		return nil, fmt.Errorf("queue: decode job: %w", err)
	}
	return job, nil
}
