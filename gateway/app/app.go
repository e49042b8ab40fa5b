// Package app assembles a gateway process from the configuration: the
// embedded NATS server and in-process workers when no NATS URL is given,
// the stores, and the HTTP server. The command and the end-to-end tests
// start the service through it, so both run the same wiring. The workers
// themselves come from the caller (NewWorkers): the gateway's packages
// never import the worker's (DESIGN §1), only its main does.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/nats-io/nats-server/v2/server"

	gw "github.com/docrender/docrender/gateway/server"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/metrics"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/stores"
	"github.com/docrender/docrender/pkg/tracing"
)

// Workers is an in-process worker pool (package worker's Worker).
type Workers interface {
	// Run consumes jobs until ctx ends, then finishes the jobs in hand.
	Run(ctx context.Context) error
	// Ready says whether the pool can render (its browser answers).
	Ready(ctx context.Context) error
	// Healthy fails when the pool has had no browser for too long.
	Healthy() error
	// Instrument makes the pool record its work in m.
	Instrument(m *metrics.Metrics)
	Close()
}

// NewWorkers builds the in-process workers of embedded mode on the
// process's queue and stores.
type NewWorkers func(ctx context.Context, cfg config.Config, q *queue.Conn, blobs blob.Store, st state.Store, log *slog.Logger) (Workers, error)

// App is a running gateway.
type App struct {
	Config config.Config
	Server *gw.Server
	// Workers is the in-process worker pool (embedded mode only).
	Workers Workers
	Log     *slog.Logger
	// Metrics are this process's collectors (the in-process worker's too).
	Metrics *metrics.Metrics
	// Tracing is this process's tracer provider (DESIGN §7): a no-op one
	// unless OTEL_ settings ask.
	Tracing *tracing.Provider
	// workerTracing is the in-process workers' (embedded mode), exporting
	// as docrender-worker like a worker process, on a queue connection of
	// their own (workerQueue) whose consumer spans it makes.
	workerTracing *tracing.Provider

	nats        *server.Server
	queue       *queue.Conn
	workerQueue *queue.Conn
	state       state.Store
	blobs       blob.Store
	http        *http.Server
	ln          net.Listener
	// metricsHTTP serves /metrics on DOCRENDER_METRICS_ADDR when it is set.
	metricsHTTP *http.Server
	metricsLn   net.Listener
	workerWG    sync.WaitGroup
	stopWork    context.CancelFunc
	// The retention sweeper (retention.go).
	sweepWG   sync.WaitGroup
	stopSweep context.CancelFunc
}

// Start builds everything and starts listening on cfg.Addr. In embedded
// mode (no NATS URL) it runs the workers newWorkers makes; it must not be
// nil then.
func Start(ctx context.Context, cfg config.Config, log *slog.Logger, newWorkers NewWorkers) (_ *App, err error) {
	a := &App{Config: cfg, Log: log, Metrics: metrics.New()}
	defer func() {
		if err != nil {
			a.Close(context.Background())
		}
	}()
	if a.Tracing, err = tracing.New(ctx, cfg.Tracing, "docrender-gateway", log); err != nil {
		return nil, err
	}
	if cfg.Embedded() {
		if a.nats, err = queue.StartEmbedded(filepath.Join(cfg.DataDir, "jetstream")); err != nil {
			return nil, err
		}
	}
	if a.queue, err = queue.Connect(ctx, cfg.NATSURL, a.nats, cfg.QueueNamespace, "docrender-gateway", log,
		queue.WithTracing(a.Tracing)); err != nil {
		return nil, err
	}
	if err = a.queue.Setup(ctx, queue.Streams{MaxJobs: cfg.MaxQueue, Replicas: cfg.JobReplicas}); err != nil {
		return nil, err
	}
	warnBatchesThatNeverFit(cfg, log)
	if a.state, err = stores.OpenState(ctx, cfg); err != nil {
		return nil, err
	}
	if a.blobs, err = stores.OpenBlob(ctx, cfg); err != nil {
		return nil, err
	}
	if err := installExpiryRules(ctx, a.blobs, cfg, log); err != nil {
		// A backstop only (the sweeper deletes expired files): an S3 without
		// lifecycle support must not keep the service down.
		log.Warn("bucket lifecycle rules not installed", "err", err)
	}
	a.Metrics.WatchQueueDepth(a.queue.Depth)
	ready := map[string]func(context.Context) error{}
	var live func() error
	if cfg.Embedded() {
		if newWorkers == nil {
			return nil, errors.New("app: embedded mode needs in-process workers")
		}
		wlog := log.With("component", "worker")
		if a.workerTracing, err = tracing.New(ctx, cfg.Tracing, "docrender-worker", wlog); err != nil {
			return nil, err
		}
		if a.workerQueue, err = queue.Connect(ctx, cfg.NATSURL, a.nats, cfg.QueueNamespace, "docrender-worker", wlog,
			queue.WithTracing(a.workerTracing)); err != nil {
			return nil, err
		}
		if a.Workers, err = newWorkers(ctx, cfg, a.workerQueue, a.blobs, a.state, wlog); err != nil {
			return nil, err
		}
		ready["browser"] = a.Workers.Ready
		live = a.Workers.Healthy
		a.Workers.Instrument(a.Metrics)
		wctx, cancel := context.WithCancel(context.Background())
		a.stopWork = cancel
		a.workerWG.Add(1)
		go func() {
			defer a.workerWG.Done()
			_ = a.Workers.Run(wctx)
		}()
	}
	// bbolt (no Redis): one process alone opens it, so this gateway is the only one.
	deps := gw.Deps{Config: cfg, Queue: gw.NATSQueue{Conn: a.queue}, State: a.state, Blobs: a.blobs, Log: log, Ready: ready, Live: live, Metrics: a.Metrics,
		Tracing: a.Tracing, OnlyGateway: cfg.RedisURL == ""}
	if ou, ok := a.Workers.(interface{ OfficeUnavailable() error }); ok {
		// The in-process worker knows why it takes no office jobs (no
		// LibreOffice): the route says that rather than "no worker".
		deps.OfficeUnavailable = ou.OfficeUnavailable
	}
	a.Server = gw.New(deps)
	a.startSweeper(a.Server.Files())
	if a.ln, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	// The listener's timeouts; the server moves them per request (server/edge.go).
	a.http = cfg.HTTP.Server(a.Server.Handler())
	// Shutdown waits for open requests; progress streams would keep it waiting.
	a.http.RegisterOnShutdown(a.Server.StopStreams)
	go func() {
		if err := a.http.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "err", err)
		}
	}()
	if cfg.MetricsAddr != "" {
		if err := a.serveMetrics(cfg); err != nil {
			return nil, err
		}
	}
	log.Info("gateway listening", "addr", a.ln.Addr().String(), "embedded", cfg.Embedded(), "base_url", cfg.BaseURL)
	return a, nil
}

// serveMetrics serves /metrics alone on cfg.MetricsAddr, which the API
// address then does not serve (DESIGN §2).
func (a *App) serveMetrics(cfg config.Config) error {
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("listen %s (DOCRENDER_METRICS_ADDR): %w", cfg.MetricsAddr, err)
	}
	a.metricsLn = ln
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Metrics.Handler())
	a.metricsHTTP = cfg.HTTP.Server(mux)
	go func() {
		if err := a.metricsHTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.Log.Error("metrics server stopped", "err", err)
		}
	}()
	a.Log.Info("metrics listening", "addr", ln.Addr().String())
	return nil
}

// Queue is the process's job queue connection (tests publish to it).
func (a *App) Queue() *queue.Conn { return a.queue }

// Addr is the address actually listened on.
func (a *App) Addr() string { return a.ln.Addr().String() }

// MetricsAddr is the address /metrics is served on when it has its own
// listener; "" when it is on Addr.
func (a *App) MetricsAddr() string {
	if a.metricsLn == nil {
		return ""
	}
	return a.metricsLn.Addr().String()
}

// Drain makes the gateway not ready (503 on /readyz) while it still serves.
func (a *App) Drain() { a.Server.Drain() }

// Close finishes the requests in flight, then the in-process jobs, then
// closes the connections and stores.
func (a *App) Close(ctx context.Context) {
	if a.http != nil {
		_ = a.http.Shutdown(ctx)
	}
	if a.metricsHTTP != nil {
		_ = a.metricsHTTP.Shutdown(ctx)
	}
	if a.stopWork != nil {
		a.stopWork()
		a.workerWG.Wait()
	}
	if a.stopSweep != nil {
		a.stopSweep()
		a.sweepWG.Wait()
	}
	if a.Workers != nil {
		a.Workers.Close()
	}
	if a.workerQueue != nil {
		a.workerQueue.Close()
	}
	if a.queue != nil {
		a.queue.Close()
	}
	if a.nats != nil {
		a.nats.Shutdown()
		a.nats.WaitForShutdown()
	}
	if a.state != nil {
		_ = a.state.Close()
	}
	// Last: the spans of everything finished above are flushed, by both
	// providers at once (a collector that hangs holds ctx's time once).
	var flush sync.WaitGroup
	for _, tp := range []*tracing.Provider{a.workerTracing, a.Tracing} {
		flush.Go(func() {
			if err := tp.Shutdown(ctx); err != nil {
				a.Log.Warn("flushing traces failed", "err", err)
			}
		})
	}
	flush.Wait()
}

// warnBatchesThatNeverFit names each plan whose largest batch is more than
// one account may hold in the queue (DOCRENDER_MAX_QUEUE): such a batch is
// refused every time (400 naming documents), however long its client waits.
func warnBatchesThatNeverFit(cfg config.Config, log *slog.Logger) {
	capacity := queue.BatchCapacity(int64(cfg.MaxQueue))
	for name, p := range cfg.Plans {
		if p.MaxBatch > capacity {
			log.Warn("a plan's largest batch never fits in the queue: raise DOCRENDER_MAX_QUEUE or lower the plan's MAX_BATCH",
				"plan", name, "max_batch", p.MaxBatch, "fits", capacity, "max_queue", cfg.MaxQueue)
		}
	}
}
