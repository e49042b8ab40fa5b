package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/apitime"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/usage"
)

// requireAdmin guards the operator's account routes (DESIGN §3):
// Authorization: Bearer <DOCRENDER_ADMIN_TOKEN>.
func (s *Server) requireAdmin() echo.MiddlewareFunc {
	want := sha256.Sum256([]byte(s.Config.AdminToken))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// Hashes first: the comparison takes as long whatever the
			// length of what was sent.
			got := sha256.Sum256([]byte(bearer(c)))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				if bearer(c) != "" {
					logger(c).Warn("admin: wrong token", "ip", c.RealIP())
				}
				return apierr.Unauth("Admin token required: send Authorization: Bearer <DOCRENDER_ADMIN_TOKEN>.")
			}
			return next(c)
		}
	}
}

// adminAccount is an account as the operator sees it.
type adminAccount struct {
	ID        string     `json:"id"`
	Email     string     `json:"email"`
	Plan      string     `json:"plan"`
	Disabled  bool       `json:"disabled"`
	CreatedAt string     `json:"createdAt"`
	Usage     adminUsage `json:"usage"`
	// SigningIdentities are the identities the account may sign with
	// (DESIGN §8), sorted; [] for none.
	SigningIdentities []string `json:"signingIdentities"`
}

// adminUsage is the account's usage this month, as GET /api/billing/usage.
type adminUsage struct {
	Period           string `json:"period"`
	ConversionsUsed  int64  `json:"conversionsUsed"`
	ConversionsLimit int64  `json:"conversionsLimit"`
	HostedCount      int64  `json:"hostedCount"`
	HostedLimit      int64  `json:"hostedLimit"`
}

func (s *Server) adminAccountOf(c echo.Context, u *account.User) (adminAccount, error) {
	ctx := c.Request().Context()
	off, err := s.acct.Disabled(ctx, u.ID)
	if err != nil {
		return adminAccount{}, err
	}
	used, err := s.acct.ConversionsUsed(ctx, u)
	if err != nil {
		return adminAccount{}, err
	}
	hosted, err := s.files.HostedCount(ctx, u.ID)
	if err != nil {
		return adminAccount{}, err
	}
	plan := s.acct.Plan(u.Plan)
	return adminAccount{
		ID: u.ID, Email: u.Email, Plan: plan.Name, Disabled: off, CreatedAt: apitime.Format(u.CreatedAt),
		SigningIdentities: append([]string{}, u.SigningIdentities...),
		Usage: adminUsage{
			Period: usage.Period(time.Now()), ConversionsUsed: used, ConversionsLimit: plan.Conversions,
			HostedCount: hosted, HostedLimit: plan.Hosted,
		},
	}, nil
}

// adminListAccounts is GET /api/admin/accounts?page=&limit=&email=: the
// accounts newest first, paged like the hosted list. email= finds the one
// account of that address (exact, case-insensitive), indexed or not.
func (s *Server) adminListAccounts(c echo.Context) error {
	page, err := pageParam(c, "page", defaultPage, 1<<20)
	if err != nil {
		return err
	}
	limit, err := pageParam(c, "limit", defaultLimit, maxLimit)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var users []*account.User
	var total int64
	if q := c.QueryParams(); q.Has("email") {
		u, err := s.acct.UserByEmail(ctx, q.Get("email"))
		if err != nil {
			return err
		}
		if u != nil {
			total = 1
			if page == 1 {
				users = []*account.User{u}
			}
		}
	} else if users, total, err = s.acct.Accounts(ctx, page, limit); err != nil {
		return err
	}
	out := make([]adminAccount, 0, len(users))
	for _, u := range users {
		a, err := s.adminAccountOf(c, u)
		if err != nil {
			return err
		}
		out = append(out, a)
	}
	return paged(c, "accounts", out, total, page, limit)
}

// adminPatch is the body of PATCH /api/admin/accounts/:id; absent fields
// stay as they are.
type adminPatch struct {
	Plan     *string `json:"plan"`
	Disabled *bool   `json:"disabled"`
}

// adminPatchAccount is PATCH /api/admin/accounts/:id {plan?, disabled?}:
// any plan (self-service or not); disabling stops the account's keys and
// sessions at once, re-enabling restores them. Both are checked before
// either is written.
func (s *Server) adminPatchAccount(c echo.Context) error {
	var p adminPatch
	if err := readAdminBody(c, &p, "plan", "disabled"); err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := s.adminUser(c)
	if err != nil {
		return err
	}
	oldPlan := u.Plan
	if p.Plan != nil {
		if err := s.acct.SetPlan(ctx, u, *p.Plan); err != nil {
			return err
		}
	}
	if p.Disabled != nil {
		if err := s.acct.SetDisabled(ctx, u, *p.Disabled); err != nil {
			return err
		}
	}
	logger(c).Info("admin: account changed", "user", u.ID, "from_plan", oldPlan, "plan", u.Plan, "disabled", p.Disabled)
	return s.adminAnswer(c, u)
}

// adminUser is the account of the route's :id; 404 when there is none.
func (s *Server) adminUser(c echo.Context) (*account.User, error) {
	id := c.Param("id")
	if len(id) > 100 {
		// No account has such an ID; spare the store a key of any length.
		return nil, apierr.New(http.StatusNotFound, "Account not found.")
	}
	u, err := s.acct.User(c.Request().Context(), id)
	if errors.Is(err, state.ErrNotFound) {
		return nil, apierr.New(http.StatusNotFound, "Account not found.")
	}
	return u, err
}

// adminAnswer is an admin change's 200: the account as it is now.
func (s *Server) adminAnswer(c echo.Context, u *account.User) error {
	a, err := s.adminAccountOf(c, u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "data": a})
}
