package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

// Fair scheduling (DESIGN §5). Jobs a client waits for (single renders,
// merges, a batch's ZIP) go to the subjects "<prefix>now.<kind>", read by one
// consumer; batch documents go to "<prefix>batch.<account>", one consumer per
// account. A free slot takes a waiting "now" job first, then a batch document
// of the next account in turn: a render never waits behind another account's
// batch for more than one document's time, the documents of several running
// batches interleave, and one batch alone still gets every slot.
//
// Only nats-server 2.9 features: one filter subject per consumer, and
// work-queue consumers whose filters do not overlap.

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
// document (DESIGN §10) by account, the rest in the shared "now" lane.
func (c *Conn) subjectFor(job *jobspb.Job) string {
	switch {
	case job.GetBatchDocument() != nil, job.GetSlice() != nil:
		return c.batchSubject(job.AccountId)
	case job.GetMerge() != nil:
		return c.n.SubjectPrefix + "now.merge"
	case job.GetZip() != nil:
		return c.n.SubjectPrefix + "now.zip"
	}
	return c.n.SubjectPrefix + "now.render"
}

func (c *Conn) nowConsumer() string { return c.n.Consumer + "-now" }

func (c *Conn) batchSubject(account string) string {
	return c.n.SubjectPrefix + "batch." + token(account)
}

func (c *Conn) batchConsumer(tok string) string { return c.n.Consumer + "-batch-" + tok }

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

// setupConsumers creates the "now" consumer. The single consumer of every
// subject that versions before fair scheduling used would overlap it (a
// work-queue stream refuses that): it is deleted, and jobs still waiting on
// its old subjects are moved to the new ones.
func (c *Conn) setupConsumers(ctx context.Context, s jetstream.Stream) error {
	if err := c.js.DeleteConsumer(ctx, c.n.Stream, c.n.Consumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("queue: delete the old consumer: %w", err)
	}
	if _, err := c.js.CreateOrUpdateConsumer(ctx, c.n.Stream, c.consumerConfig(c.nowConsumer(), c.n.SubjectPrefix+"now.>")); err != nil {
		return fmt.Errorf("queue: consumer: %w", err)
	}
	return c.moveOldJobs(ctx, s)
}

// moveOldJobs republishes jobs waiting on the subjects of versions before
// fair scheduling ("<prefix>render", "merge", "zip") to their new subjects.
func (c *Conn) moveOldJobs(ctx context.Context, s jetstream.Stream) error {
	for _, kind := range []string{"render", "merge", "zip"} {
		old := c.n.SubjectPrefix + kind
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

// lanes picks the next message for a free slot. It is shared by the slots of
// one process; each process keeps its own turn.
type lanes struct {
	c   *Conn
	now jetstream.Consumer

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

func (c *Conn) newLanes(ctx context.Context) (*lanes, error) {
	now, err := c.js.Consumer(ctx, c.n.Stream, c.nowConsumer())
	if err != nil {
		return nil, fmt.Errorf("queue: consumer: %w", err)
	}
	return &lanes{c: c, now: now, consumers: map[string]jetstream.Consumer{}, served: map[string]recent{}}, nil
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
	prefix := l.c.n.SubjectPrefix + "batch."
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
	cfg := l.c.consumerConfig(l.c.batchConsumer(tok), l.c.batchSubject(tok))
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
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(c.n.SubjectPrefix+"batch.*"))
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
	mine := float64(info.State.Subjects[c.batchSubject(account)] + uint64(n))
	if mine > limit*accountShare || float64(all)+float64(n) > limit*batchShare {
		return ErrQueueFull
	}
	return nil
}
