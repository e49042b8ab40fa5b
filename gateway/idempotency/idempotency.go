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

func takeoverKey(rk string) string { return rk + ":takeover" }

// Begin starts the request that account sends with key and fingerprint
// (a hash of everything the request asks for). It returns a Claim when this
// request is to run, the Outcome when the same request already succeeded,
// or ErrConflict when the key was used for a different request. While the
// same request runs elsewhere, Begin waits for it (until ctx ends): it
// succeeds (its outcome), fails (this request runs afresh) or its gateway
// dies (the lease passes and this request takes over).
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
			return s.claim(rk, mine), nil, nil
		}
		old, err := s.get(ctx, rk)
		if errors.Is(err, state.ErrNotFound) {
			continue // it failed and was forgotten just now: run afresh
		}
		if err != nil {
			return nil, nil, err
		}
		if old.Fingerprint != fingerprint {
			return nil, nil, ErrConflict
		}
		if old.Outcome != nil {
			return nil, old.Outcome, nil
		}
		if now.After(old.LeaseUntil) || (s.only && old.Process != s.process) {
			// Its gateway died: one waiting request takes over, the others
			// go on waiting, now for it.
			mine.Created = old.Created
			if ok, err := s.st.SetNX(ctx, takeoverKey(rk), []byte(mine.Holder), s.Lease); err != nil {
				return nil, nil, fmt.Errorf("idempotency: take over: %w", err)
			} else if ok {
				if err := s.put(ctx, rk, mine); err != nil {
					return nil, nil, err
				}
				return s.claim(rk, mine), nil, nil
			}
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

// Forget deletes account's record of key: an outcome that can no longer be
// answered (its stored file was deleted) is judged afresh.
func (s *Store) Forget(ctx context.Context, account, key string) error {
	rk := recordKey(account, key)
	if err := s.st.Delete(ctx, rk, takeoverKey(rk)); err != nil {
		return fmt.Errorf("idempotency: forget: %w", err)
	}
	return nil
}

func (s *Store) get(ctx context.Context, rk string) (record, error) {
	var r record
	b, err := s.st.Get(ctx, rk)
	if err != nil {
		return r, fmt.Errorf("idempotency: read: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("idempotency: read: %w", err)
	}
	return r, nil
}

// put writes r for what is left of its window.
func (s *Store) put(ctx context.Context, rk string, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ttl := r.Created.Add(Window).Sub(s.now())
	if ttl < time.Second {
		ttl = time.Second
	}
	if err := s.st.Set(ctx, rk, b, ttl); err != nil {
		return fmt.Errorf("idempotency: write: %w", err)
	}
	return nil
}

// Claim is a running request's hold on its key. It renews its lease until
// Keep or Drop.
type Claim struct {
	s    *Store
	rk   string
	mu   sync.Mutex
	rec  record
	done bool
	stop chan struct{}
}

func (s *Store) claim(rk string, r record) *Claim {
	c := &Claim{s: s, rk: rk, rec: r, stop: make(chan struct{})}
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
		c.mu.Lock()
		if !c.done {
			ctx, cancel := context.WithTimeout(context.Background(), c.s.Lease/3)
			c.rec.LeaseUntil = c.s.now().UTC().Add(c.s.Lease)
			_ = c.s.put(ctx, c.rk, c.rec) // a missed renewal is retried next tick
			cancel()
		}
		c.mu.Unlock()
	}
}

// end stops the renewal, with o as the outcome (nil: dropped); it reports
// false when the claim had already ended.
func (c *Claim) end(o *Outcome) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return false
	}
	c.done, c.rec.Outcome = true, o
	close(c.stop)
	return true
}

// Keep records the request's outcome: every later request with the key is
// answered with it until the window ends.
func (c *Claim) Keep(ctx context.Context, o Outcome) error {
	if !c.end(&o) {
		return nil
	}
	return c.s.put(context.WithoutCancel(ctx), c.rk, c.rec)
}

// Kept reports whether the claim ended (kept or dropped).
func (c *Claim) Kept() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done && c.rec.Outcome != nil
}

// Drop forgets the key: the request failed, and a retry runs afresh
// (DESIGN §4.20: a 4xx or 5xx outcome is not kept).
func (c *Claim) Drop(ctx context.Context) error {
	if !c.end(nil) {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if cur, err := c.s.get(ctx, c.rk); err != nil || cur.Holder != c.rec.Holder {
		return nil // gone already, or taken over by a retry after a lost lease: theirs now
	}
	if err := c.s.st.Delete(ctx, c.rk, takeoverKey(c.rk)); err != nil {
		return fmt.Errorf("idempotency: drop: %w", err)
	}
	return nil
}
