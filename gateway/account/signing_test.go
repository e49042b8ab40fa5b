package account

import (
	"context"
	"slices"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/state/statetest"
)

func serviceOn(t *testing.T, st state.Store) *Service {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s := New(st, cfg)
	s.bcryptCost = bcrypt.MinCost
	return s
}

// The operator's grant of signing identities is part of the account
// record in either store: stored sorted and once each, read back by every
// way in, replaced whole, and emptied.
func TestSigningIdentities(t *testing.T) {
	ctx := context.Background()
	for name, st := range statetest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			s := serviceOn(t, st)
			email := ids.New() + "@example.com"
			u, err := s.Register(ctx, email, "correct horse")
			if err != nil {
				t.Fatal(err)
			}
			if u.SigningIdentities != nil || u.MaySign("acme") {
				t.Fatalf("a new account may sign with %q", u.SigningIdentities)
			}
			_, key, err := s.CreateKey(ctx, u, "k", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				grant []string
				want  []string
			}{
				{[]string{"zeta", "acme", "acme"}, []string{"acme", "zeta"}},
				{[]string{"beta"}, []string{"beta"}},
				{[]string{}, nil},
				{[]string{"acme"}, []string{"acme"}},
				{nil, nil},
			} {
				if err := s.SetSigningIdentities(ctx, u, tc.grant); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(u.SigningIdentities, tc.want) {
					t.Errorf("grant %q: the caller's record has %q, want %q", tc.grant, u.SigningIdentities, tc.want)
				}
				byID, err := s.User(ctx, u.ID)
				if err != nil {
					t.Fatal(err)
				}
				byKey, _, err := s.Authenticate(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				byEmail, err := s.UserByEmail(ctx, email)
				if err != nil {
					t.Fatal(err)
				}
				for way, got := range map[string]*User{"id": byID, "key": byKey, "email": byEmail} {
					if !slices.Equal(got.SigningIdentities, tc.want) {
						t.Errorf("grant %q: read by %s: %q, want %q", tc.grant, way, got.SigningIdentities, tc.want)
					}
					for _, id := range []string{"acme", "beta", "zeta", "other"} {
						if got.MaySign(id) != slices.Contains(tc.want, id) {
							t.Errorf("grant %q: MaySign(%q) = %v", tc.grant, id, got.MaySign(id))
						}
					}
				}
			}
		})
	}
}

// A grant and a change of plan made at once from records read before
// either both stay: neither writes back the other's stale record.
func TestGrantAndPlanChangeAtOnce(t *testing.T) {
	ctx := context.Background()
	for name, st := range statetest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			s := serviceOn(t, st)
			for range 10 {
				u, err := s.Register(ctx, ids.New()+"@example.com", "correct horse")
				if err != nil {
					t.Fatal(err)
				}
				// Each writer holds the record as it was read at the start
				// of its request.
				a, b := *u, *u
				var wg sync.WaitGroup
				errs := make([]error, 2)
				wg.Go(func() { errs[0] = s.SetSigningIdentities(ctx, &a, []string{"acme"}) })
				wg.Go(func() { errs[1] = s.SetPlan(ctx, &b, "pro") })
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						t.Fatal(err)
					}
				}
				got, err := s.User(ctx, u.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Plan != "pro" || !got.MaySign("acme") {
					t.Fatalf("after both: plan %s, identities %q", got.Plan, got.SigningIdentities)
				}
			}
		})
	}
}

// A grant to an account deleted meanwhile does not bring its record back.
func TestGrantToDeletedAccount(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "")
	u, err := s.Register(ctx, "gone@example.com", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSigningIdentities(ctx, u, []string{"acme"}); err == nil {
		t.Fatal("granted to a deleted account")
	}
	if _, err := s.User(ctx, u.ID); err == nil {
		t.Fatal("the deleted account's record is back")
	}
}
