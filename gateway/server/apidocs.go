package server

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/apidoc"
)

// apiDocs serves the API's description (DESIGN §7): GET /openapi.json, the
// OpenAPI 3.1 document naming this service's base address, and GET /docs,
// the reference page rendered from it. Both are built on first request
// (most servers, tests above all, never answer either) and kept.
func (s *Server) apiDocs() {
	docs := sync.OnceValues(func() (*apidoc.Docs, error) { return apidoc.New(s.Config.BaseURL) })
	serve := func(ctype string, body func(*apidoc.Docs) []byte) echo.HandlerFunc {
		return func(c echo.Context) error {
			d, err := docs()
			if err != nil {
				return fmt.Errorf("api docs: %w", err)
			}
			h := c.Response().Header()
			// The page's style is inline and it loads nothing: say so, so
			// that nothing else could ever run or load there either.
			h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set(echo.HeaderCacheControl, "public, max-age=300")
			return c.Blob(http.StatusOK, ctype, body(d))
		}
	}
	openapi := serve(echo.MIMEApplicationJSON, func(d *apidoc.Docs) []byte { return d.JSON })
	s.e.GET("/openapi.json", func(c echo.Context) error {
		// Public and without credentials: tools on other origins may read it.
		c.Response().Header().Set(echo.HeaderAccessControlAllowOrigin, "*")
		return openapi(c)
	})
	s.e.GET("/docs", serve(echo.MIMETextHTMLCharsetUTF8, func(d *apidoc.Docs) []byte { return d.HTML }))
}
