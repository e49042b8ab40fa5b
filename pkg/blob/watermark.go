package blob

import (
	"bytes"
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/proto/jobspb"
)

// OffloadWatermark stores wm's PNG under key (JobWatermark, BatchWatermark)
// and returns a copy of wm that names the key instead of carrying the
// bytes: a job message stays small and under NATS's payload limit, and the
// documents of a batch share one stored image instead of each carrying it.
// The caller deletes key with the rest of the request's temporary files,
// after every job that names it has ended.
//
// A watermark without image bytes (nil, text) is returned as it is. wm
// itself is not changed: the generate cache hashes the options, and the
// hash must not depend on where the image was stored.
func OffloadWatermark(ctx context.Context, s Store, key string, wm *jobspb.Watermark) (*jobspb.Watermark, error) {
	img := wm.GetImagePng()
	if len(img) == 0 {
		return wm, nil
	}
	if err := s.Put(ctx, key, bytes.NewReader(img), int64(len(img))); err != nil {
		return nil, fmt.Errorf("blob: store watermark image: %w", err)
	}
	out := proto.CloneOf(wm)
	out.ImagePng, out.ImageKey = nil, key
	return out, nil
}

// LoadWatermark undoes OffloadWatermark on the worker's side: a copy of wm
// with the PNG at wm.ImageKey read back into ImagePng, at most limit bytes
// (over it: an error wrapping ErrTooLarge; a key no longer stored: one
// wrapping ErrNotFound). A watermark without ImageKey (text, or an image
// inline, as older gateways queued it) is returned as it is.
func LoadWatermark(ctx context.Context, s Store, wm *jobspb.Watermark, limit int64) (*jobspb.Watermark, error) {
	key := wm.GetImageKey()
	if key == "" {
		return wm, nil
	}
	img, err := ReadAll(ctx, s, key, limit)
	if err != nil {
		return nil, fmt.Errorf("blob: watermark image: %w", err)
	}
	out := proto.CloneOf(wm)
	out.ImagePng, out.ImageKey = img, ""
	return out, nil
}
