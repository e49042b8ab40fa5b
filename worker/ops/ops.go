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
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/metrics"
)

// Check is one readiness check; nil means ready.
type Check func(context.Context) error

// checkTimeout bounds /readyz: a probe must answer before its own timeout
// even when a dependency hangs.
const checkTimeout = 3 * time.Second

// errStarting is the readiness of a process still starting up.
var errStarting = errors.New("starting")

// Server is the running listener.
type Server struct {
	srv    *http.Server
	ln     net.Listener
	log    *slog.Logger
	m      *metrics.Metrics
	checks atomic.Pointer[map[string]Check]
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
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
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
// the same body as the gateway's /readyz.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), checkTimeout)
	defer cancel()
	checks := map[string]Check{"startup": func(context.Context) error { return errStarting }}
	if p := s.checks.Load(); p != nil {
		checks = *p
	}
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	sort.Strings(names)
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = checks[name](ctx)
		}()
	}
	wg.Wait()
	out := map[string]string{}
	status := http.StatusOK
	for i, name := range names {
		if errs[i] != nil {
			out[name] = "failing"
			status = http.StatusServiceUnavailable
			s.log.Warn("readiness check failed", "check", name, "err", errs[i])
			continue
		}
		out[name] = "ok"
	}
	writeJSON(w, status, map[string]any{"status": http.StatusText(status), "checks": out})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
