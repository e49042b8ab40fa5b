package server

import (
	"bytes"
	"errors"
	"io"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/limits"
)

const (
	// imageHeaderBytes holds the declared size of a PNG (with its
	// header's checksum), GIF or WebP.
	imageHeaderBytes = 64
	// jpegHeaderBytes is how far a JPEG's frame header is looked for: it
	// follows the metadata segments (EXIF alone may take 64 KiB).
	jpegHeaderBytes = 256 << 10
)

// boundImage refuses an uploaded image whose header declares more than
// limits.ImagePixels (DESIGN §5): a few bytes of PNG can declare billions of
// pixels, which Chromium would then try to decode. It reads only as far as
// the header and returns a reader of the whole file; a file that is no
// image costs a 64-byte read.
func boundImage(name string, r io.Reader) (io.Reader, error) {
	head := make([]byte, imageHeaderBytes)
	n, err := io.ReadFull(r, head)
	head = head[:n]
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, bodyError(err)
	}
	if bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}) {
		more, err := io.ReadAll(io.LimitReader(r, jpegHeaderBytes-int64(n)))
		if err != nil {
			return nil, bodyError(err)
		}
		head = append(head, more...)
	}
	var tooLarge *limits.TooLargeError
	if _, err := limits.Image(head, limits.ImagePixels); errors.As(err, &tooLarge) {
		return nil, apierr.Bad("File %q is %s.", name, tooLarge.Error())
	}
	return io.MultiReader(bytes.NewReader(head), r), nil
}
