// Package harness starts the whole service in one process, as bin/gateway
// runs it in embedded mode: the gateway's app with in-process workers. The
// end-to-end tests and the whole-system benchmarks (bench/) start it here,
// so they run the wiring the command runs.
package harness

import (
	"context"
	"log/slog"

	"github.com/docrender/docrender/gateway/app"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/worker"
)

// Service is a running service.
type Service struct {
	App *app.App
	// Worker is the in-process worker pool; nil when cfg names an
	// external NATS (the workers are other processes then).
	Worker *worker.Worker
}

// Start starts the service of cfg and listens on cfg.Addr.
func Start(ctx context.Context, cfg config.Config, log *slog.Logger) (*Service, error) {
	s := &Service{}
	a, err := app.Start(ctx, cfg, log, func(ctx context.Context, cfg config.Config, q *queue.Conn, blobs blob.Store, st state.Store, log *slog.Logger) (app.Workers, error) {
		w, err := worker.New(ctx, cfg, q, blobs, st, log)
		if err != nil {
			return nil, err
		}
		s.Worker = w
		return w, nil
	})
	if err != nil {
		return nil, err
	}
	s.App = a
	return s, nil
}
