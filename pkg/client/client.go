// Package client is a Go client for the docrender API: HTML to PDF, merges,
// batches with live progress, QR codes, hosted files, accounts, keys, usage
// and the operator's account routes. It uses only the standard library.
//
// A Client holds up to three credentials and sends each where the API
// wants it (DESIGN §3, spec §5): the API key (X-API-Key) on generation,
// merge, batch, progress and QR routes and on reads of stored files; the
// session token (Authorization: Bearer) on the /api routes of a signed-in
// user (hosted list and delete, usage, plans, keys, the account); the
// admin token on /api/admin.
//
// Every call takes a context. Failures the API answers come back as
// *Error; requests are retried, with exponential backoff and jitter, only
// on 500, 503 and on 429 carrying Retry-After (see RetryPolicy).
//
//	c, _ := client.New("http://localhost:8080", client.WithAPIKey(os.Getenv("DOCRENDER_API_KEY")))
//	pdf, err := c.Generate(ctx, client.GenerateRequest{
//		Files:   []client.Upload{client.UploadBytes("index.html", []byte("<h1>Hello</h1>"))},
//		Options: &client.PDFOptions{Format: "A4"},
//	})
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is this client's version, sent in its User-Agent.
const Version = "0.1.0"

// DefaultBaseURL is where a service started by `make run` listens.
const DefaultBaseURL = "http://localhost:8080"

// Client calls one docrender service. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	http      *http.Client
	retry     RetryPolicy
	userAgent string
	// sleep waits between attempts; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error

	mu         sync.RWMutex
	apiKey     string
	session    string
	adminToken string
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sets the API key (drk_...) sent as X-API-Key.
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithSessionToken sets the session token of a signed-in user, sent as
// Authorization: Bearer on the /api routes.
func WithSessionToken(token string) Option { return func(c *Client) { c.session = token } }

// WithAdminToken sets the operator's DOCRENDER_ADMIN_TOKEN for /api/admin.
func WithAdminToken(token string) Option { return func(c *Client) { c.adminToken = token } }

// WithHTTPClient replaces the HTTP client (the default has no overall
// timeout: a synchronous batch or a progress stream may last long; bound
// calls with their context instead).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithRetry replaces the retry policy; RetryPolicy{MaxAttempts: 1} turns
// retries off.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the service at baseURL (scheme and host, and a
// path prefix if the service sits under one).
func New(baseURL string, opts ...Option) (*Client, error) {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("docrender: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("docrender: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u, http: &http.Client{}, retry: DefaultRetryPolicy, userAgent: "docrender-go/" + Version, sleep: sleepCtx}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// BaseURL is the service's address as configured.
func (c *Client) BaseURL() string { return c.base.String() }

// SetAPIKey replaces the API key.
func (c *Client) SetAPIKey(key string) { c.mu.Lock(); c.apiKey = key; c.mu.Unlock() }

// SetSessionToken replaces the session token ("" forgets it).
func (c *Client) SetSessionToken(token string) { c.mu.Lock(); c.session = token; c.mu.Unlock() }

// SessionToken is the session token in use, set by WithSessionToken,
// Register or Login.
func (c *Client) SessionToken() string { c.mu.RLock(); defer c.mu.RUnlock(); return c.session }

// auth is the credential a route takes.
type auth int

const (
	authNone    auth = iota
	authKey          // X-API-Key
	authSession      // Authorization: Bearer <session token>
	authAdmin        // Authorization: Bearer <admin token>
	// authViewer: a stored file's read: the key if set, else the session
	// (private files are their owner's; public ones need nothing).
	authViewer
)

// RetryPolicy says how often and how long a request is retried. Only
// 500 and 503 answers are retried with backoff (BaseDelay doubling up to
// MaxDelay, with jitter), a 503 with Retry-After after that delay; a 429
// is retried only when it carries Retry-After, after that delay. A
// Retry-After longer than MaxRetryAfter is not waited for: the error is
// returned at once with its RetryAfter set. No other status and no
// network error is retried.
type RetryPolicy struct {
	// MaxAttempts counts the first try; 1 or less means no retry.
	MaxAttempts int
	// BaseDelay is the first backoff, doubled each retry, up to MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter is the longest Retry-After honoured.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy: 4 attempts, 250 ms doubling to 8 s, Retry-After up to 30 s.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, BaseDelay: 250 * time.Millisecond, MaxDelay: 8 * time.Second, MaxRetryAfter: 30 * time.Second}

// backoff is the wait before retry n (1-based): "equal jitter", half the
// exponential delay plus a random part of the other half, so clients that
// failed together do not come back together.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// retryDelay says whether a failed answer is retried and after how long.
func (p RetryPolicy) retryDelay(e *Error, attempt int) (time.Duration, bool) {
	if attempt >= p.MaxAttempts {
		return 0, false
	}
	switch e.StatusCode {
	case http.StatusInternalServerError:
		return p.backoff(attempt), true
	case http.StatusServiceUnavailable:
		if e.RetryAfter > 0 {
			return e.RetryAfter, e.RetryAfter <= p.MaxRetryAfter
		}
		return p.backoff(attempt), true
	case http.StatusTooManyRequests:
		if e.RetryAfter > 0 && e.RetryAfter <= p.MaxRetryAfter {
			return e.RetryAfter, true
		}
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// request is one API call, re-sendable: body makes a fresh body for each attempt.
type request struct {
	method string
	path   string // escaped, from the base URL's path on
	query  url.Values
	auth   auth
	// body returns the body and its content type; nil: no body.
	body   func() (io.ReadCloser, string, error)
	header http.Header
	// ok lists the statuses that are answers; default 200 and 201.
	ok []int
	// noRetry: the answer is the point (a readiness probe).
	noRetry bool
}

// jsonBody is a request body of v as JSON.
func jsonBody(v any) (func() (io.ReadCloser, string, error), error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("docrender: encode request: %w", err)
	}
	return func() (io.ReadCloser, string, error) {
		return io.NopCloser(strings.NewReader(string(b))), "application/json", nil
	}, nil
}

// do sends r, retrying as the policy says, and returns a response whose
// status is one of r.ok; the caller closes its body. Any other answer is
// an *Error.
func (c *Client) do(ctx context.Context, r *request) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := c.send(ctx, r)
		if err != nil {
			return nil, err
		}
		if okStatus(resp.StatusCode, r.ok) {
			return resp, nil
		}
		e := decodeError(resp)
		d, again := c.retry.retryDelay(e, attempt)
		if !again || r.noRetry {
			return nil, e
		}
		if err := c.sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("%w (gave up waiting to retry: %w)", e, err)
		}
	}
}

func okStatus(code int, ok []int) bool {
	if len(ok) == 0 {
		return code == http.StatusOK || code == http.StatusCreated
	}
	for _, s := range ok {
		if code == s {
			return true
		}
	}
	return false
}

// send makes one attempt.
func (c *Client) send(ctx context.Context, r *request) (*http.Response, error) {
	target := c.base.String() + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.ReadCloser
	ctype := ""
	if r.body != nil {
		var err error
		if body, ctype, err = r.body(); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, fmt.Errorf("docrender: %w", err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("User-Agent", c.userAgent)
	c.authorize(req, r.auth)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("docrender: %s %s: %w", r.method, r.path, err)
	}
	return resp, nil
}

func (c *Client) authorize(req *http.Request, a auth) {
	c.mu.RLock()
	key, session, admin := c.apiKey, c.session, c.adminToken
	c.mu.RUnlock()
	switch {
	case a == authKey && key != "":
		req.Header.Set("X-API-Key", key)
	case a == authSession && session != "":
		req.Header.Set("Authorization", "Bearer "+session)
	case a == authAdmin && admin != "":
		req.Header.Set("Authorization", "Bearer "+admin)
	case a == authViewer && key != "":
		req.Header.Set("X-API-Key", key)
	case a == authViewer && session != "":
		req.Header.Set("Authorization", "Bearer "+session)
	}
}

// doJSON sends r and decodes a JSON answer into out (nil: discard it).
func (c *Client) doJSON(ctx context.Context, r *request, out any) error {
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeJSON(resp, out)
}

func decodeJSON(resp *http.Response, out any) error {
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("docrender: %s %s: decode answer: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}

// envelope is the {success, data, message} wrapper of the /api routes.
type envelope[T any] struct {
	Success bool   `json:"success"`
	Data    T      `json:"data"`
	Message string `json:"message"`
}

// getData sends r and returns the answer's data.
func getData[T any](ctx context.Context, c *Client, r *request) (T, error) {
	var env envelope[T]
	err := c.doJSON(ctx, r, &env)
	return env.Data, err
}

// pathEscape escapes an ID for a path segment.
func pathEscape(id string) (string, error) {
	if id == "" {
		return "", errors.New("docrender: empty ID")
	}
	return url.PathEscape(id), nil
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
