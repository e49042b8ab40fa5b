package queue

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/proto/jobspb"
)

// results routes the results of this process's submitted jobs to their
// waiters through one subscription (ResultPrefix + <process>.>), made on
// first use. A waiter is a map entry and a one-slot channel: a gateway
// holding thousands of sync requests keeps a few hundred bytes for each,
// where a subscription of its own costs each one its pending buffer.
type results struct {
	nc     *nats.Conn
	prefix string // ResultPrefix + this process's ID + "."

	mu      sync.Mutex
	sub     *nats.Subscription
	waiters map[string]chan *nats.Msg
}

func newResults(nc *nats.Conn, resultPrefix string) *results {
	return &results{nc: nc, prefix: resultPrefix + ids.New() + ".", waiters: map[string]chan *nats.Msg{}}
}

// subject is the reply subject of job id.
func (r *results) subject(id string) string { return r.prefix + id }

// add registers a waiter for job id before its job is published, so no
// result can be missed.
func (r *results) add(id string) (chan *nats.Msg, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sub == nil {
		sub, err := r.nc.Subscribe(r.prefix+"*", r.route)
		if err != nil {
			return nil, fmt.Errorf("%w: subscribe: %v", ErrUnavailable, err)
		}
		// The one subscription carries every result of this process.
		_ = sub.SetPendingLimits(-1, 256<<20)
		r.sub = sub
	}
	ch := make(chan *nats.Msg, 1)
	r.waiters[id] = ch
	return ch, nil
}

func (r *results) remove(id string) {
	r.mu.Lock()
	delete(r.waiters, id)
	r.mu.Unlock()
}

// goneHeader answers a result whose waiter left (its client went away, or
// its wait timed out): the worker stops offering it at once.
const goneHeader = "Docrender-Waiter-Gone"

// route hands a result to its waiter and confirms receipt.
func (r *results) route(msg *nats.Msg) {
	id := strings.TrimPrefix(msg.Subject, r.prefix)
	r.mu.Lock()
	ch := r.waiters[id]
	r.mu.Unlock()
	if ch == nil {
		gone := nats.NewMsg(msg.Reply)
		gone.Header.Set(goneHeader, "1")
		_ = msg.RespondMsg(gone)
		return
	}
	select {
	case ch <- msg:
	default: // a result offered again after the first one was taken
	}
	// Confirm receipt: the worker keeps offering the result until someone does.
	_ = msg.Respond(nil)
}

// Pending is a submitted job whose result is awaited.
type Pending struct {
	id string
	r  *results
	ch chan *nats.Msg
}

// Wait blocks until the result arrives or ctx ends.
func (p *Pending) Wait(ctx context.Context) (*jobspb.Result, error) {
	defer p.r.remove(p.id)
	var msg *nats.Msg
	select {
	case msg = <-p.ch:
	case <-ctx.Done():
		return nil, fmt.Errorf("queue: waiting for result: %w", ctx.Err())
	}
	res := &jobspb.Result{}
	if err := proto.Unmarshal(msg.Data, res); err != nil {
		return nil, fmt.Errorf("queue: bad result: %w", err)
	}
	return res, nil
}

// Cancel stops waiting.
func (p *Pending) Cancel() { p.r.remove(p.id) }
