// Package idempotency keeps what a request sent with an Idempotency-Key
// came to (DESIGN §4.20), so that a client cut off by a restart or its own
// timeout can send the request again and get the same outcome, charged
// once: a request still running is joined, a finished one answered again.
//
// Records live in the state store (bbolt or Redis) under the account's ID,
// so one account never reaches another's, for a fixed window (24 hours)
// from the first request. A record holds the request's fingerprint and, once
// the request succeeded, its Outcome: small (a JSON answer of at most
// MaxBody bytes, or the ID of a stored file or batch), never the document's
// bytes, which stay in the blob store as stored files that expire with it.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/state"
)

// Bounds of a record.
const (
	// Window is how long a key is remembered, from its first request.
	Window = 24 * time.Hour
	// MaxKey bounds a key's length (DESIGN §4.20: 1–255 printable ASCII).
	MaxKey = 255
	// MaxBody bounds a JSON answer kept in a record.
	MaxBody = 64 << 10
)

// ErrConflict is a key already used for a different request.
var ErrConflict = errors.New("idempotency: key already used for a different request")

// ErrBadKey is a key that is empty, too long or not printable ASCII.
var ErrBadKey = errors.New("idempotency: bad key")

// CheckKey reports whether key is 1–255 printable ASCII characters.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKey {
		return fmt.Errorf("%w: must be 1 to %d characters", ErrBadKey, MaxKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return fmt.Errorf("%w: only printable ASCII characters", ErrBadKey)
		}
	}
	return nil
}

// Outcome is what a request came to, enough to answer it again.
type Outcome struct {
	Status int `json:"status"`
	// Header holds the answer's headers worth answering again.
	Header map[string]string `json:"header,omitempty"`
	// Body is a JSON answer as sent.
	Body []byte `json:"body,omitempty"`
	// FileID names the stored file whose bytes were the answer.
	FileID string `json:"fileId,omitempty"`
	// BatchID names the batch the request started: a retry joins it.
	BatchID string `json:"batchId,omitempty"`
	// raw is the record it was read from (Forget swaps from it).
	raw []byte
}

// record is a key's state: running under a lease, or done with an outcome.
type record struct {
	Fingerprint string    `json:"fp"`
	Holder      string    `json:"holder"`
	Process     string    `json:"process"`
	Created     time.Time `json:"created"`
	LeaseUntil  time.Time `json:"lease"`
	Outcome     *Outcome  `json:"outcome,omitempty"`
}

// Store keeps records in a state store.
type Store struct {
	st state.Store
	// Lease is how long a running request holds its key without renewing
	// it: a gateway that died mid-request frees the key after at most this.
	Lease time.Duration
	// Poll is how often a joined request looks at the one it waits for.
	Poll time.Duration
	now  func() time.Time
	// process names this run of the process in the claims it makes.
	process string
	// only: no other process shares the store, so a claim of another
	// process (an earlier run, which crashed or was stopped mid-request)
	// is dead whatever its lease says.
	only bool
}

// New keeps records in st.
func New(st state.Store) *Store {
	return &Store{st: st, Lease: 30 * time.Second, Poll: 100 * time.Millisecond, now: time.Now, process: ids.New()}
}

// OnlyProcess says that no other process uses the store (bbolt): a request
// left running by an earlier run is taken over by its retry at once, not
// after its lease.
func (s *Store) OnlyProcess() { s.only = true }

// recordKey is the key's record for account; the client's key is hashed,
// so any printable key makes a safe store key of fixed length.
func recordKey(account, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "idem:" + account + ":" + hex.EncodeToString(sum[:])
}

// Begin starts the request that account sends with key and fingerprint
// (a hash of everything the request asks for). It returns a Claim when this
// request is to run, the Outcome when the same request already succeeded,
// or ErrConflict when the key was used for a different request. While the
// same request runs elsewhere, Begin waits for it (until ctx ends): it
// succeeds (its outcome), fails (this request runs afresh) or its gateway
// dies (the lease passes and this request takes over).
//
// Every write after the first is a Swap from the record its writer last
// saw: of two requests that both think they hold the key (one was slow to
// renew its lease and lost it), only one writes.
func (s *Store) Begin(ctx context.Context, account, key, fingerprint string) (*Claim, *Outcome, error) {
	rk := recordKey(account, key)
	for {
		now := s.now().UTC()
		mine := record{Fingerprint: fingerprint, Holder: ids.New(), Process: s.process, Created: now, LeaseUntil: now.Add(s.Lease)}
		b, err := json.Marshal(mine)
		if err != nil {
			return nil, nil, err
		}
		ok, err := s.st.SetNX(ctx, rk, b, Window)
		if err != nil {
			return nil, nil, fmt.Errorf("idempotency: claim: %w", err)
		}
		if ok {
			return s.claim(rk, mine, b), nil, nil
		}
		raw, err := s.st.Get(ctx, rk)
		if errors.Is(err, state.ErrNotFound) {
			continue // it failed and was forgotten just now: run afresh
		}
		if err != nil {
			return nil, nil, fmt.Errorf("idempotency: read: %w", err)
		}
		var old record
		if err := json.Unmarshal(raw, &old); err != nil {
			return nil, nil, fmt.Errorf("idempotency: read: %w", err)
		}
		if old.Fingerprint != fingerprint {
			return nil, nil, ErrConflict
		}
		if old.Outcome != nil {
			o := *old.Outcome
			o.raw = raw
			return nil, &o, nil
		}
		if now.After(old.LeaseUntil) || (s.only && old.Process != s.process) {
			// Its gateway died: one waiting request takes over, the others
			// go on waiting, now for it.
			mine.Created = old.Created
			if b, err = json.Marshal(mine); err != nil {
				return nil, nil, err
			}
			ok, err := s.st.Swap(ctx, rk, raw, b, s.ttl(mine))
			if err != nil {
				return nil, nil, fmt.Errorf("idempotency: take over: %w", err)
			}
			if ok {
				return s.claim(rk, mine, b), nil, nil
			}
			continue // another took it over, or it changed: look again
		}
		t := time.NewTimer(s.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C:
		}
	}
}

// Forget deletes account's record of key if it still holds o: an outcome
// that can no longer be answered (its stored file was deleted, its batch
// failed) is judged afresh.
func (s *Store) Forget(ctx context.Context, account, key string, o *Outcome) error {
	if _, err := s.st.Swap(ctx, recordKey(account, key), o.raw, nil, 0); err != nil {
		return fmt.Errorf("idempotency: forget: %w", err)
	}
	return nil
}

// ttl is what is left of r's window.
func (s *Store) ttl(r record) time.Duration {
	return max(r.Created.Add(Window).Sub(s.now()), time.Second)
}

// ErrLost is a claim whose lease passed and which another request took
// over: its outcome is not kept.
var ErrLost = errors.New("idempotency: the key was taken over by a retry")

// Claim is a running request's hold on its key. It renews its lease until
// Keep or Drop, or until it finds the key taken over.
type Claim struct {
	s  *Store
	rk string
	// wmu orders the claim's writes (renewals, Keep, Drop): each swaps
	// from raw, the record as last written.
	wmu sync.Mutex
	rec record
	raw []byte
	// mu guards the state the answer path reads.
	mu         sync.Mutex
	done, kept bool
	stop       chan struct{}
}

func (s *Store) claim(rk string, r record, raw []byte) *Claim {
	c := &Claim{s: s, rk: rk, rec: r, raw: raw, stop: make(chan struct{})}
	go c.renew()
	return c
}

// renew moves the lease on while the request runs.
func (c *Claim) renew() {
	t := time.NewTicker(c.s.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		// A renewal that fails is tried again at the next tick.
		if lost, _ := c.write(context.Background(), func(r *record) { r.LeaseUntil = c.s.now().UTC().Add(c.s.Lease) }); lost {
			return
		}
	}
}

// write swaps the record, changed by edit (nil: deleted), from what the
// claim last wrote; lost reports that the key was found taken over.
func (c *Claim) write(ctx context.Context, edit func(*record)) (lost bool, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	next := c.rec
	var b []byte
	if edit != nil {
		edit(&next)
		if b, err = json.Marshal(next); err != nil {
			return false, err
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.s.Lease/3)
	defer cancel()
	ok, err := c.s.st.Swap(ctx, c.rk, c.raw, b, c.s.ttl(next))
	if err != nil {
		return false, fmt.Errorf("idempotency: write: %w", err)
	}
	if !ok {
		return true, nil
	}
	c.rec, c.raw = next, b
	return false, nil
}

// end stops the renewal; it reports false when the claim had already ended.
func (c *Claim) end(kept bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return false
	}
	c.done, c.kept = true, kept
	close(c.stop)
	return true
}

// Keep records the request's outcome: every later request with the key is
// answered with it until the window ends. ErrLost: a retry took the key
// over meanwhile (this claim's lease had passed), and its outcome counts.
func (c *Claim) Keep(ctx context.Context, o Outcome) error {
	if !c.end(true) {
		return nil
	}
	lost, err := c.write(ctx, func(r *record) { r.Outcome = &o })
	if lost {
		return ErrLost
	}
	return err
}

// Kept reports whether the claim ended with its outcome kept.
func (c *Claim) Kept() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kept
}

// Drop forgets the key: the request failed, and a retry runs afresh
// (DESIGN §4.20: a 4xx or 5xx outcome is not kept). A key taken over by a
// retry is the retry's and stays.
func (c *Claim) Drop(ctx context.Context) error {
	if !c.end(false) {
		return nil
	}
	_, err := c.write(ctx, nil)
	return err
}
