// Package state defines the small key-value store behind accounts, keys,
// sessions, usage counters, batch progress and the stored-file index.
// Implementations: boltstate (embedded default) and redisstate. Every
// implementation passes statetest.Run.
//
// The interface is a handful of atomic primitives rather than domain methods,
// so the domain logic (package account, files, batch) is written once.
package state

import (
	"context"
	"errors"
	"math"
	"time"
)

// ErrNotFound is returned (wrapped) for a missing or expired key.
var ErrNotFound = errors.New("state: not found")

// ErrUnavailable is returned (wrapped) when the store cannot be reached
// (a Redis restarting, say): the gateway answers 503 with Retry-After,
// not 500, since retrying shortly is the right thing to do.
var ErrUnavailable = errors.New("state: store unavailable")

// Score bounds for index queries.
var (
	MinScore = math.Inf(-1)
	MaxScore = math.Inf(1)
)

// Hold is an index entry that Reserve adds with the charge it takes.
type Hold struct {
	Index, Member string
	Score         float64
}

// Store is the state store. A ttl of 0 means the key never expires.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// SetNX stores value only when key is absent and reports whether it did.
	SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error)
	Delete(ctx context.Context, keys ...string) error
	// Swap replaces the value at key with value (nil: deletes the key) only
	// while it is old, and reports whether it did: a write fenced by what
	// its writer last saw. ttl applies to the new value.
	Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) (bool, error)

	// IncrBy adds delta to the integer at key (absent counts as 0) and returns
	// the new value; ttl is applied when the key is created.
	IncrBy(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error)
	// Reserve adds n to the counter at key only if the result is at most
	// limit, atomically, as the charge named charge; it returns the counter
	// after the call and whether the charge holds. A charge already taken
	// adds nothing and reports true, so a call retried after a lost reply
	// (a client timeout, a reconnect) charges once. The charge is remembered
	// for chargeTTL; ttl applies to the counter when it is created. With a
	// hold, its member goes into its index in the same atomic step whenever
	// the charge holds: a reservation is marked pending exactly when taken,
	// in one write rather than two (each an fsync in bbolt).
	Reserve(ctx context.Context, key, charge string, n, limit int64, ttl, chargeTTL time.Duration, hold *Hold) (int64, bool, error)
	// Refund gives back at most n of what charge added to the counter at
	// key, once per part: a repeated call with the same part gives nothing
	// more, and all parts together never give back more than the charge
	// took. It returns how much it gave back (0 for an unknown or expired
	// charge, or a counter that expired).
	Refund(ctx context.Context, key, charge, part string, n int64) (int64, error)

	// IndexAdd puts member into a sorted index with score (replacing its score).
	IndexAdd(ctx context.Context, index, member string, score float64) error
	// IndexAddIfBelow adds member only while fewer than limit members have a
	// score >= floor, atomically; it reports whether it added.
	IndexAddIfBelow(ctx context.Context, index, member string, score, floor float64, limit int64) (bool, error)
	// IndexRemove removes member and reports whether it was there.
	IndexRemove(ctx context.Context, index, member string) (bool, error)
	// IndexRange lists members with min <= score <= max in score order
	// (descending when desc), skipping offset and returning at most count (count < 0: all).
	IndexRange(ctx context.Context, index string, min, max float64, offset, count int, desc bool) ([]string, error)
	// IndexCount counts members with min <= score <= max.
	IndexCount(ctx context.Context, index string, min, max float64) (int64, error)

	// SetAdd adds member to the set at key; it reports whether the member was
	// new and the set's size after the call. ttl is applied when the set is created.
	SetAdd(ctx context.Context, key, member string, ttl time.Duration) (bool, int64, error)
	// SetCard is the set's size (0 when absent).
	SetCard(ctx context.Context, key string) (int64, error)

	// Ready reports whether the store answers.
	Ready(ctx context.Context) error
	Close() error
}
