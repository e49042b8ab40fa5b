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
// *Error. Requests are retried, with exponential backoff and jitter (see
// RetryPolicy), by what a repeat could do:
//
//   - requests safe to repeat (GET, DELETE of a resource by its ID, and
//     generate, merge and QR codes, which only render) are retried on 500,
//     503 and on 429 carrying Retry-After;
//   - the others (register, login, creating a key, changing the plan,
//     starting a batch, deleting the account, admin changes) only on 503
//     and on 429 carrying Retry-After, the answers of a service that did
//     nothing. A 500 may come after the work was done (a second key, a
//     second batch), so it is returned, never retried;
//   - a generate, merge or batch sent with an IdempotencyKey (DESIGN §4.20)
//     is safe to repeat whatever happened: it is retried as the first kind,
//     and also when the connection was lost before an answer (a gateway
//     restarting), since the service answers the repeat with the first
//     one's outcome, charged once.
//
// A local file that cannot be read while it is uploaded is an
// *UploadError, whatever the transport wrapped it in.
//
// Credentials (X-API-Key, Authorization, Cookie) are not sent on a
// redirect to another host or from https to http (see WithHTTPClient).
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
// calls with their context instead). The client uses a copy of h whose
// CheckRedirect first drops the credentials from a redirect to another
// host or from https to http, then calls h's own CheckRedirect (if nil,
// it applies the default limit of 10 redirects). Code that sends requests
// with h itself should set h.CheckRedirect = StripCredentialsOnRedirect
// (or wrap its own with it) for the same protection.
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) {
		cp := *h
		next := h.CheckRedirect
		cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if next == nil {
				return StripCredentialsOnRedirect(req, via)
			}
			stripCredentials(req, via)
			return next(req, via)
		}
		c.http = &cp
	}
}

// maxRedirects is net/http's default limit, kept by StripCredentialsOnRedirect.
const maxRedirects = 10

// StripCredentialsOnRedirect is an http.Client CheckRedirect: it removes
// X-API-Key, Authorization and Cookie from a redirect that leaves the
// first request's host (host and port) or goes from https to http, so a
// redirecting server (or whoever forges its answer) never receives the
// API key or a session; and it stops after 10 redirects, as net/http
// does by default. net/http itself drops Authorization and Cookie only
// for another domain, keeps them for a subdomain, and knows nothing of
// X-API-Key.
func StripCredentialsOnRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	stripCredentials(req, via)
	return nil
}

// stripCredentials is StripCredentialsOnRedirect without the limit. Each
// redirect's headers are copied afresh from the first request's, so each
// is compared with the first.
func stripCredentials(req *http.Request, via []*http.Request) {
	if len(via) == 0 {
		return
	}
	first := via[0].URL
	if !strings.EqualFold(req.URL.Host, first.Host) || (first.Scheme == "https" && req.URL.Scheme != "https") {
		for _, h := range []string{"X-Api-Key", "Authorization", "Cookie"} {
			req.Header.Del(h)
		}
	}
}

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
	c := &Client{base: u, http: &http.Client{CheckRedirect: StripCredentialsOnRedirect}, retry: DefaultRetryPolicy, userAgent: "docrender-go/" + Version, sleep: sleepCtx}
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
// is retried only when it carries Retry-After, after that delay. A 500 is
// retried only for requests safe to repeat (see the package doc): one
// that creates or changes something may have done it before failing. A
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
// repeatable says whether the request may be sent again after a 500.
func (p RetryPolicy) retryDelay(e *Error, attempt int, repeatable bool) (time.Duration, bool) {
	if attempt >= p.MaxAttempts {
		return 0, false
	}
	switch e.StatusCode {
	case http.StatusInternalServerError:
		return p.backoff(attempt), repeatable
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
	// repeat says whether a 500 may be retried; the zero value goes by
	// the method.
	repeat repeatability
	// idempotencyKey, when set, is sent as Idempotency-Key (DESIGN §4.20):
	// the request is then safe to repeat, after a 500 and after a
	// connection lost on the way (a gateway restarting), since the service
	// answers a repeat with the first one's outcome, charged once.
	idempotencyKey string
}

// repeatability is whether sending a request twice is harmless.
type repeatability int

const (
	// byMethod: GET, HEAD and DELETE (of a resource by its ID) are safe
	// to repeat; POST, PUT and PATCH are not.
	byMethod repeatability = iota
	// safeToRepeat: a POST that only computes (generate, merge, QR code).
	safeToRepeat
	// notRepeatable: a DELETE that is not of one resource by its ID (the account).
	notRepeatable
)

// repeatable reports whether r may be sent again after a 500.
func (r *request) repeatable() bool {
	if r.idempotencyKey != "" {
		return true
	}
	if r.repeat != byMethod {
		return r.repeat == safeToRepeat
	}
	switch r.method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
		return true
	}
	return false
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
			var ue *UploadError
			if r.idempotencyKey == "" || ctx.Err() != nil || errors.As(err, &ue) || attempt >= c.retry.MaxAttempts || r.noRetry {
				return nil, err
			}
			// Lost on the way: the key makes sending it again safe.
			if serr := c.sleep(ctx, c.retry.backoff(attempt)); serr != nil {
				return nil, err
			}
			continue
		}
		if okStatus(resp.StatusCode, r.ok) {
			return resp, nil
		}
		e := decodeError(resp)
		d, again := c.retry.retryDelay(e, attempt, r.repeatable())
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
	if r.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", r.idempotencyKey)
	}
	req.Header.Set("User-Agent", c.userAgent)
	c.authorize(req, r.auth)
	resp, err := c.http.Do(req)
	if err != nil {
		// A local file that failed to read comes first: the transport
		// wraps it in a *url.Error, which reads as the network failing.
		var ue *UploadError
		if errors.As(err, &ue) {
			return nil, ue
		}
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
