// Package stores opens the state and blob stores the configuration names:
// Redis and S3 when configured, bbolt and local disk under the data
// directory otherwise. Gateway and worker mains both call it.
package stores

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/pkg/state/redisstate"
)

// OpenState opens Redis when DOCRENDER_REDIS_URL is set, else bbolt.
func OpenState(ctx context.Context, cfg config.Config) (state.Store, error) {
	if cfg.RedisURL != "" {
		return redisstate.Open(ctx, cfg.RedisURL, cfg.QueueNamespace+":")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("stores: data dir: %w", err)
	}
	return boltstate.Open(filepath.Join(cfg.DataDir, "state.db"))
}

// OpenBlob opens S3 when DOCRENDER_S3_ENDPOINT is set, else local disk.
func OpenBlob(ctx context.Context, cfg config.Config) (blob.Store, error) {
	if cfg.S3Endpoint != "" {
		return openS3(ctx, cfg)
	}
	return localblob.New(filepath.Join(cfg.DataDir, "blobs"))
}
