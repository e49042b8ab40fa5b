package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is returned (wrapped) by ReadAll for an object over its limit.
var ErrTooLarge = errors.New("blob: object over its size limit")

// ReadAll returns the whole object at key, or an error wrapping ErrTooLarge
// when it is over limit bytes. It is for keys that arrive in a job, whose
// objects the reader has not checked itself: it allocates once, at most
// limit+1 bytes, whatever the object's size, stated or real.
func ReadAll(ctx context.Context, s Store, key string, limit int64) ([]byte, error) {
	rc, info, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if info.Size > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes, over %d", ErrTooLarge, key, info.Size, limit)
	}
	// The stated size when there is one, else the limit; the extra byte
	// tells an object longer than that without reading further.
	n := limit
	if info.Size >= 0 {
		n = info.Size
	}
	buf := make([]byte, n+1)
	got, err := io.ReadFull(rc, buf)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return buf[:got], nil
	case err != nil:
		return nil, fmt.Errorf("blob: read %s: %w", key, err)
	case n == limit:
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, key, limit)
	default:
		return nil, fmt.Errorf("blob: %s is longer than its stated %d bytes", key, n)
	}
}
