// Package ops is a worker process's own small HTTP listener for
// orchestrators and Prometheus: /healthz (the process answers), /readyz (its
// queue, stores and browser answer) and /metrics. Workers take no API
// traffic, so this is all they serve (DOCRENDER_WORKER_ADDR).
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/health"
	"github.com/docrender/docrender/pkg/metrics"
)

// Check is one readiness check; nil means ready.
type Check = health.Check

// errStarting is the readiness of a process still starting up.
var errStarting = errors.New("starting")

// Server is the running listener.
type Server struct {
	srv    *http.Server
	ln     net.Listener
	log    *slog.Logger
	m      *metrics.Metrics
	checks atomic.Pointer[map[string]Check]
	live   atomic.Pointer[func() error]
}

// Start listens on addr and serves at once: /healthz answers while the
// worker still launches Chromium, /readyz fails until SetChecks. Every
// request is bounded by t (config.DefaultHTTPTimeouts in production).
func Start(addr string, t config.HTTPTimeouts, m *metrics.Metrics, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ops: listen %s: %w", addr, err)
	}
	s := &Server{ln: ln, log: log, m: m}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", m.Handler())
	s.srv = t.Server(mux)
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("ops listener stopped", "err", err)
		}
	}()
	log.Info("ops listening", "addr", ln.Addr().String())
	return s, nil
}

// Addr is the address actually listened on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// SetChecks installs the readiness checks once the worker is built.
func (s *Server) SetChecks(checks map[string]Check) { s.checks.Store(&checks) }

// Close stops the listener.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// readyz runs every check at once and answers 200 only if all pass, with
// the same body as the gateway's /readyz, never later than health.Timeout.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	checks := map[string]Check{"startup": func(context.Context) error { return errStarting }}
	if p := s.checks.Load(); p != nil {
		checks = *p
	}
	rep := health.Ready(r.Context(), checks)
	for name, err := range rep.Failed {
		s.log.Warn("readiness check failed", "check", name, "err", err)
	}
	writeJSON(w, rep.Status, rep.Body)
}

// healthz fails once the liveness check does (a browser gone too long).
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	var live func() error
	if p := s.live.Load(); p != nil {
		live = *p
	}
	rep := health.Live(live)
	for _, err := range rep.Failed {
		s.log.Error("liveness check failed", "err", err)
	}
	writeJSON(w, rep.Status, rep.Body)
}

// SetLiveness installs what /healthz checks once the worker is built.
func (s *Server) SetLiveness(live func() error) { s.live.Store(&live) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
