// Package usage counts the conversions each account uses per calendar month
// (spec §8), across every gateway and worker.
//
// Every charge is a Reservation, taken before the work, all or none and
// atomically (two gateways never both take the last conversion), and given
// back, whole or in part, when the work produces nothing. A reservation
// remembers the month it was charged to, so a give-back after midnight on
// the last day of a month goes to the month that paid; a batch carries its
// reservation in its record, and the worker that fails one of its documents
// gives that one back.
//
// Charges happen exactly once. A reservation is named by its job or batch
// ID and each give-back by a part (a document, "all"), so a call retried
// after a lost reply charges or refunds nothing more. A new reservation is
// pending until committed (the work succeeded, or a batch record now owns
// it): one whose process died before either commit or give-back is given
// back by SweepPending once its hold has passed.
package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/docrender/docrender/pkg/state"
)

// keep is how long a month's counter outlives its month: long enough for
// last month's batches to give back what failed.
const keep = 62 * 24 * time.Hour

// Period is the usage period of t: its calendar month in UTC ("2026-11").
func Period(t time.Time) string { return t.UTC().Format("2006-01") }

func counterKey(account, period string) string { return "usage:" + account + ":" + period }

// chargeGrace is how long a charge's record outlives its hold and life.
const chargeGrace = time.Hour

// pendingIndex holds every pending reservation, scored by the time (unix
// ms) after which SweepPending gives it back.
const pendingIndex = "usage:pending"

// Reservation is conversions taken from an account's month. Its fields are
// exported so that a batch can keep it in its record.
type Reservation struct {
	// ID names the charge (a job or batch ID). Records written before
	// charges had IDs have none; they are given back without the once-only
	// guarantee.
	ID      string `json:"id,omitempty"`
	Account string `json:"account"`
	Period  string `json:"period"`
	N       int64  `json:"n"`
}

// Ask is a reservation to take.
type Ask struct {
	ID      string // the job or batch the conversions pay for
	Account string
	N       int64
	Limit   int64
	// Hold is how long the reservation may stay pending: past it, a
	// reservation neither committed nor given back is given back.
	Hold time.Duration
	// Life is how long give-backs stay possible (a batch's documents fail
	// for as long as the batch runs); at least Hold.
	Life time.Duration
}

// LimitError is a reservation refused because it would exceed the limit.
type LimitError struct {
	Used, Limit, Need int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("usage: %d of %d conversions used, %d more asked", e.Used, e.Limit, e.Need)
}

// Meter reserves and gives back conversions in the state store.
type Meter struct {
	st  state.Store
	now func() time.Time
}

// New returns a meter over st.
func New(st state.Store) *Meter { return &Meter{st: st, now: time.Now} }

func pendingMember(r Reservation) (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}

// Reserve takes a.N conversions from a.Account's current month if that
// keeps it at most a.Limit; otherwise it takes none and returns a
// *LimitError. The reservation is pending until Commit or Release.
func (m *Meter) Reserve(ctx context.Context, a Ask) (Reservation, error) {
	if a.ID == "" {
		return Reservation{}, errors.New("usage: a reservation needs an ID")
	}
	r := Reservation{ID: a.ID, Account: a.Account, Period: Period(m.now()), N: a.N}
	member, err := pendingMember(r)
	if err != nil {
		return Reservation{}, fmt.Errorf("usage: reserve: %w", err)
	}
	// The charge and its pending mark are one write: a process that dies
	// after charging leaves the mark for SweepPending to find. The charge
	// outlives its hold by far: the sweeper that gives back a pending
	// reservation needs its record, and sweeps only every so often.
	hold := &state.Hold{Index: pendingIndex, Member: member, Score: float64(m.now().Add(a.Hold).UnixMilli())}
	used, ok, err := m.st.Reserve(ctx, counterKey(r.Account, r.Period), r.ID, r.N, a.Limit, keep, max(a.Life, a.Hold)+chargeGrace, hold)
	if err != nil {
		// Unknown whether it was taken: if it was, it is pending, and is
		// given back at the end of its hold.
		return Reservation{}, fmt.Errorf("usage: reserve: %w", err)
	}
	if !ok {
		return Reservation{}, &LimitError{Used: used, Limit: a.Limit, Need: a.N}
	}
	return r, nil
}

// Commit keeps r for good: the work it paid for succeeded, or a batch
// record owns it now (its documents give back their part when they fail).
func (m *Meter) Commit(ctx context.Context, r Reservation) error {
	member, err := pendingMember(r)
	if err == nil {
		_, err = m.st.IndexRemove(ctx, pendingIndex, member)
	}
	if err != nil {
		return fmt.Errorf("usage: commit: %w", err)
	}
	return nil
}

// ReleaseAll gives back what is left of r and ends its pending state.
func (m *Meter) ReleaseAll(ctx context.Context, r Reservation) error {
	if err := m.Release(ctx, r, "all", r.N); err != nil {
		return err
	}
	return m.Commit(ctx, r)
}

// Release gives n conversions of r back to the month r was charged to, once
// per part: the same part given back again gives nothing, and all parts
// together give back at most r.N. n <= 0 does nothing.
func (m *Meter) Release(ctx context.Context, r Reservation, part string, n int64) error {
	if n <= 0 || r.Account == "" {
		return nil
	}
	if n > r.N {
		return fmt.Errorf("usage: release %d of a reservation of %d", n, r.N)
	}
	key := counterKey(r.Account, r.Period)
	var err error
	if r.ID == "" {
		_, err = m.st.IncrBy(ctx, key, -n, keep)
	} else {
		_, err = m.st.Refund(ctx, key, r.ID, part, n)
	}
	if err != nil {
		return fmt.Errorf("usage: release: %w", err)
	}
	return nil
}

// SweepPending gives back every reservation whose hold has passed without
// a commit or give-back (its process died) and returns how many it swept.
// Any number of processes may sweep at once: give-backs happen once.
func (m *Meter) SweepPending(ctx context.Context) (int, error) {
	members, err := m.st.IndexRange(ctx, pendingIndex, state.MinScore, float64(m.now().UnixMilli()), 0, 500, false)
	if err != nil {
		return 0, fmt.Errorf("usage: sweep: %w", err)
	}
	n := 0
	for _, member := range members {
		var r Reservation
		if err := json.Unmarshal([]byte(member), &r); err == nil && r.ID != "" {
			if err := m.Release(ctx, r, "expired", r.N); err != nil {
				return n, err
			}
		}
		if _, err := m.st.IndexRemove(ctx, pendingIndex, member); err != nil {
			return n, fmt.Errorf("usage: sweep: %w", err)
		}
		n++
	}
	return n, nil
}

// Used is how many conversions account used in the current month.
func (m *Meter) Used(ctx context.Context, account string) (int64, error) {
	b, err := m.st.Get(ctx, counterKey(account, Period(m.now())))
	if errors.Is(err, state.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("usage: %w", err)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("usage: counter: %w", err)
	}
	return n, nil
}

// RunSweeper sweeps pending reservations at once and then every interval
// until ctx ends.
func (m *Meter) RunSweeper(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := m.SweepPending(ctx); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
