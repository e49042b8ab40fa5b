// Command gateway is docrender's HTTP API. With DOCRENDER_NATS_URL empty it
// is the whole service in one process: embedded NATS with JetStream,
// in-process render workers, bbolt and local disk under DOCRENDER_DATA_DIR.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/docrender/docrender/gateway/app"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/logging"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/worker"
	"github.com/docrender/docrender/worker/pdfium"
)

func main() {
	// A PDFium child process of this one (worker/pdfium) does its work and ends here.
	if pdfium.RunChildIfAsked() {
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	log := logging.New(cfg.LogLevel, "gateway")
	cfg.LogWarnings(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := app.Start(ctx, cfg, log, inProcessWorkers)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stop() // a second signal ends the process at once
	// Not ready first: load balancers stop sending while requests are still
	// answered; then the listener closes and in-flight requests finish.
	log.Info("draining: /readyz answers 503", "for", cfg.DrainDelay)
	a.Drain()
	time.Sleep(cfg.DrainDelay)
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a.Close(sctx)
	return nil
}

// inProcessWorkers are embedded mode's render workers: the one place the
// gateway's program reaches into package worker (DESIGN §1).
func inProcessWorkers(ctx context.Context, cfg config.Config, q *queue.Conn, blobs blob.Store, st state.Store, log *slog.Logger) (app.Workers, error) {
	w, err := worker.New(ctx, cfg, q, blobs, st, log)
	if err != nil {
		return nil, err // not a nil *Worker inside a non-nil interface
	}
	return w, nil
}
