// Package account holds users, sessions, API keys, plans and usage on top
// of the state store (DESIGN §3). It knows nothing about HTTP: it refuses
// with the errors below and *invalid.Error, which the gateway answers in
// its own words (gateway/server/errors.go).
package account

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/usage"
)

// SessionTTL is how long a session lasts without a new login.
const SessionTTL = 30 * 24 * time.Hour

// User is an account.
type User struct {
	ID           string    `json:"id"`
	Email        string    `json:"email"`
	PasswordHash []byte    `json:"passwordHash"`
	Plan         string    `json:"plan"`
	CreatedAt    time.Time `json:"createdAt"`
	// SigningIdentities are the operator's signing identities (DESIGN §8)
	// this account may sign with, sorted; the operator grants them.
	SigningIdentities []string `json:"signingIdentities,omitempty"`
}

// MaySign reports whether the operator granted the account identity.
func (u *User) MaySign(identity string) bool {
	_, ok := slices.BinarySearch(u.SigningIdentities, identity)
	return ok
}

// Key is an API key record; the key itself is never stored.
type Key struct {
	ID        string     `json:"id"`
	UserID    string     `json:"userId"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	Hash      string     `json:"hash"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	LastUsed  *time.Time `json:"-"`
}

// Service is the account domain.
type Service struct {
	st    state.Store
	usage *usage.Meter
	plans map[string]config.Plan
	def   string
	// selfService are the plans a user may switch to (ChoosePlan).
	selfService map[string]bool
	now         func() time.Time
	// bcryptCost is lowered in tests only.
	bcryptCost int
	// dummyHash is checked against when a login names no account: at
	// the cost of real hashes, so the answer takes as long (made once).
	dummyOnce sync.Once
	dummyHash []byte
}

// New returns the account service.
func New(st state.Store, cfg config.Config) *Service {
	s := &Service{st: st, usage: usage.New(st), plans: cfg.Plans, def: cfg.DefaultPlan, now: time.Now, bcryptCost: bcrypt.DefaultCost,
		selfService: map[string]bool{}}
	for _, p := range cfg.SelfServicePlans {
		s.selfService[p] = true
	}
	// Made now, or the first login without an account would take longer.
	s.dummy()
	return s
}

// dummy is a hash at the cost of the real ones, for emails without an account.
func (s *Service) dummy() []byte {
	s.dummyOnce.Do(func() {
		s.dummyHash, _ = bcrypt.GenerateFromPassword([]byte("docrender-dummy-"+ids.New()), s.bcryptCost)
	})
	return s.dummyHash
}

// Plan returns the limits of a plan name (the default plan for unknown names).
func (s *Service) Plan(name string) config.Plan {
	if p, ok := s.plans[name]; ok {
		return p
	}
	return s.plans[s.def]
}

func userKey(id string) string        { return "user:" + id }
func emailKey(email string) string    { return "email:" + email }
func sessionKey(hash string) string   { return "session:" + hash }
func apiKeyKey(hash string) string    { return "apikey:" + hash }
func keyIDKey(id string) string       { return "keyid:" + id }
func userKeysIndex(uid string) string { return "keys:" + uid }
func disabledKey(uid string) string   { return "disabled:" + uid }

// accountsIndex lists every account by creation time, for operators.
// Accounts made before it existed join it when they next sign in or
// make a key (index).
const accountsIndex = "accounts"

func hashToken(t string) string {
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
}

func (s *Service) getJSON(ctx context.Context, key string, v any) error {
	b, err := s.st.Get(ctx, key)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (s *Service) putJSON(ctx context.Context, key string, v any, ttl time.Duration) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.st.Set(ctx, key, b, ttl)
}

func normEmail(e string) (string, error) {
	e = strings.ToLower(strings.TrimSpace(e))
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || len(e) > 254 {
		return "", invalid.Field("email", "must be a valid email address")
	}
	return e, nil
}

// Register creates a user; a taken email is 409 CONFLICT.
func (s *Service) Register(ctx context.Context, email, password string) (*User, error) {
	email, err := normEmail(email)
	if err != nil {
		return nil, err
	}
	if len(password) < 8 || len(password) > 72 {
		return nil, invalid.Field("password", "must be 8 to 72 characters")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.bcryptCost)
	if err != nil {
		return nil, fmt.Errorf("account: hash password: %w", err)
	}
	u := &User{ID: "usr_" + ids.New(), Email: email, PasswordHash: hash, Plan: s.def, CreatedAt: s.now().UTC()}
	ok, err := s.st.SetNX(ctx, emailKey(email), []byte(u.ID), 0)
	if err != nil {
		return nil, fmt.Errorf("account: register: %w", err)
	}
	if !ok {
		return nil, ErrEmailTaken
	}
	if err := s.putJSON(ctx, userKey(u.ID), u, 0); err != nil {
		return nil, fmt.Errorf("account: register: %w", err)
	}
	if err := s.index(ctx, u); err != nil {
		return nil, fmt.Errorf("account: register: %w", err)
	}
	return u, nil
}

// index puts u in the accounts index (again: the score is its creation
// time, so repeating it changes nothing).
func (s *Service) index(ctx context.Context, u *User) error {
	return s.st.IndexAdd(ctx, accountsIndex, u.ID, float64(u.CreatedAt.UnixNano()))
}

// Why an account operation was refused.
var (
	ErrEmailTaken = errors.New("account: email already registered")
	// ErrDisabled refuses a disabled account's keys, sessions and logins.
	ErrDisabled     = errors.New("account: disabled")
	ErrBadLogin     = errors.New("account: wrong email or password")
	ErrKeyNotFound  = errors.New("account: no such API key")
	ErrNoKey        = errors.New("account: no API key sent")
	ErrMalformedKey = errors.New("account: malformed API key")
	// ErrInvalidKey is an unknown or expired key (or one of a deleted account).
	ErrInvalidKey = errors.New("account: invalid or expired API key")
	ErrRevokedKey = errors.New("account: API key revoked")
)

// PlanNotOfferedError refuses a plan users may not choose themselves.
type PlanNotOfferedError struct {
	Plan string
	// Offered are the plans users may choose.
	Offered []string
}

func (e *PlanNotOfferedError) Error() string {
	return "account: plan " + e.Plan + " is not self-service"
}

// SigningRefusedError refuses a signing identity the account may not use
// (DESIGN §8): one the operator did not grant it, or one that does not
// exist, which the answer does not tell apart.
type SigningRefusedError struct {
	Identity string
}

func (e *SigningRefusedError) Error() string {
	return "account: may not sign with identity " + e.Identity
}

// QuotaError refuses conversions past the plan's monthly limit.
type QuotaError struct {
	Plan              string
	Used, Limit, Need int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("account: %s plan's %d conversions used up (%d used, %d more asked)", e.Plan, e.Limit, e.Used, e.Need)
}

// checkEnabled refuses a disabled account. It is read on every
// authentication, from its own key: an operator's change applies at once,
// on every gateway, and no write of the user record can undo it.
func (s *Service) checkEnabled(ctx context.Context, u *User) error {
	off, err := s.Disabled(ctx, u.ID)
	if err != nil {
		return err
	}
	if off {
		return ErrDisabled
	}
	return nil
}

// Disabled reports whether the operator disabled the account.
func (s *Service) Disabled(ctx context.Context, uid string) (bool, error) {
	_, err := s.st.Get(ctx, disabledKey(uid))
	if errors.Is(err, state.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("account: disabled: %w", err)
	}
	return true, nil
}

// SetDisabled disables or re-enables the account: its keys and sessions
// answer 401 while it is disabled and work again afterwards.
func (s *Service) SetDisabled(ctx context.Context, u *User, off bool) error {
	var err error
	if off {
		err = s.st.Set(ctx, disabledKey(u.ID), []byte("1"), 0)
	} else {
		err = s.st.Delete(ctx, disabledKey(u.ID))
	}
	if err != nil {
		return fmt.Errorf("account: set disabled: %w", err)
	}
	return nil
}

// Accounts lists accounts newest first, page by page (page from 1), with
// the number of accounts in the index.
func (s *Service) Accounts(ctx context.Context, page, limit int) ([]*User, int64, error) {
	total, err := s.st.IndexCount(ctx, accountsIndex, state.MinScore, state.MaxScore)
	if err != nil {
		return nil, 0, fmt.Errorf("account: list: %w", err)
	}
	ids, err := s.st.IndexRange(ctx, accountsIndex, state.MinScore, state.MaxScore, (page-1)*limit, limit, true)
	if err != nil {
		return nil, 0, fmt.Errorf("account: list: %w", err)
	}
	out := make([]*User, 0, len(ids))
	for _, id := range ids {
		u, err := s.User(ctx, id)
		if errors.Is(err, state.ErrNotFound) {
			// Deleted while it was being indexed again: drop the member.
			if ok, _ := s.st.IndexRemove(ctx, accountsIndex, id); ok {
				total--
			}
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		out = append(out, u)
	}
	return out, total, nil
}

// UserByEmail finds the account of an email (compared as Register stores
// it); nil when there is none.
func (s *Service) UserByEmail(ctx context.Context, email string) (*User, error) {
	email, err := normEmail(email)
	if err != nil {
		return nil, err
	}
	id, err := s.st.Get(ctx, emailKey(email))
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("account: by email: %w", err)
	}
	u, err := s.User(ctx, string(id))
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	return u, err
}

// Login checks the password and returns the user.
func (s *Service) Login(ctx context.Context, email, password string) (*User, error) {
	bad := ErrBadLogin
	email, err := normEmail(email)
	if err != nil {
		return nil, bad
	}
	id, err := s.st.Get(ctx, emailKey(email))
	if errors.Is(err, state.ErrNotFound) {
		// Spend the same time as a real check so timing does not reveal accounts.
		_ = bcrypt.CompareHashAndPassword(s.dummy(), []byte(password))
		return nil, bad
	}
	if err != nil {
		return nil, fmt.Errorf("account: login: %w", err)
	}
	u, err := s.User(ctx, string(id))
	if err != nil {
		return nil, bad
	}
	if bcrypt.CompareHashAndPassword(u.PasswordHash, []byte(password)) != nil {
		return nil, bad
	}
	// Only now, so a wrong password learns nothing about the account.
	if err := s.checkEnabled(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// User loads a user by ID.
func (s *Service) User(ctx context.Context, id string) (*User, error) {
	var u User
	if err := s.getJSON(ctx, userKey(id), &u); err != nil {
		return nil, fmt.Errorf("account: user %s: %w", id, err)
	}
	return &u, nil
}

// DeleteUser removes the user; its keys and sessions stop working at once.
func (s *Service) DeleteUser(ctx context.Context, u *User) error {
	if err := s.st.Delete(ctx, userKey(u.ID), emailKey(u.Email), disabledKey(u.ID)); err != nil {
		return err
	}
	_, err := s.st.IndexRemove(ctx, accountsIndex, u.ID)
	return err
}

// SetPlan changes the user's plan to any plan (the operator's way).
func (s *Service) SetPlan(ctx context.Context, u *User, plan string) error {
	plan, err := s.planName(plan)
	if err != nil {
		return err
	}
	return s.updateUser(ctx, u, func(v *User) { v.Plan = plan })
}

// SetSigningIdentities replaces the signing identities the account may
// use (the operator's grant, DESIGN §8); nil or empty grants none. The
// caller has checked the names against the identities there are.
func (s *Service) SetSigningIdentities(ctx context.Context, u *User, names []string) error {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		names = nil
	}
	return s.updateUser(ctx, u, func(v *User) { v.SigningIdentities = names })
}

// updateUser changes one part of the stored user record with change and
// leaves u as stored. The write is fenced by what was read (state.Swap):
// two changes of different parts at once (a user's change of plan, an
// operator's grant) both stay, rather than the later writing back the
// earlier's record as it was before.
func (s *Service) updateUser(ctx context.Context, u *User, change func(*User)) error {
	for range 20 {
		old, err := s.st.Get(ctx, userKey(u.ID))
		if err != nil {
			return fmt.Errorf("account: update %s: %w", u.ID, err)
		}
		var v User
		if err := json.Unmarshal(old, &v); err != nil {
			return fmt.Errorf("account: update %s: %w", u.ID, err)
		}
		change(&v)
		b, err := json.Marshal(&v)
		if err != nil {
			return err
		}
		ok, err := s.st.Swap(ctx, userKey(u.ID), old, b, 0)
		if err != nil {
			return fmt.Errorf("account: update %s: %w", u.ID, err)
		}
		if ok {
			*u = v
			return nil
		}
	}
	return fmt.Errorf("account: update %s: the record kept changing", u.ID)
}

// ChoosePlan is a user's own change of plan: only to a self-service plan
// (DOCRENDER_SELF_SERVICE_PLANS), else 403. Asking for the plan the user
// already has changes nothing and is not refused.
func (s *Service) ChoosePlan(ctx context.Context, u *User, plan string) error {
	plan, err := s.planName(plan)
	if err != nil {
		return err
	}
	if !s.selfService[plan] && plan != u.Plan {
		return &PlanNotOfferedError{Plan: plan, Offered: s.selfServiceNames()}
	}
	return s.SetPlan(ctx, u, plan)
}

// planName normalises a plan name; an unknown one is a 400 naming plan.
func (s *Service) planName(plan string) (string, error) {
	plan = strings.ToLower(strings.TrimSpace(plan))
	if _, ok := s.plans[plan]; !ok {
		return "", invalid.Field("plan", "must be one of "+strings.Join(config.PlanNames, ", "))
	}
	return plan, nil
}

// selfServiceNames are the self-service plans in ascending order.
func (s *Service) selfServiceNames() []string {
	var out []string
	for _, p := range config.PlanNames {
		if s.selfService[p] {
			out = append(out, p)
		}
	}
	return out
}

// NewSession returns a fresh session token for the user.
func (s *Service) NewSession(ctx context.Context, u *User) (string, error) {
	b := make([]byte, 32)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	if err := s.st.Set(ctx, sessionKey(hashToken(tok)), []byte(u.ID), SessionTTL); err != nil {
		return "", fmt.Errorf("account: session: %w", err)
	}
	// An account made before the accounts index joins it here.
	if err := s.index(ctx, u); err != nil {
		return "", fmt.Errorf("account: session: %w", err)
	}
	return tok, nil
}

// Session resolves a session token to its user.
func (s *Service) Session(ctx context.Context, token string) (*User, error) {
	if token == "" || len(token) > 100 {
		return nil, state.ErrNotFound
	}
	id, err := s.st.Get(ctx, sessionKey(hashToken(token)))
	if err != nil {
		return nil, err
	}
	u, err := s.User(ctx, string(id))
	if err != nil {
		return nil, err
	}
	if err := s.checkEnabled(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// EndSession deletes a session.
func (s *Service) EndSession(ctx context.Context, token string) error {
	return s.st.Delete(ctx, sessionKey(hashToken(token)))
}

const (
	keyPrefix = "drk_"
	keyLen    = 40
	base62    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// WellFormedKey reports whether s has the form of an API key.
func WellFormedKey(k string) bool {
	if len(k) != len(keyPrefix)+keyLen || !strings.HasPrefix(k, keyPrefix) {
		return false
	}
	for _, c := range k[len(keyPrefix):] {
		if !strings.ContainsRune(base62, c) {
			return false
		}
	}
	return true
}

func newKeySecret() string {
	var b strings.Builder
	b.WriteString(keyPrefix)
	max := big.NewInt(int64(len(base62)))
	for range keyLen {
		n, _ := rand.Int(rand.Reader, max)
		b.WriteByte(base62[n.Int64()])
	}
	return b.String()
}

// CreateKey makes a key for u and returns the record and the secret, which
// is shown only now.
func (s *Service) CreateKey(ctx context.Context, u *User, name string, expiresAt *time.Time) (*Key, string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "default"
	}
	if len(name) > 100 {
		return nil, "", invalid.Field("name", "at most 100 characters")
	}
	if expiresAt != nil && !expiresAt.After(s.now()) {
		return nil, "", invalid.Field("expiresAt", "must be in the future")
	}
	secret := newKeySecret()
	k := &Key{ID: "key_" + ids.New(), UserID: u.ID, Name: name, Prefix: secret[:8], Hash: hashToken(secret),
		CreatedAt: s.now().UTC(), ExpiresAt: expiresAt}
	if err := s.putJSON(ctx, apiKeyKey(k.Hash), k, 0); err != nil {
		return nil, "", fmt.Errorf("account: create key: %w", err)
	}
	if err := s.putJSON(ctx, keyIDKey(k.ID), k, 0); err != nil {
		return nil, "", fmt.Errorf("account: create key: %w", err)
	}
	if err := s.st.IndexAdd(ctx, userKeysIndex(u.ID), k.ID, float64(k.CreatedAt.UnixNano())); err != nil {
		return nil, "", fmt.Errorf("account: create key: %w", err)
	}
	// An account made before the accounts index joins it here.
	if err := s.index(ctx, u); err != nil {
		return nil, "", fmt.Errorf("account: create key: %w", err)
	}
	return k, secret, nil
}

// Keys lists u's keys, newest first, without secrets.
func (s *Service) Keys(ctx context.Context, u *User) ([]*Key, error) {
	ids, err := s.st.IndexRange(ctx, userKeysIndex(u.ID), state.MinScore, state.MaxScore, 0, -1, true)
	if err != nil {
		return nil, fmt.Errorf("account: keys: %w", err)
	}
	out := make([]*Key, 0, len(ids))
	for _, id := range ids {
		var k Key
		if err := s.getJSON(ctx, keyIDKey(id), &k); err == nil {
			out = append(out, &k)
		}
	}
	return out, nil
}

// RevokeKey revokes one of u's keys at once.
func (s *Service) RevokeKey(ctx context.Context, u *User, id string) error {
	var k Key
	if err := s.getJSON(ctx, keyIDKey(id), &k); err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return ErrKeyNotFound
		}
		return fmt.Errorf("account: revoke: %w", err)
	}
	if k.UserID != u.ID {
		return ErrKeyNotFound
	}
	now := s.now().UTC()
	k.RevokedAt = &now
	// The hash entry stays as a tombstone so the key answers "revoked".
	if err := s.putJSON(ctx, apiKeyKey(k.Hash), &k, 0); err != nil {
		return fmt.Errorf("account: revoke: %w", err)
	}
	if err := s.st.Delete(ctx, keyIDKey(id)); err != nil {
		return fmt.Errorf("account: revoke: %w", err)
	}
	_, err := s.st.IndexRemove(ctx, userKeysIndex(u.ID), id)
	return err
}

// Authenticate resolves an API key to its user with the 401s of spec §5.
func (s *Service) Authenticate(ctx context.Context, secret string) (*User, *Key, error) {
	if secret == "" {
		return nil, nil, ErrNoKey
	}
	if !WellFormedKey(secret) {
		return nil, nil, ErrMalformedKey
	}
	var k Key
	if err := s.getJSON(ctx, apiKeyKey(hashToken(secret)), &k); err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return nil, nil, ErrInvalidKey
		}
		return nil, nil, fmt.Errorf("account: authenticate: %w", err)
	}
	if k.RevokedAt != nil {
		return nil, nil, ErrRevokedKey
	}
	if k.ExpiresAt != nil && !s.now().Before(*k.ExpiresAt) {
		return nil, nil, ErrInvalidKey
	}
	u, err := s.User(ctx, k.UserID)
	if err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return nil, nil, ErrInvalidKey
		}
		return nil, nil, err
	}
	if err := s.checkEnabled(ctx, u); err != nil {
		return nil, nil, err
	}
	return u, &k, nil
}

// ReserveConversions takes n conversions from u's monthly allowance for
// the job or batch id, all or none, atomically across every gateway and
// once however often it is retried. Give them back with
// ReleaseConversions if the work produces nothing, or keep them with
// CommitConversions; one that is neither within hold is given back.
func (s *Service) ReserveConversions(ctx context.Context, u *User, id string, n int64, hold, life time.Duration) (usage.Reservation, error) {
	p := s.Plan(u.Plan)
	r, err := s.usage.Reserve(ctx, usage.Ask{ID: id, Account: u.ID, N: n, Limit: p.Conversions, Hold: hold, Life: life})
	var over *usage.LimitError
	if errors.As(err, &over) {
		return r, &QuotaError{Plan: p.Name, Used: over.Used, Limit: p.Conversions, Need: n}
	}
	if err != nil {
		return r, fmt.Errorf("account: %w", err)
	}
	return r, nil
}

// CommitConversions keeps r: the work it paid for is done or owned elsewhere.
func (s *Service) CommitConversions(ctx context.Context, r usage.Reservation) error {
	return s.usage.Commit(ctx, r)
}

// ReleaseConversions gives back all of r.
func (s *Service) ReleaseConversions(ctx context.Context, r usage.Reservation) error {
	return s.usage.ReleaseAll(ctx, r)
}

// ConversionsUsed is this month's count.
func (s *Service) ConversionsUsed(ctx context.Context, u *User) (int64, error) {
	return s.usage.Used(ctx, u.ID)
}
