package client

import (
	"context"
	"net/http"
	"time"
)

// User is an account (DESIGN §3).
type User struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Plan      string    `json:"plan"`
	CreatedAt time.Time `json:"createdAt"`
}

// Session is a signed-in user and the session's token.
type Session struct {
	User  User   `json:"user"`
	Token string `json:"token"`
}

func (c *Client) signIn(ctx context.Context, path, email, password string) (*Session, error) {
	body, err := jsonBody(map[string]string{"email": email, "password": password})
	if err != nil {
		return nil, err
	}
	s, err := getData[Session](ctx, c, &request{method: http.MethodPost, path: path, body: body})
	if err != nil {
		return nil, err
	}
	c.SetSessionToken(s.Token)
	return &s, nil
}

// Register creates an account and signs in: the client uses the new
// session from then on.
func (c *Client) Register(ctx context.Context, email, password string) (*Session, error) {
	return c.signIn(ctx, "/api/auth/register", email, password)
}

// Login signs in: the client uses the new session from then on.
func (c *Client) Login(ctx context.Context, email, password string) (*Session, error) {
	return c.signIn(ctx, "/api/auth/login", email, password)
}

// Logout ends the client's session and forgets its token.
func (c *Client) Logout(ctx context.Context) error {
	err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/api/auth/logout", auth: authSession}, nil)
	if err == nil {
		c.SetSessionToken("")
	}
	return err
}

// Me returns the signed-in user.
func (c *Client) Me(ctx context.Context) (*User, error) {
	d, err := getData[struct {
		User User `json:"user"`
	}](ctx, c, &request{method: http.MethodGet, path: "/api/auth/me", auth: authSession})
	return &d.User, err
}

// DeleteAccount deletes the signed-in user's account, keys and files.
func (c *Client) DeleteAccount(ctx context.Context) error {
	return c.doJSON(ctx, &request{method: http.MethodDelete, path: "/api/auth/account", auth: authSession, repeat: notRepeatable}, nil)
}

// APIKey is an API key as listed (the secret is shown only at creation).
type APIKey struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
	// Key is the secret, set only in CreateKey's answer.
	Key string `json:"key,omitempty"`
}

// CreateKey creates an API key (needs a session); its Key is shown only
// here. expiresAt nil: the key does not expire.
func (c *Client) CreateKey(ctx context.Context, name string, expiresAt *time.Time) (*APIKey, error) {
	req := map[string]string{"name": name}
	if expiresAt != nil {
		req["expiresAt"] = expiresAt.UTC().Format(time.RFC3339)
	}
	body, err := jsonBody(req)
	if err != nil {
		return nil, err
	}
	k, err := getData[APIKey](ctx, c, &request{method: http.MethodPost, path: "/api/keys", auth: authSession, body: body})
	return &k, err
}

// ListKeys lists the user's API keys (needs a session).
func (c *Client) ListKeys(ctx context.Context) ([]APIKey, error) {
	return getData[[]APIKey](ctx, c, &request{method: http.MethodGet, path: "/api/keys", auth: authSession})
}

// RevokeKey revokes an API key at once (needs a session).
func (c *Client) RevokeKey(ctx context.Context, id string) error {
	esc, err := pathEscape(id)
	if err != nil {
		return err
	}
	return c.doJSON(ctx, &request{method: http.MethodDelete, path: "/api/keys/" + esc, auth: authSession}, nil)
}

// Usage is the month's usage against the plan (DESIGN §3).
type Usage struct {
	Plan string `json:"plan"`
	// Period is the month, "YYYY-MM" (UTC).
	Period           string `json:"period"`
	ConversionsUsed  int64  `json:"conversionsUsed"`
	ConversionsLimit int64  `json:"conversionsLimit"`
	HostedCount      int64  `json:"hostedCount"`
	HostedLimit      int64  `json:"hostedLimit"`
}

// Usage returns the month's usage (GET /api/billing/usage; needs a session).
func (c *Client) Usage(ctx context.Context) (*Usage, error) {
	u, err := getData[Usage](ctx, c, &request{method: http.MethodGet, path: "/api/billing/usage", auth: authSession})
	return &u, err
}

// Subscription is the user's plan and its limits.
type Subscription struct {
	Plan   string     `json:"plan"`
	Limits PlanLimits `json:"limits"`
}

// PlanLimits are a plan's limits.
type PlanLimits struct {
	Conversions      int64 `json:"conversions"`
	Hosted           int64 `json:"hosted"`
	RetentionSeconds int64 `json:"retentionSeconds"`
	MaxBatch         int   `json:"maxBatch"`
	// Templates is how many templates the plan stores (versions not counted).
	Templates int64 `json:"templates"`
}

// Subscription returns the plan (GET /api/billing/subscription; needs a session).
func (c *Client) Subscription(ctx context.Context) (*Subscription, error) {
	s, err := getData[Subscription](ctx, c, &request{method: http.MethodGet, path: "/api/billing/subscription", auth: authSession})
	return &s, err
}

// ChangePlan switches to a self-service plan and returns the new
// subscription (needs a session; a plan not offered is a 403).
func (c *Client) ChangePlan(ctx context.Context, plan string) (*Subscription, error) {
	body, err := jsonBody(map[string]string{"plan": plan})
	if err != nil {
		return nil, err
	}
	s, err := getData[Subscription](ctx, c, &request{method: http.MethodPost, path: "/api/billing/subscription/change-plan", auth: authSession, body: body})
	return &s, err
}

// Account is an account as the operator sees it.
type Account struct {
	ID        string       `json:"id"`
	Email     string       `json:"email"`
	Plan      string       `json:"plan"`
	Disabled  bool         `json:"disabled"`
	CreatedAt time.Time    `json:"createdAt"`
	Usage     AccountUsage `json:"usage"`
	// SigningIdentities are the operator's signing identities the
	// account may sign with (DESIGN §8), sorted; AdminSetSigning sets them.
	SigningIdentities []string `json:"signingIdentities"`
}

// AccountUsage is an account's usage this month.
type AccountUsage struct {
	Period           string `json:"period"`
	ConversionsUsed  int64  `json:"conversionsUsed"`
	ConversionsLimit int64  `json:"conversionsLimit"`
	HostedCount      int64  `json:"hostedCount"`
	HostedLimit      int64  `json:"hostedLimit"`
}

// AccountList is one page of accounts, newest first.
type AccountList struct {
	Accounts   []Account
	Total      int64
	Pagination Pagination
}

// AdminListAccounts lists accounts (GET /api/admin/accounts; needs the
// admin token). email, when not empty, finds the one account of that address.
func (c *Client) AdminListAccounts(ctx context.Context, page, limit int, email string) (*AccountList, error) {
	q := pageQuery(page, limit)
	if email != "" {
		q.Set("email", email)
	}
	var out struct {
		Data struct {
			Accounts []Account `json:"accounts"`
			Total    int64     `json:"total"`
		} `json:"data"`
		Pagination Pagination `json:"pagination"`
	}
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/api/admin/accounts", query: q, auth: authAdmin}, &out); err != nil {
		return nil, err
	}
	return &AccountList{Accounts: out.Data.Accounts, Total: out.Data.Total, Pagination: out.Pagination}, nil
}

// AccountPatch changes an account; nil fields stay as they are.
type AccountPatch struct {
	Plan     *string `json:"plan,omitempty"`
	Disabled *bool   `json:"disabled,omitempty"`
}

// AdminPatchAccount changes an account's plan (any plan) or disables it
// (PATCH /api/admin/accounts/:id; needs the admin token).
func (c *Client) AdminPatchAccount(ctx context.Context, id string, p AccountPatch) (*Account, error) {
	esc, err := pathEscape(id)
	if err != nil {
		return nil, err
	}
	body, err := jsonBody(p)
	if err != nil {
		return nil, err
	}
	a, err := getData[Account](ctx, c, &request{method: http.MethodPatch, path: "/api/admin/accounts/" + esc, auth: authAdmin, body: body})
	return &a, err
}

// AdminSetSigning sets the signing identities an account may use, replacing
// those it had; none takes every one away (PUT
// /api/admin/accounts/:id/signing; needs the admin token). Each must be an
// identity of the service's DOCRENDER_SIGNING_DIR: an unknown one, or
// signing off, is a 400 *Error naming the field.
func (c *Client) AdminSetSigning(ctx context.Context, accountID string, identities []string) (*Account, error) {
	esc, err := pathEscape(accountID)
	if err != nil {
		return nil, err
	}
	if identities == nil {
		identities = []string{} // the service wants a list: [] grants none
	}
	body, err := jsonBody(map[string][]string{"identities": identities})
	if err != nil {
		return nil, err
	}
	a, err := getData[Account](ctx, c, &request{method: http.MethodPut, path: "/api/admin/accounts/" + esc + "/signing", auth: authAdmin, body: body})
	return &a, err
}

// Health checks that the service is alive (GET /healthz).
func (c *Client) Health(ctx context.Context) error {
	return c.doJSON(ctx, &request{method: http.MethodGet, path: "/healthz"}, nil)
}

// Ready checks that the service can take work (GET /readyz); a 503 is an *Error.
// It is not retried: the answer is the point.
func (c *Client) Ready(ctx context.Context) error {
	return c.doJSON(ctx, &request{method: http.MethodGet, path: "/readyz", noRetry: true}, nil)
}

// Metrics returns the Prometheus text of GET /metrics (when the service
// serves it on its API address).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: "/metrics"})
	if err != nil {
		return "", err
	}
	b, err := newDownload(resp).Bytes()
	return string(b), err
}
