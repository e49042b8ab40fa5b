// Command gateway is docrender's HTTP API. With DOCRENDER_NATS_URL empty it
// is the whole service in one process: embedded NATS with JetStream,
// in-process render workers, bbolt and local disk under DOCRENDER_DATA_DIR.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/docrender/docrender/gateway/app"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/logging"
)

func main() {
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a, err := app.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a.Close(sctx)
	return nil
}
