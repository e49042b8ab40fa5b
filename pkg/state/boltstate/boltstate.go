// Package boltstate is the embedded state.Store: one bbolt file under the
// data directory. bbolt serialises writers, which makes every primitive
// atomic without further locking.
package boltstate

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/docrender/docrender/pkg/state"
)

var (
	bucketKV      = []byte("kv")
	bucketIndex   = []byte("idx")
	bucketSet     = []byte("set")
	bucketSetMeta = []byte("setmeta")
	subMembers    = []byte("m")
	subScores     = []byte("s")
)

// Store is a state.Store on bbolt.
type Store struct {
	db   *bolt.DB
	stop chan struct{}
	done chan struct{}
	now  func() time.Time
}

// Open opens or creates the database file and starts the expiry sweeper.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("boltstate: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketKV, bucketIndex, bucketSet, bucketSetMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstate: init: %w", err)
	}
	s := &Store{db: db, stop: make(chan struct{}), done: make(chan struct{}), now: time.Now}
	go s.sweep(time.Minute)
	return s, nil
}

// Close stops the sweeper and closes the file.
func (s *Store) Close() error {
	close(s.stop)
	<-s.done
	return s.db.Close()
}

func (s *Store) Ready(context.Context) error {
	return s.db.View(func(*bolt.Tx) error { return nil })
}

// An entry is 8 bytes of expiry (unix nanoseconds, 0 = never) and the value.
func (s *Store) encode(val []byte, ttl time.Duration) []byte {
	out := make([]byte, 8+len(val))
	if ttl > 0 {
		binary.BigEndian.PutUint64(out, uint64(s.now().Add(ttl).UnixNano()))
	}
	copy(out[8:], val)
	return out
}

func (s *Store) live(raw []byte) ([]byte, bool) {
	if len(raw) < 8 {
		return nil, false
	}
	exp := int64(binary.BigEndian.Uint64(raw))
	if exp != 0 && s.now().UnixNano() >= exp {
		return nil, false
	}
	return raw[8:], true
}

func (s *Store) Get(_ context.Context, key string) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v, ok := s.live(tx.Bucket(bucketKV).Get([]byte(key)))
		if !ok {
			return state.ErrNotFound
		}
		out = bytes.Clone(v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstate: get %s: %w", key, err)
	}
	return out, nil
}

func (s *Store) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	return s.update("set", key, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketKV).Put([]byte(key), s.encode(value, ttl))
	})
}

func (s *Store) SetNX(_ context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	var added bool
	err := s.update("setnx", key, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKV)
		if _, ok := s.live(b.Get([]byte(key))); ok {
			return nil
		}
		added = true
		return b.Put([]byte(key), s.encode(value, ttl))
	})
	return added, err
}

func (s *Store) Swap(_ context.Context, key string, old, value []byte, ttl time.Duration) (bool, error) {
	var swapped bool
	err := s.update("swap", key, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKV)
		if cur, ok := s.live(b.Get([]byte(key))); !ok || !bytes.Equal(cur, old) {
			return nil
		}
		swapped = true
		if value == nil {
			return b.Delete([]byte(key))
		}
		return b.Put([]byte(key), s.encode(value, ttl))
	})
	return swapped, err
}

func (s *Store) Delete(_ context.Context, keys ...string) error {
	return s.update("delete", fmt.Sprint(keys), func(tx *bolt.Tx) error {
		for _, k := range keys {
			if err := tx.Bucket(bucketKV).Delete([]byte(k)); err != nil {
				return err
			}
			for _, b := range [][]byte{bucketIndex, bucketSet} {
				if err := tx.Bucket(b).DeleteBucket([]byte(k)); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
					return err
				}
			}
			if err := tx.Bucket(bucketSetMeta).Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
}

// counter reads the integer at key inside tx.
func (s *Store) counter(tx *bolt.Tx, key string) (int64, []byte, error) {
	raw := tx.Bucket(bucketKV).Get([]byte(key))
	v, ok := s.live(raw)
	if !ok {
		return 0, nil, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("value is not an integer: %w", err)
	}
	return n, raw[:8], nil
}

func (s *Store) putCounter(tx *bolt.Tx, key string, n int64, expHeader []byte, ttl time.Duration) error {
	val := []byte(strconv.FormatInt(n, 10))
	var out []byte
	if expHeader != nil {
		out = append(bytes.Clone(expHeader), val...)
	} else {
		out = s.encode(val, ttl)
	}
	return tx.Bucket(bucketKV).Put([]byte(key), out)
}

func (s *Store) IncrBy(_ context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	var n int64
	err := s.update("incr", key, func(tx *bolt.Tx) error {
		cur, hdr, err := s.counter(tx, key)
		if err != nil {
			return err
		}
		n = cur + delta
		return s.putCounter(tx, key, n, hdr, ttl)
	})
	return n, err
}

// chargeRecord is what a charge remembers: what it took, what it gave
// back, and the parts that gave back.
type chargeRecord struct {
	N     int64           `json:"n"`
	R     int64           `json:"r"`
	Parts map[string]bool `json:"p,omitempty"`
}

func chargeKey(counter, charge string) []byte { return []byte(counter + "#charge:" + charge) }

func (s *Store) Reserve(_ context.Context, key, charge string, n, limit int64, ttl, chargeTTL time.Duration, hold *state.Hold) (int64, bool, error) {
	var val int64
	var ok bool
	err := s.update("reserve", key, func(tx *bolt.Tx) error {
		cur, hdr, err := s.counter(tx, key)
		if err != nil {
			return err
		}
		val = cur
		kv := tx.Bucket(bucketKV)
		if _, taken := s.live(kv.Get(chargeKey(key, charge))); taken {
			ok = true
			return putHold(tx, hold)
		}
		if cur+n > limit {
			return nil
		}
		val, ok = cur+n, true
		rec, err := json.Marshal(chargeRecord{N: n})
		if err != nil {
			return err
		}
		if err := kv.Put(chargeKey(key, charge), s.encode(rec, max(chargeTTL, time.Millisecond))); err != nil {
			return err
		}
		if err := s.putCounter(tx, key, val, hdr, ttl); err != nil {
			return err
		}
		return putHold(tx, hold)
	})
	return val, ok, err
}

// putHold adds a Reserve's hold to its index, in the reserve's transaction.
func putHold(tx *bolt.Tx, h *state.Hold) error {
	if h == nil {
		return nil
	}
	m, sc, err := indexBuckets(tx, h.Index, true)
	if err != nil {
		return err
	}
	return indexPut(m, sc, h.Member, h.Score)
}

func (s *Store) Refund(_ context.Context, key, charge, part string, n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	var given int64
	err := s.update("refund", key, func(tx *bolt.Tx) error {
		kv := tx.Bucket(bucketKV)
		raw := kv.Get(chargeKey(key, charge))
		v, ok := s.live(raw)
		if !ok {
			return nil
		}
		var rec chargeRecord
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("charge record: %w", err)
		}
		cur, hdr, err := s.counter(tx, key)
		// A counter that expired is not created again with a negative count.
		if err != nil || hdr == nil || rec.Parts[part] {
			return err
		}
		given = min(n, rec.N-rec.R)
		if given <= 0 {
			given = 0
			return nil
		}
		rec.R += given
		if rec.Parts == nil {
			rec.Parts = map[string]bool{}
		}
		rec.Parts[part] = true
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		// The record keeps its expiry (the first 8 bytes of the entry).
		if err := kv.Put(chargeKey(key, charge), append(bytes.Clone(raw[:8]), b...)); err != nil {
			return err
		}
		return s.putCounter(tx, key, cur-given, hdr, 0)
	})
	return given, err
}

// sortable encodes a float so that byte order equals numeric order.
func sortable(f float64) []byte {
	bits := math.Float64bits(f)
	if bits&(1<<63) == 0 {
		bits ^= 1 << 63
	} else {
		bits = ^bits
	}
	return binary.BigEndian.AppendUint64(nil, bits)
}

func unsortable(b []byte) float64 {
	bits := binary.BigEndian.Uint64(b)
	if bits&(1<<63) != 0 {
		bits ^= 1 << 63
	} else {
		bits = ^bits
	}
	return math.Float64frombits(bits)
}

func indexBuckets(tx *bolt.Tx, index string, create bool) (members, scores *bolt.Bucket, err error) {
	root := tx.Bucket(bucketIndex)
	b := root.Bucket([]byte(index))
	if b == nil {
		if !create {
			return nil, nil, nil
		}
		if b, err = root.CreateBucket([]byte(index)); err != nil {
			return nil, nil, err
		}
		if _, err = b.CreateBucket(subMembers); err != nil {
			return nil, nil, err
		}
		if _, err = b.CreateBucket(subScores); err != nil {
			return nil, nil, err
		}
	}
	return b.Bucket(subMembers), b.Bucket(subScores), nil
}

func indexPut(members, scores *bolt.Bucket, member string, score float64) error {
	if old := members.Get([]byte(member)); old != nil {
		if err := scores.Delete(append(bytes.Clone(old), member...)); err != nil {
			return err
		}
	}
	enc := sortable(score)
	if err := members.Put([]byte(member), enc); err != nil {
		return err
	}
	return scores.Put(append(enc, member...), nil)
}

func (s *Store) IndexAdd(_ context.Context, index, member string, score float64) error {
	return s.update("index add", index, func(tx *bolt.Tx) error {
		m, sc, err := indexBuckets(tx, index, true)
		if err != nil {
			return err
		}
		return indexPut(m, sc, member, score)
	})
}

func (s *Store) IndexAddIfBelow(_ context.Context, index, member string, score, floor float64, limit int64) (bool, error) {
	var added bool
	err := s.update("index add if below", index, func(tx *bolt.Tx) error {
		m, sc, err := indexBuckets(tx, index, true)
		if err != nil {
			return err
		}
		if countRange(sc, floor, math.Inf(1)) >= limit {
			return nil
		}
		added = true
		return indexPut(m, sc, member, score)
	})
	return added, err
}

func (s *Store) IndexRemove(_ context.Context, index, member string) (bool, error) {
	var removed bool
	err := s.update("index remove", index, func(tx *bolt.Tx) error {
		m, sc, err := indexBuckets(tx, index, false)
		if err != nil || m == nil {
			return err
		}
		old := m.Get([]byte(member))
		if old == nil {
			return nil
		}
		removed = true
		if err := sc.Delete(append(bytes.Clone(old), member...)); err != nil {
			return err
		}
		return m.Delete([]byte(member))
	})
	return removed, err
}

// walk calls fn for each member with min <= score <= max in order until fn returns false.
func walk(sc *bolt.Bucket, min, max float64, desc bool, fn func(member string) bool) {
	c := sc.Cursor()
	inRange := func(k []byte) bool {
		f := unsortable(k[:8])
		return f >= min && f <= max
	}
	var k []byte
	if desc {
		// Position on the last key with score <= max.
		upper := sortable(max)
		k, _ = c.Seek(append(upper, 0xff, 0xff, 0xff, 0xff))
		if k == nil {
			k, _ = c.Last()
		}
		for k != nil && unsortable(k[:8]) > max {
			k, _ = c.Prev()
		}
		for ; k != nil && inRange(k); k, _ = c.Prev() {
			if !fn(string(k[8:])) {
				return
			}
		}
		return
	}
	for k, _ = c.Seek(sortable(min)); k != nil && inRange(k); k, _ = c.Next() {
		if !fn(string(k[8:])) {
			return
		}
	}
}

func countRange(sc *bolt.Bucket, min, max float64) int64 {
	var n int64
	walk(sc, min, max, false, func(string) bool { n++; return true })
	return n
}

func (s *Store) IndexRange(_ context.Context, index string, min, max float64, offset, count int, desc bool) ([]string, error) {
	out := []string{}
	err := s.db.View(func(tx *bolt.Tx) error {
		_, sc, err := indexBuckets(tx, index, false)
		if err != nil || sc == nil {
			return err
		}
		skip := offset
		walk(sc, min, max, desc, func(m string) bool {
			if skip > 0 {
				skip--
				return true
			}
			if count >= 0 && len(out) >= count {
				return false
			}
			out = append(out, m)
			return true
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstate: index range %s: %w", index, err)
	}
	return out, nil
}

func (s *Store) IndexCount(_ context.Context, index string, min, max float64) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		_, sc, err := indexBuckets(tx, index, false)
		if err != nil || sc == nil {
			return err
		}
		n = countRange(sc, min, max)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("boltstate: index count %s: %w", index, err)
	}
	return n, nil
}

// setMeta holds a set's expiry header and size, so SetCard needs no scan.
func (s *Store) setMeta(tx *bolt.Tx, key string) (int64, []byte, bool) {
	raw := tx.Bucket(bucketSetMeta).Get([]byte(key))
	v, ok := s.live(raw)
	if !ok {
		return 0, nil, false
	}
	return int64(binary.BigEndian.Uint64(v)), raw[:8], true
}

func (s *Store) SetAdd(_ context.Context, key, member string, ttl time.Duration) (bool, int64, error) {
	var added bool
	var card int64
	err := s.update("set add", key, func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketSet)
		n, hdr, ok := s.setMeta(tx, key)
		if !ok {
			// Absent or expired: start afresh.
			if err := root.DeleteBucket([]byte(key)); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return err
			}
			n, hdr = 0, s.encode(nil, ttl)[:8]
		}
		b, err := root.CreateBucketIfNotExists([]byte(key))
		if err != nil {
			return err
		}
		card = n
		if b.Get([]byte(member)) != nil {
			if !ok {
				return tx.Bucket(bucketSetMeta).Put([]byte(key), binary.BigEndian.AppendUint64(bytes.Clone(hdr), uint64(n)))
			}
			return nil
		}
		added, card = true, n+1
		if err := b.Put([]byte(member), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketSetMeta).Put([]byte(key), binary.BigEndian.AppendUint64(bytes.Clone(hdr), uint64(card)))
	})
	return added, card, err
}

func (s *Store) SetCard(_ context.Context, key string) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		n, _, _ = s.setMeta(tx, key)
		return nil
	})
	return n, err
}

func (s *Store) update(op, key string, fn func(tx *bolt.Tx) error) error {
	if err := s.db.Update(fn); err != nil {
		return fmt.Errorf("boltstate: %s %s: %w", op, key, err)
	}
	return nil
}

// sweep deletes expired keys and sets so the file does not grow without bound.
func (s *Store) sweep(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.SweepExpired()
		}
	}
}

// SweepExpired removes every expired key now.
func (s *Store) SweepExpired() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		var dead [][]byte
		for _, name := range [][]byte{bucketKV, bucketSetMeta} {
			dead = dead[:0]
			b := tx.Bucket(name)
			_ = b.ForEach(func(k, v []byte) error {
				if _, ok := s.live(v); !ok {
					dead = append(dead, bytes.Clone(k))
				}
				return nil
			})
			for _, k := range dead {
				if err := b.Delete(k); err != nil {
					return err
				}
				if bytes.Equal(name, bucketSetMeta) {
					if err := tx.Bucket(bucketSet).DeleteBucket(k); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
						return err
					}
				}
			}
		}
		return nil
	})
}

var _ state.Store = (*Store)(nil)
