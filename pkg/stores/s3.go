package stores

import (
	"context"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/s3blob"
	"github.com/docrender/docrender/pkg/config"
)

func openS3(ctx context.Context, cfg config.Config) (blob.Store, error) {
	return s3blob.New(ctx, s3blob.Config{
		Endpoint:  cfg.S3Endpoint,
		AccessKey: cfg.S3AccessKey,
		SecretKey: cfg.S3SecretKey,
		Bucket:    cfg.S3Bucket,
		UseSSL:    cfg.S3UseSSL,
	})
}
