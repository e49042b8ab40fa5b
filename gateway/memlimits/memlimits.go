// Package memlimits keeps the per-account rate windows and in-flight
// leases of a gateway that is the only one (DESIGN §5), in memory.
//
// In the embedded mode the state store is bbolt, which one process alone
// can open, so one gateway counts every request; what these counters hold
// is worth nothing after a restart (a window's count, the leases of
// requests that died with the process), yet in bbolt each change costs a
// transaction and its fsync on every request's way (issue 21, item 8).
// Scaled out, the gateways share the counters in Redis instead, through
// the same operations of the state store.
package memlimits

import (
	"context"
	"slices"
	"sync"
	"time"
)

// sweepEvery bounds the counters kept: every sweepEvery changes, expired
// windows and indexes left empty are dropped.
const sweepEvery = 1024

// Store holds counters and scored indexes.
type Store struct {
	mu       sync.Mutex
	counters map[string]counter
	indexes  map[string]map[string]float64
	changes  int
	now      func() time.Time
}

type counter struct {
	n   int64
	exp time.Time // zero: never
}

// New returns an empty store.
func New() *Store {
	return &Store{counters: map[string]counter{}, indexes: map[string]map[string]float64{}, now: time.Now}
}

// IncrBy adds delta to the counter at key (absent or expired counts as 0)
// and returns the new value; ttl applies when the counter is created.
func (s *Store) IncrBy(_ context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	c, ok := s.counters[key]
	if !ok || (!c.exp.IsZero() && !now.Before(c.exp)) {
		c = counter{}
		if ttl > 0 {
			c.exp = now.Add(ttl)
		}
	}
	c.n += delta
	s.counters[key] = c
	s.changed(now)
	return c.n, nil
}

// IndexAdd puts member into index with score (replacing its score).
func (s *Store) IndexAdd(_ context.Context, index, member string, score float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(index, member, score)
	return nil
}

// IndexAddIfBelow adds member only while fewer than limit members have a
// score >= floor; it reports whether it added.
func (s *Store) IndexAddIfBelow(_ context.Context, index, member string, score, floor float64, limit int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, sc := range s.indexes[index] {
		if sc >= floor {
			n++
		}
	}
	if n >= limit {
		return false, nil
	}
	s.put(index, member, score)
	return true, nil
}

func (s *Store) put(index, member string, score float64) {
	idx := s.indexes[index]
	if idx == nil {
		idx = map[string]float64{}
		s.indexes[index] = idx
	}
	idx[member] = score
	s.changed(s.now())
}

// IndexRemove removes member and reports whether it was there.
func (s *Store) IndexRemove(_ context.Context, index, member string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.indexes[index]
	if _, ok := idx[member]; !ok {
		return false, nil
	}
	delete(idx, member)
	if len(idx) == 0 {
		delete(s.indexes, index)
	}
	return true, nil
}

// IndexRange lists members with min <= score <= max in score order
// (descending when desc), skipping offset and returning at most count
// (count < 0: all).
func (s *Store) IndexRange(_ context.Context, index string, min, max float64, offset, count int, desc bool) ([]string, error) {
	s.mu.Lock()
	type entry struct {
		member string
		score  float64
	}
	var es []entry
	for m, sc := range s.indexes[index] {
		if sc >= min && sc <= max {
			es = append(es, entry{m, sc})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(es, func(a, b entry) int {
		if a.score != b.score {
			if (a.score < b.score) != desc {
				return -1
			}
			return 1
		}
		if (a.member < b.member) != desc {
			return -1
		}
		return 1
	})
	out := []string{}
	for i, e := range es {
		if i < offset {
			continue
		}
		if count >= 0 && len(out) >= count {
			break
		}
		out = append(out, e.member)
	}
	return out, nil
}

// changed counts a change and, every sweepEvery, drops expired counters.
// Leases are dropped by their owners, or by the limiter's sweep of expired
// ones (IndexRange, IndexRemove).
func (s *Store) changed(now time.Time) {
	s.changes++
	if s.changes%sweepEvery != 0 {
		return
	}
	for k, c := range s.counters {
		if !c.exp.IsZero() && !now.Before(c.exp) {
			delete(s.counters, k)
		}
	}
}
