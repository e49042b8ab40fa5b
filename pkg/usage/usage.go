// Package usage counts the conversions each account uses per calendar month
// (spec §8), across every gateway and worker.
//
// Every charge is a Reservation, taken before the work, all or none and
// atomically (two gateways never both take the last conversion), and given
// back, whole or in part, when the work produces nothing. Work that succeeds
// simply keeps its reservation. A reservation remembers the month it was
// charged to, so a give-back after midnight on the last day of a month goes
// to the month that paid; a batch carries its reservation in its record, and
// the worker that fails one of its documents gives that one back.
package usage

import (
	"context"
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

// Reservation is conversions taken from an account's month. Its fields are
// exported so that a batch can keep it in its record.
type Reservation struct {
	Account string `json:"account"`
	Period  string `json:"period"`
	N       int64  `json:"n"`
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

// Reserve takes n conversions from account's current month if that keeps
// it at most limit; otherwise it takes none and returns a *LimitError.
func (m *Meter) Reserve(ctx context.Context, account string, n, limit int64) (Reservation, error) {
	r := Reservation{Account: account, Period: Period(m.now()), N: n}
	used, ok, err := m.st.Reserve(ctx, counterKey(r.Account, r.Period), n, limit, keep)
	if err != nil {
		return Reservation{}, fmt.Errorf("usage: reserve: %w", err)
	}
	if !ok {
		return Reservation{}, &LimitError{Used: used, Limit: limit, Need: n}
	}
	return r, nil
}

// Release gives n conversions of r back to the month r was charged to.
// The caller gives back at most r.N in all (a batch, one per failed
// document); n <= 0 does nothing.
func (m *Meter) Release(ctx context.Context, r Reservation, n int64) error {
	if n <= 0 || r.Account == "" {
		return nil
	}
	if n > r.N {
		return fmt.Errorf("usage: release %d of a reservation of %d", n, r.N)
	}
	if _, err := m.st.IncrBy(ctx, counterKey(r.Account, r.Period), -n, keep); err != nil {
		return fmt.Errorf("usage: release: %w", err)
	}
	return nil
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
