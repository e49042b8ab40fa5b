package server

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/qr"
)

// maxQRBody bounds a QR request: the largest code holds 7,089 digits, so a
// valid body is a few KiB.
const maxQRBody = 64 << 10

// qrcode is POST /pdf/qrcode (spec 4.6, DESIGN §4.16). It is drawn here, in
// the gateway: pure Go (pkg/qr), about a millisecond of CPU, no browser, so
// a trip through the queue would cost more than the work. It counts no
// conversion (spec §1: conversions are generated PDFs).
//
// The body is read as JSON whatever its Content-Type: a client that forgot
// the header gets its code rather than a 400 about the header.
func (s *Server) qrcode(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxQRBody+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return apierr.Bad("Could not read the request body: %v", err)
	}
	if len(body) > maxQRBody {
		return apierr.Newf(http.StatusRequestEntityTooLarge, "A QR code request is at most %d bytes.", maxQRBody)
	}
	o, format, err := qr.ParseRequest(body)
	if err != nil {
		return err
	}
	out, ctype, err := qr.Render(o, format)
	if err != nil {
		return err
	}
	// The same request always draws the same image.
	c.Response().Header().Set("Cache-Control", "private, max-age=86400")
	return c.Blob(http.StatusOK, ctype, out)
}
