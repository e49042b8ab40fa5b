// Command worker is a render worker for the scaled-out mode: it pulls jobs
// from the NATS at DOCRENDER_NATS_URL and renders them with Chromium.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/logging"
	"github.com/docrender/docrender/pkg/metrics"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/stores"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/worker"
	"github.com/docrender/docrender/worker/ops"
	"github.com/docrender/docrender/worker/pdfium"
)

func main() {
	// A PDFium child process of this one (worker/pdfium) does its work and ends here.
	if pdfium.RunChildIfAsked() {
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	if cfg.Embedded() {
		return fmt.Errorf("DOCRENDER_NATS_URL is required (bin/gateway runs workers in-process without it)")
	}
	log := logging.New(cfg.LogLevel, "worker")
	cfg.LogWarnings(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// The ops listener comes first: /healthz answers while Chromium starts.
	m := metrics.New()
	opsSrv, err := ops.Start(cfg.WorkerAddr, cfg.HTTP, m, log)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = opsSrv.Close(sctx)
	}()

	// Traces (DESIGN §7): deferred before the queue and the browser, so the
	// flush runs after them and takes the spans of jobs finished while stopping.
	tp, err := tracing.New(ctx, cfg.Tracing, "docrender-worker", log)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			log.Warn("flushing traces failed", "err", err)
		}
	}()

	q, err := queue.Connect(ctx, cfg.NATSURL, nil, cfg.QueueNamespace, "docrender-worker", log, queue.WithTracing(tp))
	if err != nil {
		return err
	}
	defer q.Close()
	if err := q.Setup(ctx, queue.Streams{MaxJobs: cfg.MaxQueue, Replicas: cfg.JobReplicas}); err != nil {
		return err
	}
	blobs, err := stores.OpenBlob(ctx, cfg)
	if err != nil {
		return err
	}
	// Batch progress is shared with the gateways: config refuses a
	// scaled-out start without Redis.
	st, err := stores.OpenState(ctx, cfg)
	if err != nil {
		return err
	}
	if st != nil {
		defer st.Close()
	}
	w, err := worker.New(ctx, cfg, q, blobs, st, log)
	if err != nil {
		return err
	}
	defer w.Close()
	w.Instrument(m)
	opsSrv.SetChecks(readiness(q, blobs.Ready, st, w))
	opsSrv.SetLiveness(w.Healthy)
	log.Info("worker ready", "nats", cfg.NATSURL, "slots", cfg.Workers, "kinds", cfg.Kinds())
	return w.Run(ctx)
}

// readiness is what /readyz checks: the job stream, the stores and, on a
// worker of the chromium kind, a browser that answers.
func readiness(q *queue.Conn, blobsReady ops.Check, st state.Store, w *worker.Worker) map[string]ops.Check {
	checks := map[string]ops.Check{
		"queue": q.Ready,
		"blobs": blobsReady,
	}
	if w.Pool() != nil {
		checks["browser"] = w.Pool().Ready
	}
	if st != nil {
		checks["state"] = st.Ready
	}
	return checks
}
