package account

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/state/boltstate"
)

// newService is the account service on a real bbolt store, with the
// plans a user may choose limited to selfService.
func newService(t *testing.T, selfService string) *Service {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		if k == "DOCRENDER_SELF_SERVICE_PLANS" {
			return selfService
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstate.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := New(st, cfg)
	s.bcryptCost = bcrypt.MinCost
	return s
}

// refusal names the refusal err is ("" for none), whatever wraps it.
func refusal(err error) string {
	var offered *PlanNotOfferedError
	var bad *invalid.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &offered):
		return "not offered"
	case errors.As(err, &bad):
		return "invalid " + bad.Field
	case errors.Is(err, ErrDisabled):
		return "disabled"
	}
	return err.Error()
}

func TestChoosePlan(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "hobby,pro")
	for _, tc := range []struct {
		name, from, to string
		refusal        string
		plan           string
	}{
		{"to a self-service plan", "hobby", "pro", "", "pro"},
		{"back down", "pro", "Hobby ", "", "hobby"},
		{"to a plan kept for the operator", "hobby", "enterprise", "not offered", "hobby"},
		{"unknown plan", "hobby", "platinum", "invalid plan", "hobby"},
		{"the operator's plan already held", "enterprise", "enterprise", "", "enterprise"},
		{"from the operator's plan to a self-service one", "enterprise", "pro", "", "pro"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := s.Register(ctx, ids.New()+"@example.com", "correct horse")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SetPlan(ctx, u, tc.from); err != nil {
				t.Fatal(err)
			}
			err = s.ChoosePlan(ctx, u, tc.to)
			if got := refusal(err); got != tc.refusal {
				t.Fatalf("ChoosePlan(%q) from %s: %q (%v), want %q", tc.to, tc.from, got, err, tc.refusal)
			}
			stored, err := s.User(ctx, u.ID)
			if err != nil || stored.Plan != tc.plan {
				t.Fatalf("stored plan %v (%v), want %s", stored, err, tc.plan)
			}
		})
	}
}

func TestDisabledAccount(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "")
	u, err := s.Register(ctx, "off@example.com", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.NewSession(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := s.CreateKey(ctx, u, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	// every way in, with the refusal it gets
	check := func(want string) {
		t.Helper()
		_, err := s.Session(ctx, tok)
		if got := refusal(err); got != want {
			t.Errorf("session: %q (%v), want %q", got, err, want)
		}
		_, _, err = s.Authenticate(ctx, key)
		if got := refusal(err); got != want {
			t.Errorf("key: %q (%v), want %q", got, err, want)
		}
		_, err = s.Login(ctx, "off@example.com", "correct horse")
		if got := refusal(err); got != want {
			t.Errorf("login: %q (%v), want %q", got, err, want)
		}
	}
	check("")
	if err := s.SetDisabled(ctx, u, true); err != nil {
		t.Fatal(err)
	}
	check("disabled")
	// A write of the user record (a plan change) does not re-enable it.
	if err := s.SetPlan(ctx, u, "pro"); err != nil {
		t.Fatal(err)
	}
	check("disabled")
	// A wrong password still says only that.
	if _, err := s.Login(ctx, "off@example.com", "wrong horse"); !errors.Is(err, ErrBadLogin) {
		t.Errorf("wrong password on a disabled account: %v", err)
	}
	if err := s.SetDisabled(ctx, u, false); err != nil {
		t.Fatal(err)
	}
	check("")
}

func TestAccountsIndex(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "")
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var made []string
	for i := range 5 {
		s.now = func() time.Time { return base.Add(time.Duration(i) * time.Minute) }
		u, err := s.Register(ctx, ids.New()+"@example.com", "correct horse")
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, u.ID)
	}
	// An account stored before the index existed: a user record only.
	old := &User{ID: "usr_old", Email: "old@example.com", Plan: "hobby", CreatedAt: base.Add(-time.Hour)}
	if err := s.putJSON(ctx, userKey(old.ID), old, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.st.Set(ctx, emailKey(old.Email), []byte(old.ID), 0); err != nil {
		t.Fatal(err)
	}
	list := func(page, limit int) ([]string, int64) {
		t.Helper()
		us, total, err := s.Accounts(ctx, page, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range us {
			out = append(out, u.ID)
		}
		return out, total
	}
	if got, total := list(1, 2); total != 5 || len(got) != 2 || got[0] != made[4] || got[1] != made[3] {
		t.Fatalf("page 1: %v of %d, want %s, %s", got, total, made[4], made[3])
	}
	if got, _ := list(3, 2); len(got) != 1 || got[0] != made[0] {
		t.Fatalf("page 3: %v, want [%s]", got, made[0])
	}
	// Found by email without the index; indexed when it next signs in.
	if u, err := s.UserByEmail(ctx, " OLD@example.com"); err != nil || u == nil || u.ID != old.ID {
		t.Fatalf("by email: %v, %v", u, err)
	}
	if _, err := s.NewSession(ctx, old); err != nil {
		t.Fatal(err)
	}
	if got, total := list(1, 10); total != 6 || got[5] != old.ID {
		t.Fatalf("after sign-in: %v of %d, want %s last", got, total, old.ID)
	}
	// A deleted account leaves the list.
	u, _ := s.User(ctx, made[2])
	if err := s.DeleteUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if got, total := list(1, 10); total != 5 || len(got) != 5 {
		t.Fatalf("after delete: %v of %d", got, total)
	}
	if u, err := s.UserByEmail(ctx, "nobody@example.com"); err != nil || u != nil {
		t.Fatalf("unknown email: %v, %v", u, err)
	}
	if _, err := s.UserByEmail(ctx, "not an email"); refusal(err) != "invalid email" {
		t.Fatalf("bad email: %v", err)
	}
}
