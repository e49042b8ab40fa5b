package server

// The HTTP edge (DESIGN §5): per-request read and write deadlines, body
// caps per route, request IDs, the client's address and the origin check
// of cookie-authenticated requests. Login throttling is in authlimit.go.

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/logging"
)

// Body caps (DESIGN §5). Upload routes take DOCRENDER_MAX_UPLOAD_BYTES;
// so does the batch route, whose JSON carries whole HTML documents.
const (
	jsonBodyLimit = 1 << 20
	authBodyLimit = 16 << 10
)

// uploadRoutes are the routes whose bodies may be as large as the upload limit.
var uploadRoutes = map[string]bool{"/pdf/generate": true, "/pdf/merge": true, "/pdf/generate-batch": true, "/pdf/inspect": true,
	"/api/templates": true}

// bodyLimit is the largest body the request's route accepts.
func (s *Server) bodyLimit(c echo.Context) int64 {
	limit := int64(jsonBodyLimit)
	switch p := c.Path(); {
	case p == "/api/auth/register" || p == "/api/auth/login":
		limit = authBodyLimit
	case uploadRoutes[p]:
		limit = s.Config.MaxUpload
	}
	return min(limit, s.Config.MaxUpload)
}

// deadlines bounds how long a client may take to send its request and to
// take its response, per request, on top of the listener's own timeouts
// (which bound the headers and idle connections):
//   - a body must keep arriving: it may take Read plus its size at MinRate
//     (net/http drops the read deadline once the body is read, so a long
//     render after it is not taken for a departed client);
//   - a response may take Write plus its size at MinRate, counted from its
//     first byte, however long the handler waited before it (sync renders,
//     non-stream batches); a progress stream gets Write for each event.
func (s *Server) deadlines(next echo.HandlerFunc) echo.HandlerFunc {
	t := s.Config.HTTP
	return func(c echo.Context) error {
		req, resp := c.Request(), c.Response()
		rc := http.NewResponseController(resp.Writer)
		if req.Body != nil && req.Body != http.NoBody {
			// A copy: net/http looks at its own request's body after the
			// handler (to close gently a connection whose body went unread).
			r := req.WithContext(req.Context())
			r.Body = &deadlineReader{rc: rc, body: req.Body, start: time.Now(), t: t}
			c.SetRequest(r)
		}
		resp.Writer = &deadlineWriter{ResponseWriter: resp.Writer, rc: rc, t: t}
		return next(c)
	}
}

// errBodyTimeout answers a body that stopped arriving.
func errBodyTimeout() *apierr.Error {
	return &apierr.Error{Status: http.StatusRequestTimeout, Code: "REQUEST_TIMEOUT",
		Message: "The request body did not arrive in time.", Err: os.ErrDeadlineExceeded}
}

// deadlineReader moves the connection's read deadline as the body arrives.
type deadlineReader struct {
	rc    *http.ResponseController
	body  io.ReadCloser
	start time.Time
	t     config.HTTPTimeouts
	n     int64
	set   time.Time
	// eof: the server reads the connection in the background now, without
	// a deadline; setting one would cancel the request when it passes.
	eof bool
}

func (r *deadlineReader) Read(p []byte) (int, error) {
	if r.eof {
		return 0, io.EOF
	}
	// A zero timeout is none, as in net/http.
	if d := r.start.Add(r.t.Read + rateTime(r.n, r.t.MinRate)); r.t.Read > 0 && d.Sub(r.set) > 100*time.Millisecond {
		_ = r.rc.SetReadDeadline(d)
		r.set = d
	}
	n, err := r.body.Read(p)
	r.n += int64(n)
	r.eof = errors.Is(err, io.EOF)
	if isTimeout(err) {
		return n, errBodyTimeout()
	}
	return n, err
}

func (r *deadlineReader) Close() error { return r.body.Close() }

func isTimeout(err error) bool {
	var ne net.Error
	return err != nil && (errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout())
}

// rateTime is how long n bytes take at rate bytes a second.
func rateTime(n, rate int64) time.Duration {
	if rate <= 0 {
		return 0
	}
	return time.Duration(float64(n) / float64(rate) * float64(time.Second))
}

// deadlineWriter sets the connection's write deadline before each write.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	t       config.HTTPTimeouts
	start   time.Time
	written int64
	stream  bool
}

func (w *deadlineWriter) arm(next int) {
	if w.t.Write <= 0 {
		return
	}
	now := time.Now()
	if w.start.IsZero() {
		w.start = now
	}
	d := w.start.Add(w.t.Write + rateTime(w.written+int64(next), w.t.MinRate))
	if w.stream {
		d = now.Add(w.t.Write)
	}
	_ = w.rc.SetWriteDeadline(d)
}

func (w *deadlineWriter) WriteHeader(code int) {
	// No informational answer leaves the gateway (DESIGN §4.20): Python's
	// http.client takes a 103 as the final answer. The 100 Continue a
	// client asks for with Expect is net/http's, never written here.
	if code < 200 {
		return
	}
	w.arm(0)
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.arm(len(p))
	n, err := w.ResponseWriter.Write(p)
	w.written += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController (Flush, deadlines) reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// streamWrites gives each write of a long-lived response (a progress
// stream) the write timeout of its own, instead of one for the whole.
func streamWrites(c echo.Context) {
	if w, ok := c.Response().Writer.(*deadlineWriter); ok {
		w.stream = true
	}
}

// maxRequestIDLen bounds a client's X-Request-ID.
const maxRequestIDLen = 64

// validRequestID reports whether a client's X-Request-ID may be used as
// ours: it goes into every log line of the request and into job messages.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("-_.:+/=@", b) >= 0) {
			return false
		}
	}
	return true
}

// requestIDs gives every request an ID: the client's X-Request-ID when it
// is short and plain, a fresh one otherwise. The response carries it.
func (s *Server) requestIDs(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !validRequestID(id) {
			id = ids.New()
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		c.Set("log", s.Log.With("request_id", id))
		// Code that logs with the request's context carries the ID too.
		c.SetRequest(c.Request().WithContext(logging.With(c.Request().Context(), "request_id", id)))
		return next(c)
	}
}

// ipExtractor tells the client's address: the connection's own, unless it
// comes from a trusted proxy (DOCRENDER_TRUSTED_PROXIES); then the nearest
// X-Forwarded-For address that is not itself a trusted proxy.
func ipExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	// Echo trusts loopback and private networks unless told not to.
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// origin is the scheme://host[:port] of a URL, lower case, without the
// scheme's default port; "" if u is not an absolute http(s) URL.
func origin(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Host == "" {
		return ""
	}
	scheme, host := strings.ToLower(p.Scheme), strings.ToLower(p.Host)
	switch {
	case scheme == "http":
		host = strings.TrimSuffix(host, ":80")
	case scheme == "https":
		host = strings.TrimSuffix(host, ":443")
	default:
		return ""
	}
	return scheme + "://" + host
}

// safeMethod reports whether a method changes nothing.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// crossSite reports whether a browser says the request comes from a page
// of another origin than base: Sec-Fetch-Site first (every current
// browser sends it), else Origin, else Referer. A request with none of
// them is not from a browser's page (curl, a server) and passes: another
// site's page cannot send a request without them, and the SameSite=Lax
// cookie keeps it out of cross-site POSTs of older browsers too.
func crossSite(r *http.Request, base string) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site != "same-origin" && site != "none"
	}
	if o := r.Header.Get("Origin"); o != "" {
		return origin(o) != base
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		return origin(ref) != base
	}
	return false
}

// checkCookieOrigin refuses a state-changing request signed in by the
// session cookie that a page of another site sent (DESIGN §5): the browser
// attaches the cookie to whatever the page asks. API keys and bearer
// tokens are sent by programs on purpose and are not checked.
func (s *Server) checkCookieOrigin(c echo.Context) error {
	r := c.Request()
	if safeMethod(r.Method) || !crossSite(r, origin(s.Config.BaseURL)) {
		return nil
	}
	return apierr.New(http.StatusForbidden, "Cross-site request refused: a request signed in by the session cookie must come from this service's own pages.").
		WithHint("Programs: send an API key, or the session token as Authorization: Bearer <token>.")
}
