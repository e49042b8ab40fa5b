package server

import (
	"bufio"
	"errors"
	"io"

	"github.com/docrender/docrender/pkg/apierr"
	"github.com/docrender/docrender/pkg/limits"
)

// imageHeaderPeek is how much of an upload is read ahead to find an image's
// declared size: a JPEG's frame header may follow its metadata segments.
const imageHeaderPeek = 256 << 10

// boundImage refuses an uploaded image whose header declares more than
// limits.ImagePixels (DESIGN §5): a few bytes of PNG can declare billions of
// pixels, which Chromium would then try to decode. It reads ahead, without
// consuming, and returns a reader of the whole file.
func boundImage(name string, r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, imageHeaderPeek)
	head, err := br.Peek(imageHeaderPeek)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, bodyError(err)
	}
	var tooLarge *limits.TooLargeError
	if _, err := limits.Image(head, limits.ImagePixels); errors.As(err, &tooLarge) {
		return nil, apierr.Bad("File %q is %s.", name, tooLarge.Error())
	}
	return br, nil
}
