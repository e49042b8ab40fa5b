package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

// Fair scheduling (DESIGN §5), per worker kind (DESIGN §1, §11: chromium,
// pdf, office; jobspb.WorkerKind). Jobs a client waits for (single renders,
// merges, a batch's ZIP) go to the subjects "<prefix>now.<kind>.<op>", read
// by one consumer per kind; batch documents (and the slices of a long
// document) go to their account's lane of their kind, one consumer per
// account and kind: "<prefix>batch.<account>" for chromium (the lanes'
// subjects from before worker kinds, kept), "<prefix>batch.<kind>.<account>"
// for the others. A free slot of a kind takes a waiting "now" job of its
// kind first, then a batch document of the next account in turn: a render
// never waits behind another account's batch for more than one document's
// time, the documents of several running batches interleave, and one batch
// alone still gets every slot. Workers of one kind never see another's jobs.
//
// Only nats-server 2.9 features: one filter subject per consumer, and
// work-queue consumers whose filters do not overlap (the lanes' subjects
// differ in their number of tokens or in a literal one).

const (
	// idleWait is how long an idle slot waits for a "now" job before it
	// looks for batch documents again; a batch started on an idle service
	// begins within it.
	idleWait = 250 * time.Millisecond
	// accountsTTL is how long a process trusts its list of accounts with
	// batch documents waiting.
	accountsTTL = 200 * time.Millisecond
	// batchConsumerIdle is when the server deletes the consumer of an
	// account that has had no batch documents for that long.
	batchConsumerIdle = time.Hour
)

// subjectFor is where job waits: batch documents and the slices of a long
// document (DESIGN §10) in their account's lane, the rest in their kind's
// "now" lane.
func (c *Conn) subjectFor(job *jobspb.Job) string {
	if job.GetBatchDocument() != nil || job.GetSlice() != nil {
		return c.batchSubject(job.WorkerKind(), job.AccountId)
	}
	return c.n.SubjectPrefix + "now." + job.WorkerKind() + "." + job.Op()
}

// nowConsumer reads kind's "now" lane.
func (c *Conn) nowConsumer(kind string) string { return c.n.Consumer + "-now-" + kind }

func (c *Conn) nowSubjects(kind string) string { return c.n.SubjectPrefix + "now." + kind + ".>" }

// batchLane is the subject prefix of kind's account lanes.
func (c *Conn) batchLane(kind string) string {
	if kind == jobspb.KindChromium {
		return c.n.SubjectPrefix + "batch."
	}
	return c.n.SubjectPrefix + "batch." + kind + "."
}

func (c *Conn) batchSubject(kind, account string) string { return c.batchLane(kind) + token(account) }

// batchConsumer reads an account's lane of kind. The names cannot meet: an
// account token never holds the kind's "-<kind>-batch-" in front.
func (c *Conn) batchConsumer(kind, tok string) string {
	if kind == jobspb.KindChromium {
		return c.n.Consumer + "-batch-" + tok
	}
	return c.n.Consumer + "-" + kind + "-batch-" + tok
}

// token makes an account ID a subject token and consumer-name part: IDs are
// URL-safe base64 already; anything else is mapped, never trusted.
func token(account string) string {
	if account == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, account)
}

// consumerConfig is what every job consumer shares.
func (c *Conn) consumerConfig(name, filter string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.ackWait,
		MaxDeliver:    MaxDeliver,
		FilterSubject: filter,
		MaxAckPending: 100000,
	}
}

// setupConsumers creates every kind's "now" consumer (a gateway queues jobs
// of kinds no worker may take yet). The consumers of older versions would
// overlap them (a work-queue stream refuses that): the single consumer of
// every subject from before fair scheduling, and the one "now" consumer
// from before worker kinds. They are deleted, and jobs still waiting on
// their subjects are moved to the new ones.
func (c *Conn) setupConsumers(ctx context.Context, s jetstream.Stream) error {
	for _, old := range []string{c.n.Consumer, c.n.Consumer + "-now"} {
		if err := c.js.DeleteConsumer(ctx, c.n.Stream, old); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("queue: delete the old consumer %s: %w", old, err)
		}
	}
	for _, kind := range jobspb.WorkerKinds() {
		if _, err := c.js.CreateOrUpdateConsumer(ctx, c.n.Stream, c.consumerConfig(c.nowConsumer(kind), c.nowSubjects(kind))); err != nil {
			return fmt.Errorf("queue: consumer: %w", err)
		}
	}
	return c.moveOldJobs(ctx, s)
}

// moveOldJobs republishes jobs waiting on the subjects of older versions to
// their new subjects: "<prefix>render", "merge", "zip" from before fair
// scheduling, "<prefix>now.render", "now.merge", "now.zip" from before
// worker kinds.
func (c *Conn) moveOldJobs(ctx context.Context, s jetstream.Stream) error {
	for _, subj := range []string{"render", "merge", "zip", "now.render", "now.merge", "now.zip"} {
		old := c.n.SubjectPrefix + subj
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(old))
		if err != nil {
			return fmt.Errorf("queue: old jobs: %w", err)
		}
		if info.State.Subjects[old] == 0 {
			continue
		}
		cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: old, InactiveThreshold: time.Minute})
		if err != nil {
			return fmt.Errorf("queue: old jobs: %w", err)
		}
		moved := 0
		// Until the old subject is empty: a fetch may return before the
		// consumer has readied every message.
		for deadline := time.Now().Add(time.Minute); ; {
			batch, err := cons.Fetch(100, jetstream.FetchMaxWait(200*time.Millisecond))
			if err != nil {
				return fmt.Errorf("queue: old jobs: %w", err)
			}
			for msg := range batch.Messages() {
				if err := c.move(ctx, msg); err != nil {
					return err
				}
				moved++
			}
			info, err := s.Info(ctx, jetstream.WithSubjectFilter(old))
			if err != nil {
				return fmt.Errorf("queue: old jobs: %w", err)
			}
			if info.State.Subjects[old] == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("queue: old jobs: %d still on %s", info.State.Subjects[old], old)
			}
		}
		_ = s.DeleteConsumer(ctx, cons.CachedInfo().Name)
		c.log.Info("moved waiting jobs to the fair-scheduling subjects", "subject", old, "jobs", moved)
	}
	return nil
}

// defaultOldJobsEvery is how often a consuming process looks for jobs on
// the subjects of older versions: during a rolling upgrade, a gateway of
// the version before still publishes there, and no consumer reads them
// any more.
const defaultOldJobsEvery = 30 * time.Second

// keepMovingOldJobs moves old-subject jobs (moveOldJobs) every
// c.oldJobsEvery until ctx ends.
func (c *Conn) keepMovingOldJobs(ctx context.Context) {
	t := time.NewTicker(c.oldJobsEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := c.js.Stream(ctx, c.n.Stream)
		if err == nil {
			err = c.moveOldJobs(ctx, s)
		}
		if err != nil && ctx.Err() == nil {
			c.log.Warn("moving jobs of an older version", "err", err)
		}
	}
}

func (c *Conn) move(ctx context.Context, msg jetstream.Msg) error {
	job, err := decodeJob(msg.Data())
	if err != nil {
		c.log.Error("dropping undecodable job", "subject", msg.Subject(), "err", err)
		return msg.DoubleAck(ctx)
	}
	if err := c.publishTo(ctx, job, job.Id+"/moved"); err != nil {
		return fmt.Errorf("queue: move job %s: %w", job.Id, err)
	}
	// Acknowledged before the count is read again.
	return msg.DoubleAck(ctx)
}

// KindDepths counts the jobs in the stream (waiting or running) of each
// worker kind, from the stream's per-subject counts.
func (c *Conn) KindDepths(ctx context.Context) (map[string]uint64, error) {
	s, err := c.js.Stream(ctx, c.n.Stream)
	if err != nil {
		return nil, fmt.Errorf("queue: depth: %w", err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(c.n.SubjectPrefix+">"))
	if err != nil {
		return nil, fmt.Errorf("queue: depth: %w", err)
	}
	out := map[string]uint64{}
	for subj, n := range info.State.Subjects {
		out[c.kindOf(strings.TrimPrefix(subj, c.n.SubjectPrefix))] += n
	}
	return out, nil
}

// kindOf is the worker kind of a subject (without the prefix): its second
// token in "now.<kind>.<op>" and "batch.<kind>.<account>", chromium for
// "batch.<account>".
func (c *Conn) kindOf(subj string) string {
	parts := strings.Split(subj, ".")
	if len(parts) == 3 && slices.Contains(jobspb.WorkerKinds(), parts[1]) {
		return parts[1]
	}
	return jobspb.KindChromium
}

// lanes picks the next message of one kind for a free slot. It is shared by
// the slots of that kind in one process; each process keeps its own turn.
type lanes struct {
	c    *Conn
	kind string
	now  jetstream.Consumer

	mu        sync.Mutex
	accounts  []string // tokens of accounts with batch documents in the stream
	refreshed time.Time
	consumers map[string]jetstream.Consumer
	// served is each account's recent share of this process's slots: a
	// count of documents taken that decays with servedHalfLife.
	served map[string]recent

	turn atomic.Uint64
}

// servedHalfLife is how long an account's documents count against its
// next turn. Accounts take turns by who was served least lately, so a batch
// that arrives while another runs gets most slots until it has had its
// share of the last few seconds, then they alternate: the later batch is
// not left behind by the head start of the earlier (DESIGN §5: "about
// equally" over a window of seconds, not since each batch began, which
// would stall a long batch for as long as a new one runs).
const servedHalfLife = 2 * time.Second

// recent is a count that halves every servedHalfLife; value is it at now.
type recent struct {
	n  float64
	at time.Time
}

func (r recent) value(now time.Time) float64 {
	if r.at.IsZero() {
		return 0
	}
	return r.n * math.Exp2(-float64(now.Sub(r.at))/float64(servedHalfLife))
}

func (c *Conn) newLanes(ctx context.Context, kind string) (*lanes, error) {
	now, err := c.js.Consumer(ctx, c.n.Stream, c.nowConsumer(kind))
	if err != nil {
		return nil, fmt.Errorf("queue: %s consumer: %w", kind, err)
	}
	return &lanes{c: c, kind: kind, now: now, consumers: map[string]jetstream.Consumer{}, served: map[string]recent{}}, nil
}

// next returns a message, or nil when none came within idleWait.
func (l *lanes) next(ctx context.Context) jetstream.Msg {
	if m, _ := fetchNoWait(l.now); m != nil {
		return m
	}
	if m := l.nextBatchDocument(ctx); m != nil {
		return m
	}
	msgs, err := l.now.Fetch(1, jetstream.FetchMaxWait(idleWait))
	if err != nil {
		if ctx.Err() == nil {
			l.c.log.Debug("fetch failed", "err", err)
			time.Sleep(idleWait)
		}
		return nil
	}
	for m := range msgs.Messages() {
		return m
	}
	return nil
}

// nextBatchDocument takes a document of the account served least lately
// that has one (ties in turn).
func (l *lanes) nextBatchDocument(ctx context.Context) jetstream.Msg {
	accounts := l.byTurn(l.waitingAccounts(ctx))
	for _, tok := range accounts {
		cons, err := l.consumer(ctx, tok)
		if err != nil {
			l.c.log.Warn("batch consumer", "account", tok, "err", err)
			continue
		}
		m, err := fetchNoWait(cons)
		if err != nil {
			// Deleted by the server after batchConsumerIdle: made anew next time.
			l.c.log.Debug("batch consumer fetch", "account", tok, "err", err)
			l.forget(tok)
		}
		if m != nil {
			l.serve(tok)
			return m
		}
	}
	return nil
}

// byTurn orders accounts by how much they were served lately, least
// first; equal ones (a start, all idle) rotate.
func (l *lanes) byTurn(accounts []string) []string {
	if len(accounts) == 0 {
		return nil
	}
	start := int(l.turn.Add(1) % uint64(len(accounts)))
	// A copy: accounts is the shared list of waitingAccounts.
	out := make([]string, 0, len(accounts))
	out = append(append(out, accounts[start:]...), accounts[:start]...)
	now := time.Now()
	l.mu.Lock()
	w := make(map[string]float64, len(out))
	for _, tok := range out {
		w[tok] = l.served[tok].value(now)
	}
	l.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return w[out[i]] < w[out[j]] })
	return out
}

// serve counts a document taken for tok.
func (l *lanes) serve(tok string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.served[tok] = recent{n: l.served[tok].value(now) + 1, at: now}
	// Forget accounts long idle: the map stays as small as the active set.
	for k, r := range l.served {
		if r.value(now) < 0.01 {
			delete(l.served, k)
		}
	}
}

// waitingAccounts lists the accounts with batch documents in the stream
// (waiting or running), from the stream's per-subject counts.
func (l *lanes) waitingAccounts(ctx context.Context) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.refreshed) < accountsTTL {
		return l.accounts
	}
	l.refreshed = time.Now()
	prefix := l.c.batchLane(l.kind)
	s, err := l.c.js.Stream(ctx, l.c.n.Stream)
	if err != nil {
		return l.accounts
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(prefix+"*"))
	if err != nil {
		return l.accounts
	}
	accounts := l.accounts[:0:0]
	for subj, n := range info.State.Subjects {
		if n > 0 {
			accounts = append(accounts, strings.TrimPrefix(subj, prefix))
		}
	}
	sort.Strings(accounts)
	l.accounts = accounts
	return accounts
}

// consumer is the account's batch consumer, created the first time this
// process sees the account; the server deletes it after batchConsumerIdle.
func (l *lanes) consumer(ctx context.Context, tok string) (jetstream.Consumer, error) {
	l.mu.Lock()
	cons, ok := l.consumers[tok]
	l.mu.Unlock()
	if ok {
		return cons, nil
	}
	cfg := l.c.consumerConfig(l.c.batchConsumer(l.kind, tok), l.c.batchLane(l.kind)+tok)
	cfg.InactiveThreshold = batchConsumerIdle
	cons, err := l.c.js.CreateOrUpdateConsumer(ctx, l.c.n.Stream, cfg)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.consumers[tok] = cons
	l.mu.Unlock()
	return cons, nil
}

// forget drops a consumer the server no longer knows (deleted when idle).
func (l *lanes) forget(tok string) {
	l.mu.Lock()
	delete(l.consumers, tok)
	l.mu.Unlock()
}

// fetchNoWait takes a message if one is waiting. The error is the fetch's
// (a consumer the server deleted, say), not "no message".
func fetchNoWait(cons jetstream.Consumer) (jetstream.Msg, error) {
	msgs, err := cons.FetchNoWait(1)
	if err != nil {
		return nil, err
	}
	for m := range msgs.Messages() {
		return m, nil
	}
	if err := msgs.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		return nil, err
	}
	return nil, nil
}

// Shares of the queue (DOCRENDER_MAX_QUEUE) batch documents may take: one
// account at most half, all batches together at most 90%, so that one
// account's batches never leave the others' single renders a full queue.
const (
	accountShare = 0.5
	batchShare   = 0.9
)

// BatchCapacity is the largest batch Admit can take from one account when
// the queue holds at most maxJobs (0: no limit, any batch).
func BatchCapacity(maxJobs int64) int {
	if maxJobs <= 0 {
		return math.MaxInt
	}
	return int(float64(maxJobs) * accountShare)
}

// Admit refuses n more batch documents of account with ErrQueueFull when
// they would take it past its share of the queue. Single renders are bounded
// by the whole queue and the per-account concurrency limit.
func (c *Conn) Admit(ctx context.Context, account string, n int) error {
	limit := float64(c.maxJobs.Load())
	if limit <= 0 {
		return nil
	}
	// As Publish: at once without a connection, within publishTimeout
	// with one that does not answer.
	if !c.nc.IsConnected() {
		return fmt.Errorf("%w: %s", ErrUnavailable, c.nc.Status())
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	s, err := c.js.Stream(ctx, c.n.Stream)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// Every kind's lanes: "batch.<account>" and "batch.<kind>.<account>".
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(c.n.SubjectPrefix+"batch.>"))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if capacity := BatchCapacity(int64(limit)); n > capacity {
		// Never admitted however long the client waits: not "retry".
		return &invalid.Error{Field: "documents", Problem: fmt.Sprintf(
			"at most %d documents of one account fit in the render queue at once (got %d)", capacity, n),
			Hint: "Split the batch."}
	}
	var all uint64
	for _, k := range info.State.Subjects {
		all += k
	}
	var held uint64
	for _, kind := range jobspb.WorkerKinds() {
		held += info.State.Subjects[c.batchSubject(kind, account)]
	}
	mine := float64(held + uint64(n))
	if mine > limit*accountShare || float64(all)+float64(n) > limit*batchShare {
		return ErrQueueFull
	}
	return nil
}

// Takers says how many takers the jobs of a worker kind have now: pull
// requests waiting on its "now" consumer (an idle slot of a worker of
// that kind) plus its jobs in hand (a busy slot). Zero means no worker of
// the kind is running, so a gateway can say so at once rather than let a
// request wait out its timeout (DESIGN §11: office without LibreOffice).
// An idle slot re-pulls every idleWait; a caller that sees zero should look
// again over a little longer than that before concluding.
func (c *Conn) Takers(ctx context.Context, kind string) (int, error) {
	cons, err := c.js.Consumer(ctx, c.n.Stream, c.nowConsumer(kind))
	if err != nil {
		return 0, fmt.Errorf("queue: %s consumer: %w", kind, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("queue: %s consumer: %w", kind, err)
	}
	return info.NumWaiting + info.NumAckPending, nil
}

// TakersWait is how long to look for a taker before concluding there is
// none: a few of an idle slot's pulls.
const TakersWait = 4 * idleWait
