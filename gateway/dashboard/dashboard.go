// Package dashboard serves the page people use the service from (DESIGN §7):
// sign up and in, keys, usage, hosted files, a render form and a batch's
// live progress. It is static HTML, CSS and JS embedded in the binary that
// call the public API with the session cookie; nothing is fetched from
// elsewhere at run time.
package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"time"

	"github.com/labstack/echo/v4"
)

// Path is where the dashboard lives; GET / redirects there.
const Path = "/dashboard"

//go:embed static
var static embed.FS

// CSP lets the page load only its own script, style and icon and talk only
// to its own origin; no inline script or style, no framing of the page
// (clickjacking), no plugins, no <base> rewriting, forms post nowhere
// else. It may frame blob: URLs only: the template preview shows the PDF
// it fetched (a blob: URL is made by the page's own script, of bytes it
// holds; no other origin can be framed). It may show blob: images for
// the same reason: the screenshot it fetched.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; " +
	"connect-src 'self'; frame-src blob:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// contentTypes are the embedded files' types, fixed here rather than read
// from the machine's MIME tables (which differ between systems).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// asset is one embedded file, ready to serve.
type asset struct {
	name  string
	data  []byte
	ctype string
	etag  string
}

// handler serves the page and its assets.
type handler struct {
	assets map[string]asset
	// modTime is when the binary started: embedded files have none, and
	// http.ServeContent wants one (the ETag decides revalidation).
	modTime time.Time
}

// Register serves GET / (a redirect to the dashboard), GET /dashboard and
// its assets on e.
func Register(e *echo.Echo) {
	h, err := load()
	if err != nil {
		// The files are part of the binary: not reading them is a build
		// defect, which the package's tests catch.
		panic(err)
	}
	h.register(e)
}

// load reads the embedded files.
func load() (*handler, error) {
	h := &handler{assets: map[string]asset{}, modTime: time.Now()}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		name := path.Base(p)
		h.assets[name] = asset{
			name: name, data: data,
			ctype: contentTypes[path.Ext(name)],
			etag:  `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: read embedded files: %w", err)
	}
	if _, ok := h.assets["index.html"]; !ok {
		return nil, fmt.Errorf("dashboard: index.html not embedded")
	}
	for _, a := range h.assets {
		if a.ctype == "" {
			return nil, fmt.Errorf("dashboard: no content type for %s", a.name)
		}
	}
	return h, nil
}

func (h *handler) register(e *echo.Echo) {
	getHead := []string{http.MethodGet, http.MethodHead}
	e.Match(getHead, "/", func(c echo.Context) error {
		return c.Redirect(http.StatusSeeOther, Path)
	})
	e.Match(getHead, Path, func(c echo.Context) error { return h.serve(c, "index.html") })
	e.Match(getHead, Path+"/", func(c echo.Context) error {
		return c.Redirect(http.StatusSeeOther, Path)
	})
	e.Match(getHead, Path+"/:file", func(c echo.Context) error { return h.serve(c, c.Param("file")) })
}

// serve answers one embedded file with the page's security headers.
func (h *handler) serve(c echo.Context, name string) error {
	a, ok := h.assets[name]
	if !ok {
		return echo.ErrNotFound
	}
	hd := c.Response().Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	// Revalidate every time: a new binary serves new files under the same names.
	hd.Set(echo.HeaderCacheControl, "no-cache")
	hd.Set("ETag", a.etag)
	hd.Set(echo.HeaderContentType, a.ctype)
	http.ServeContent(c.Response(), c.Request(), a.name, h.modTime, bytes.NewReader(a.data))
	return nil
}
