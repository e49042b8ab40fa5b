// Package egress is the HTTP proxy every rendered page talks through. It
// serves each job's uploaded files under a host of its own, and forwards
// everything else only to addresses the netguard policy allows. Putting the
// check in a proxy rather than in request interception covers every path
// out of Chromium (subresources, iframes in other processes, fetch, redirects,
// WebSockets via CONNECT) with no per-request round trip over CDP.
//
// A job's files belong to the job: each tab talks through a lane of its
// own, and a lane serves only the files of the job its tab is running
// (Lane.Serve), so a page that learns another job's token (from a Referer,
// say) still gets nothing of it. Bundle hosts answer with no-referrer, and
// a Referer or Origin naming one is dropped from what the proxy forwards.
package egress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/docrender/docrender/pkg/netguard"
)

// bundleSuffix marks the hosts that serve uploaded files; it never reaches DNS.
const bundleSuffix = ".bundle.docrender.internal"

// homeHost is where tabs wait between jobs, and where a page printed
// without scripts is opened: its bundle is under /<token>/ there, for that
// job's lane only. No script of a job ever runs on it: a job with scripts
// is never served its files there.
const homeHost = "home" + bundleSuffix

// HomeURL is the blank page of homeHost.
const HomeURL = "http://" + homeHost + "/"

// homePage is what HomeURL serves.
const homePage = "<!doctype html><html><head><meta charset=\"utf-8\"></head><body></body></html>"

// Bundle is a job's uploaded files by relative path.
type Bundle map[string][]byte

// Proxy is the filtering proxy. Its own address (the browser-wide default)
// serves no job's files; a tab's lane serves its job's.
type Proxy struct {
	policy    *netguard.Policy
	transport *http.Transport
	log       *slog.Logger
	ln        net.Listener
	srv       *http.Server
}

// Start listens on a loopback port.
func Start(policy *netguard.Policy, log *slog.Logger) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{policy: policy, log: log, ln: ln}
	p.transport = &http.Transport{
		DialContext:           policy.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.serve(w, r, nil)
	})}
	go p.srv.Serve(ln)
	return p, nil
}

// Addr is the proxy's host:port for Chromium's --proxy-server.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy.
func (p *Proxy) Close() error {
	p.transport.CloseIdleConnections()
	return p.srv.Close()
}

// Site is where a registered bundle is served.
type Site struct {
	token string
	// refused is what the egress rules refused the job's page (Refused).
	refused *refusals
}

// URL is the address of the bundle's file name on a host of the bundle's
// own: an origin no other job shares, for pages that run scripts.
func (s Site) URL(name string) string {
	return "http://b" + s.token + bundleSuffix + "/" + EscapePath(name)
}

// HomeURL is the address of the bundle's file name under HomeURL, for a
// page opened without scripts in a tab that stays on the home origin.
// The token keeps every URL of the job apart from every other job's, so
// nothing a tab cached for one job can answer another's request.
func (s Site) HomeURL(name string) string {
	return HomeURL + s.token + "/" + EscapePath(name)
}

// EscapePath escapes each segment of a bundle file name for a URL path.
func EscapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// Lane is a listener of its own for one browser tab. It serves the files of
// the job its tab runs, and notes whether the tab reached anything beyond
// them, which decides whether the tab's browser context can serve the next
// job or must be thrown away, and what the egress rules refused the job
// (Site.Refused, for its render report).
type Lane struct {
	p       *Proxy
	ln      net.Listener
	srv     *http.Server
	foreign atomic.Bool
	job     atomic.Pointer[job]
}

// job is what a lane serves for the job on its tab.
type job struct {
	token string
	files Bundle
	// written: the page is opened on the home origin with scripts off
	// (browser.Tab.Open), its files under HomeURL/<token>/; otherwise it
	// runs scripts on its own host, b<token>.
	written bool
	refused *refusals
}

// NewLane opens a lane on a fresh loopback port.
func (p *Proxy) NewLane() (*Lane, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress: lane: %w", err)
	}
	l := &Lane{p: p, ln: ln}
	l.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isBundle(r) {
			l.foreign.Store(true)
		}
		p.serve(w, r, l.job.Load())
	})}
	go l.srv.Serve(ln)
	return l, nil
}

// ServeAgain is Serve under the token of site, an earlier job's on this
// lane, for a job that fills that job's written document in place (a
// stored template's page kept warm, package render): the document's
// addresses stay valid. The caller sees to it that the two jobs are of the
// same account and files. The refusals are the new job's own.
func (l *Lane) ServeAgain(site Site, b Bundle) (Site, func()) {
	j := &job{token: site.token, files: b, written: true, refused: &refusals{}}
	l.job.Store(j)
	return Site{token: j.token, refused: j.refused}, func() { l.job.CompareAndSwap(j, nil) }
}

// Serve makes the lane serve b, under a fresh unguessable token, to the job
// its tab runs now, until the returned function is called; then the lane
// serves no job's files again. written is how the page is loaded: written
// into the home document with scripts off (its files only under
// Site.HomeURL), or navigated to with scripts on (only under Site.URL).
// One job at a time: a lane's tab runs one.
func (l *Lane) Serve(b Bundle, written bool) (Site, func()) {
	tok := make([]byte, 16)
	rand.Read(tok)
	j := &job{token: hex.EncodeToString(tok), files: b, written: written, refused: &refusals{}}
	l.job.Store(j)
	return Site{token: j.token, refused: j.refused}, func() { l.job.CompareAndSwap(j, nil) }
}

// Addr is the lane's host:port for the browser context's proxy setting.
func (l *Lane) Addr() string { return l.ln.Addr().String() }

// Foreign reports whether anything but a job bundle was requested since Reset.
func (l *Lane) Foreign() bool { return l.foreign.Load() }

// Reset clears the Foreign mark.
func (l *Lane) Reset() { l.foreign.Store(false) }

// Close stops the lane.
func (l *Lane) Close() error { return l.srv.Close() }

func isBundle(r *http.Request) bool {
	return r.Method != http.MethodConnect && strings.HasSuffix(strings.ToLower(r.URL.Hostname()), bundleSuffix)
}

// serve answers one proxy request; j is the job whose files may be served
// (nil: none).
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, j *job) {
	if r.Method == http.MethodConnect {
		p.connect(w, r, j)
		return
	}
	if r.URL.Host == "" {
		http.Error(w, "proxy only", http.StatusBadRequest)
		return
	}
	host := strings.ToLower(r.URL.Hostname())
	if strings.HasSuffix(host, bundleSuffix) {
		serveBundle(w, r, host, j)
		return
	}
	if r.URL.Scheme != "http" {
		http.Error(w, "scheme not allowed", http.StatusForbidden)
		return
	}
	p.forward(w, r, j)
}

// serveBundle serves the home page, or a file of j where j's page may load
// it: under HomeURL/<token>/ for a written page, on b<token> for one with
// scripts. Nothing there ever sends a Referer naming its host.
func serveBundle(w http.ResponseWriter, r *http.Request, host string, j *job) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if u, err := url.PathUnescape(name); err == nil {
		name = u
	}
	token, ok := strings.CutPrefix(strings.TrimSuffix(host, bundleSuffix), "b")
	written := false
	if host == homeHost {
		if name == "" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, homePage)
			return
		}
		token, name, ok = strings.Cut(name, "/")
		written = true
	}
	if !ok || j == nil || j.written != written || token != j.token {
		http.NotFound(w, r)
		return
	}
	data, ok := j.files[name]
	if !ok {
		// A 404 in the type its name asks for: http.NotFound's text/plain
		// with nosniff makes Chromium drop a stylesheet's or script's
		// response unheard (the request only "aborted"), so the report
		// would not list the missing file.
		if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(http.StatusNotFound)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = http.DetectContentType(data)
	}
	w.Header().Set("Content-Type", ct)
	w.Write(data)
}

// refuse answers a request the egress rules refused, and notes it for j's
// render report (nil: no job's).
func (p *Proxy) refuse(w http.ResponseWriter, j *job, f Refusal, err error) {
	p.log.Info("render egress blocked", "target", f.host(), "err", err)
	if j != nil {
		j.refused.add(f)
	}
	http.Error(w, "blocked by docrender", http.StatusForbidden)
}

// hopHeaders are dropped when forwarding (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, j *job) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	// A page may ask for a full Referer (a referrer policy of its own); a
	// job's address is nobody else's business.
	for _, h := range []string{"Referer", "Origin"} {
		for _, v := range out.Header.Values(h) {
			if strings.Contains(strings.ToLower(v), bundleSuffix) {
				out.Header.Del(h)
				break
			}
		}
	}
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		if errors.Is(err, netguard.ErrBlocked) {
			p.refuse(w, j, Refusal{URL: r.URL.String()}, err)
			return
		}
		http.Error(w, "upstream unreachable", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vv := range resp.Header {
		for _, v := range vv {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// connect tunnels TLS (and WebSocket) traffic to an allowed address.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request, j *job) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil || strings.HasSuffix(strings.ToLower(host), bundleSuffix) {
		http.Error(w, "bad CONNECT target", http.StatusBadRequest)
		return
	}
	up, err := p.policy.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		if errors.Is(err, netguard.ErrBlocked) {
			p.refuse(w, j, Refusal{URL: r.Host, Tunnel: true}, err)
			return
		}
		http.Error(w, "upstream unreachable", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	conn.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n"))
	go func() {
		if buf.Reader.Buffered() > 0 {
			io.CopyN(up, buf, int64(buf.Reader.Buffered()))
		}
		io.Copy(up, conn)
		up.Close()
	}()
	io.Copy(conn, up)
	conn.Close()
}
