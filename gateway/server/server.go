// Package server is docrender's HTTP API: routing, authentication, quotas,
// validation, uploads and responses. It never renders: jobs go to the queue.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/dashboard"
	"github.com/docrender/docrender/gateway/idempotency"
	"github.com/docrender/docrender/gateway/memlimits"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/gateway/templates"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/health"
	"github.com/docrender/docrender/pkg/metrics"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/proto/jobspb"
)

// Queue is what the gateway needs of the job queue: pkg/queue's Conn
// (through NATSQueue), or a fake in the handler tests.
type Queue interface {
	// Submit queues a job whose result the caller waits for.
	Submit(ctx context.Context, job *jobspb.Job) (Waiter, error)
	// Admit refuses n more batch documents of account past its share.
	Admit(ctx context.Context, account string, n int) error
	// Publish queues a job nobody waits for (batch documents).
	Publish(ctx context.Context, job *jobspb.Job) error
	// PublishWebhook queues a webhook delivery (a batch that failed to start).
	PublishWebhook(ctx context.Context, d *jobspb.WebhookDelivery) error
	// CancelJob tells the workers a job's client left.
	CancelJob(id string) error
	// Ready says whether jobs can be queued now.
	Ready(ctx context.Context) error
	// Takers says how many workers of a kind are there to take its jobs
	// (waiting or busy); 0: none (queue.Conn.Takers).
	Takers(ctx context.Context, kind string) (int, error)
}

// Waiter is a submitted job's result to come.
type Waiter interface {
	Wait(ctx context.Context) (*jobspb.Result, error)
}

// NATSQueue is the Queue of a *queue.Conn.
type NATSQueue struct{ *queue.Conn }

// Submit queues job on the connection.
func (q NATSQueue) Submit(ctx context.Context, job *jobspb.Job) (Waiter, error) {
	p, err := q.Conn.Submit(ctx, job)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Deps are what the server is built from.
type Deps struct {
	Config config.Config
	Queue  Queue
	State  state.Store
	Blobs  blob.Store
	Log    *slog.Logger
	// Ready adds checks to /readyz (an in-process browser, say).
	Ready map[string]func(context.Context) error
	// Live, when set, fails /healthz (an in-process browser gone too long).
	Live func() error
	// Metrics are the process's collectors, served on /metrics; nil gets
	// a fresh set.
	Metrics *metrics.Metrics
	// Tracing traces each request (trace.go); nil: no spans.
	Tracing trace.TracerProvider
	// OnlyGateway says no other gateway shares the state store (the
	// embedded mode: bbolt is one process's). Rate windows and in-flight
	// leases are then counted in memory (accountlimit.go), and a request
	// with an Idempotency-Key left running by an earlier run of the process
	// is taken over at once rather than after its lease (idempotent.go).
	OnlyGateway bool
	// OfficeUnavailable, when set, says why this process's own worker
	// cannot convert office documents (embedded mode without LibreOffice):
	// POST /pdf/office answers 503 with it.
	OfficeUnavailable func() error
}

// Server is the HTTP API.
type Server struct {
	Deps
	e     *echo.Echo
	acct  *account.Service
	files *files.Store
	// templates are the accounts' stored templates (templates.go).
	templates *templates.Store
	// routeSet holds the registered route templates: anything else is
	// counted as "unmatched", so scanners cannot mint label values.
	routeSet map[string]bool
	// batches serves batch generation and progress (batch.go, sse.go).
	batches *batchAPI
	// idem keeps the outcomes of requests sent with an Idempotency-Key.
	idem *idempotency.Store
	// limits counts rate windows and in-flight leases: memory when this is
	// the only gateway, else the state store.
	limits Limits
	// draining is set when the process was told to stop (Drain).
	draining atomic.Bool
}

// errDraining fails readiness while the process stops.
var errDraining = errors.New("shutting down")

// Drain makes /readyz answer 503 from now on; everything else is served
// as before until the listener closes.
func (s *Server) Drain() { s.draining.Store(true) }

// New builds the server and its routes.
func New(d Deps) *Server {
	s := &Server{Deps: d, e: echo.New(), acct: account.New(d.State, d.Config), files: files.New(d.State, d.Blobs),
		idem: idempotency.New(d.State), limits: d.State}
	s.templates = templates.New(d.State, d.Blobs, templateGrace(d.Config))
	if d.OnlyGateway {
		s.limits = memlimits.New()
		s.idem.OnlyProcess()
	}
	s.e.HideBanner, s.e.HidePort = true, true
	s.e.HTTPErrorHandler = s.writeError
	if s.Metrics == nil {
		s.Metrics = metrics.New()
	}
	// The HTTP edge (edge.go): deadlines, request IDs, the client's address.
	s.e.IPExtractor = ipExtractor(d.Config.TrustedProxies)
	s.e.Pre(s.deadlines, s.requestIDs)
	s.e.Use(s.recoverPanics, s.logRequests, s.traceRequests, s.limitBody)
	s.routes()
	dashboard.Register(s.e) // GET /, /dashboard and its files (DESIGN §7)
	s.routeSet = map[string]bool{}
	for _, r := range s.e.Routes() {
		s.routeSet[r.Path] = true
	}
	return s
}

// Handler is the http.Handler to serve.
func (s *Server) Handler() http.Handler { return s.e }

// Files exposes the stored-file index.
func (s *Server) Files() *files.Store { return s.files }

// Accounts exposes the account service (tests and tools create users with it).
func (s *Server) Accounts() *account.Service { return s.acct }

// healthz says the process answers.
func (s *Server) healthz(c echo.Context) error {
	rep := health.Live(s.Live)
	for _, err := range rep.Failed {
		logger(c).Error("liveness check failed", "err", err)
	}
	return c.JSON(rep.Status, rep.Body)
}

func (s *Server) readyz(c echo.Context) error {
	checks := map[string]health.Check{
		"state": s.State.Ready,
		"blobs": s.Blobs.Ready,
		"queue": s.Queue.Ready,
	}
	for k, f := range s.Ready {
		checks[k] = f
	}
	if s.draining.Load() {
		checks["shutdown"] = func(context.Context) error { return errDraining }
	}
	rep := health.Ready(c.Request().Context(), checks)
	for name, err := range rep.Failed {
		logger(c).Warn("readiness check failed", "check", name, "err", err)
	}
	return c.JSON(rep.Status, rep.Body)
}

// logger returns the request's logger (with its request ID).
func logger(c echo.Context) *slog.Logger {
	if l, ok := c.Get("log").(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

// writeError is the one place errors become HTTP bodies (spec §7, DESIGN §4.12).
func (s *Server) writeError(err error, c echo.Context) {
	if c.Response().Committed {
		logger(c).Warn("error after response started", "err", err)
		return
	}
	var ae *apierr.Error
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			ae = apierr.Newf(http.StatusNotFound, "No route for %s %s.", c.Request().Method, c.Request().URL.Path)
		case http.StatusMethodNotAllowed:
			ae = apierr.Newf(http.StatusMethodNotAllowed, "Method %s is not allowed on %s.", c.Request().Method, c.Request().URL.Path)
		case http.StatusRequestEntityTooLarge:
			ae = apierr.Newf(http.StatusRequestEntityTooLarge, "Request body exceeds the limit of %d bytes.", s.Config.MaxUpload)
		case http.StatusUnauthorized:
			ae = apierr.Unauth("Unauthorized.")
		default:
			if he.Code >= 500 {
				ae = apierr.Wrap(http.StatusInternalServerError, "Internal server error.", err)
			} else {
				ae = apierr.New(he.Code, http.StatusText(he.Code)+".")
			}
		}
	default:
		ae = httpError(err)
	}
	if ae.Status >= 500 {
		logger(c).Error("request failed", "status", ae.Status, "err", err)
	}
	if ae.Code == apierr.QuotaExceeded || ae.Code == apierr.HostedLimit {
		s.Metrics.QuotaRejected(ae.Code)
	}
	for k, v := range ae.Header {
		c.Response().Header().Set(k, v)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(ae.Status)
		return
	}
	_ = c.JSON(ae.Status, ae.Body())
}

func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				logger(c).Error("panic", "panic", r)
				err = apierr.New(http.StatusInternalServerError, "Internal server error.")
			}
		}()
		return next(c)
	}
}

func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		req := c.Request()
		took := time.Since(start)
		logger(c).Info("request", "method", req.Method, "path", req.URL.Path,
			"status", c.Response().Status, "bytes", c.Response().Size, "ms", took.Milliseconds())
		s.Metrics.ObserveHTTP(s.routeLabel(c), req.Method, c.Response().Status, took)
		return nil
	}
}

// routeLabel is the request's route template, or "unmatched" for paths no
// route has (404s, 405s on unknown paths).
func (s *Server) routeLabel(c echo.Context) string {
	if p := c.Path(); s.routeSet[p] {
		return p
	}
	return "unmatched"
}

// limitBody refuses bodies over the route's limit (bodyLimit, edge.go),
// before reading when Content-Length says so, while reading otherwise.
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		limit := s.bodyLimit(c)
		if req.ContentLength > limit {
			// Do not keep reading a body we refuse: close the connection after answering.
			c.Response().Header().Set("Connection", "close")
			return apierr.Newf(http.StatusRequestEntityTooLarge, "Request body exceeds the limit of %d bytes.", limit)
		}
		req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
		return next(c)
	}
}

func isMultipart(c echo.Context) bool {
	return strings.HasPrefix(strings.ToLower(c.Request().Header.Get(echo.HeaderContentType)), "multipart/form-data")
}
