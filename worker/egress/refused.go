package egress

import (
	"net"
	"net/url"
	"strings"
	"sync"
)

// A job's lane notes what the egress rules refused its page, for the render
// report (DESIGN §6). A hostile page may ask for a million addresses: what
// is kept is bounded in number and length.
const (
	// maxRefusals bounds the distinct refusals kept per job. The report
	// lists fewer; the rest tell the renderer which failed requests of the
	// page were refusals rather than failures.
	maxRefusals = 1000
	// maxRefusalURL bounds the length of a kept URL; a longer one is cut
	// and ends in "…".
	maxRefusalURL = 2 << 10
)

// Refusal is a request of a job's page that the egress rules refused.
type Refusal struct {
	// URL is the refused request's address: the whole URL of a plain http
	// request, only "host:port" of a tunnel (https, wss), which is all the
	// proxy sees of it.
	URL    string
	Tunnel bool
}

// host is the refused host (and port), all the log says of it: the rest of
// a URL is the page's business.
func (f Refusal) host() string {
	if f.Tunnel {
		return f.URL
	}
	if u, err := url.Parse(f.URL); err == nil {
		return u.Host
	}
	return ""
}

// refusals is what a job's lane refused, distinct, in order.
type refusals struct {
	mu   sync.Mutex
	list []Refusal
	seen map[Refusal]bool
}

func (r *refusals) add(f Refusal) {
	f.URL = cut(f.URL)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[f] || len(r.list) >= maxRefusals {
		return
	}
	if r.seen == nil {
		r.seen = map[Refusal]bool{}
	}
	r.seen[f] = true
	r.list = append(r.list, f)
}

// Refused returns what the egress rules refused the site's job so far, in
// the order it happened, each once.
func (s Site) Refused() []Refusal {
	if s.refused == nil {
		return nil
	}
	s.refused.mu.Lock()
	defer s.refused.mu.Unlock()
	return append([]Refusal(nil), s.refused.list...)
}

// RefusalOf returns the refusal behind a request the page saw fail at
// rawURL, if it was one: the same plain http URL refused, or the tunnel of
// an https or wss URL. The proxy refuses before the browser hears of it,
// so a failure the page sees is already noted here.
func (s Site) RefusalOf(rawURL string) (Refusal, bool) {
	f, ok := refusalOf(rawURL)
	if !ok || s.refused == nil {
		return Refusal{}, false
	}
	s.refused.mu.Lock()
	defer s.refused.mu.Unlock()
	return f, s.refused.seen[f]
}

// refusalOf is the Refusal the proxy notes when it refuses rawURL, a URL
// as the browser reports it: what Chromium sends a proxy is that URL,
// without its fragment, which the browser reports apart.
func refusalOf(rawURL string) (Refusal, bool) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return Refusal{}, false
	}
	var port string
	switch strings.ToLower(scheme) {
	case "http":
		return Refusal{URL: cut(rawURL)}, true
	case "ws": // Chromium tunnels ws:// through an HTTP proxy too
		port = "80"
	case "https", "wss":
		port = "443"
	default:
		return Refusal{}, false
	}
	authority := rest[:strings.IndexAny(rest+"/", "/?#")]
	u, err := url.Parse("http://" + authority)
	if err != nil || u.Host == "" {
		return Refusal{}, false
	}
	return Refusal{URL: hostPort(u, port), Tunnel: true}, true
}

// cut shortens a URL longer than maxRefusalURL, the same way wherever it is
// kept or compared.
func cut(u string) string {
	if len(u) <= maxRefusalURL {
		return u
	}
	return strings.ToValidUTF8(u[:maxRefusalURL-len("…")], "") + "…"
}

// hostPort is u's host:port as a CONNECT request names it.
func hostPort(u *url.URL, defaultPort string) string {
	port := u.Port()
	if port == "" {
		port = defaultPort
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// Relative turns the addresses of the site's own files in text into the
// files' relative paths ("img/logo.png"): what the client uploaded, not
// where this job's tab found it. Other text is left as it is.
func (s Site) Relative(text string) string {
	if s.token == "" || !strings.Contains(text, bundleSuffix) {
		return text
	}
	text = strings.ReplaceAll(text, s.HomeURL(""), "")
	return strings.ReplaceAll(text, s.URL(""), "")
}
