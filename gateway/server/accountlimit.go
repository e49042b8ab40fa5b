package server

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/pkg/ids"
)

// Per-account limits (DESIGN §5): DOCRENDER_PLAN_<PLAN>_RATE keyed requests
// a minute, and DOCRENDER_PLAN_<PLAN>_CONCURRENCY requests in flight at once
// (generate, merge, a batch counting one). Both live in Limits: the state
// store, so every gateway counts the same requests, or memory when this
// gateway is the only one. Rate windows are fixed minutes;
// in-flight requests are leases in an index scored by their expiry, so the
// leases of a gateway that died pass by themselves.

// Limits is where rate windows and in-flight leases are counted: the
// state store's operations of the same names (every gateway shares them),
// or memlimits for a gateway that is the only one (Deps.OnlyGateway: the
// embedded mode, where every bbolt write is an fsync on the request's
// way). Nothing in it needs to outlive the process.
type Limits interface {
	IncrBy(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error)
	IndexAdd(ctx context.Context, index, member string, score float64) error
	IndexAddIfBelow(ctx context.Context, index, member string, score, floor float64, limit int64) (bool, error)
	IndexRemove(ctx context.Context, index, member string) (bool, error)
	IndexRange(ctx context.Context, index string, min, max float64, offset, count int, desc bool) ([]string, error)
}

const (
	rateWindow = time.Minute
	// leaseTTL outlasts the longest request (a synchronous batch's wait).
	leaseTTL = syncMaxWait + 5*time.Minute
	// leaseSweep bounds how many dead leases one refusal clears.
	leaseSweep = 100
)

// limitAccount is the middleware of keyed routes: it counts the request
// against the account's rate, answers with RateLimit-* headers, and, for a
// route that renders (inFlight), holds one of the account's slots while the
// request runs. It follows the route's authentication.
func (s *Server) limitAccount(inFlight bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			u := currentUser(c)
			if u == nil {
				return next(c)
			}
			plan := s.acct.Plan(u.Plan)
			ctx := c.Request().Context()
			now := time.Now()
			key, reset := windowKey("ratelimit:"+u.ID, rateWindow, now)
			n, err := s.limits.IncrBy(ctx, key, 1, rateWindow+time.Minute)
			if err != nil {
				return fmt.Errorf("rate limit: %w", err)
			}
			h := c.Response().Header()
			h.Set("RateLimit-Limit", strconv.Itoa(plan.Rate))
			h.Set("RateLimit-Remaining", strconv.FormatInt(max(0, int64(plan.Rate)-n), 10))
			h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(reset.Seconds()))))
			if n > int64(plan.Rate) {
				return rateLimited(fmt.Sprintf("Too many requests: the %s plan allows %d a minute.", u.Plan, plan.Rate), reset)
			}
			if !inFlight {
				return next(c)
			}
			release, err := s.takeSlot(ctx, u.ID, plan.Concurrency)
			if err != nil {
				return err
			}
			defer func() {
				// An answer already written goes out before the slot's
				// store write: the client does not wait for it.
				if c.Response().Committed {
					c.Response().Flush()
				}
				release()
			}()
			return next(c)
		}
	}
}

// takeSlot leases one of the account's limit in-flight slots, or refuses
// with 429 RATE_LIMITED; release gives it back.
func (s *Server) takeSlot(ctx context.Context, account string, limit int) (release func(), err error) {
	index := "inflight:" + account
	lease := ids.New()
	now := time.Now()
	ok, err := s.limits.IndexAddIfBelow(ctx, index, lease, unixMilli(now.Add(leaseTTL)), unixMilli(now), int64(limit))
	if err != nil {
		return nil, fmt.Errorf("concurrency limit: %w", err)
	}
	if !ok {
		// Expired leases never count (the floor); clear some as garbage.
		s.sweepLeases(ctx, index)
		return nil, rateLimited(fmt.Sprintf("Too many requests at once: the plan allows %d in flight.", limit), time.Second)
	}
	return func() {
		if _, err := s.limits.IndexRemove(context.WithoutCancel(ctx), index, lease); err != nil {
			s.Log.Warn("concurrency limit: lease not given back; it expires", "account", account, "err", err)
		}
	}, nil
}

// sweepLeases removes expired leases (of requests whose gateway died).
func (s *Server) sweepLeases(ctx context.Context, index string) {
	dead, err := s.limits.IndexRange(ctx, index, math.Inf(-1), unixMilli(time.Now()), 0, leaseSweep, false)
	if err != nil {
		return
	}
	for _, m := range dead {
		_, _ = s.limits.IndexRemove(ctx, index, m)
	}
}

func unixMilli(t time.Time) float64 { return float64(t.UnixMilli()) }

// Progress streams per account (DESIGN §5): at most
// DOCRENDER_MAX_STREAMS_PER_ACCOUNT open at once, over every gateway. A
// stream lasts as long as its batch, so its lease is short and renewed
// while the stream is open: the streams of a gateway that died stop
// counting within streamLeaseTTL.
const (
	streamLeaseTTL   = 2 * time.Minute
	streamLeaseRenew = 30 * time.Second
	// streamRetry is the Retry-After of a refused stream: a slot frees
	// when one of the account's batches ends or a client leaves.
	streamRetry = 5 * time.Second
)

// takeStreamSlot leases one of the account's limit progress-stream slots,
// renewed until release, or refuses with 429 RATE_LIMITED.
func (s *Server) takeStreamSlot(ctx context.Context, account string, limit int) (release func(), err error) {
	index := "streams:" + account
	lease := ids.New()
	now := time.Now()
	ok, err := s.limits.IndexAddIfBelow(ctx, index, lease, unixMilli(now.Add(streamLeaseTTL)), unixMilli(now), int64(limit))
	if err != nil {
		return nil, fmt.Errorf("stream limit: %w", err)
	}
	if !ok {
		s.sweepLeases(ctx, index)
		return nil, rateLimited(fmt.Sprintf("Too many progress streams open: an account may have %d at once.", limit), streamRetry)
	}
	renewCtx, stop := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		s.renewLease(renewCtx, index, lease, streamLeaseRenew, streamLeaseTTL)
	}()
	return func() {
		// Renewal stops first: a late renewal would put the lease back.
		stop()
		<-renewed
		if _, err := s.limits.IndexRemove(context.WithoutCancel(ctx), index, lease); err != nil {
			s.Log.Warn("stream limit: lease not given back; it expires", "account", account, "err", err)
		}
	}, nil
}

// renewLease moves the lease's expiry to ttl from now every interval
// until ctx ends.
func (s *Server) renewLease(ctx context.Context, index, lease string, every, ttl time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.limits.IndexAdd(ctx, index, lease, unixMilli(time.Now().Add(ttl))); err != nil && ctx.Err() == nil {
				s.Log.Warn("stream limit: renewing a lease failed", "index", index, "err", err)
			}
		}
	}
}
