package egress

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/netguard"
)

// client sends requests through addr as a proxy, as Chromium does.
func client(t *testing.T, addr string) *http.Client {
	t.Helper()
	pu, _ := url.Parse("http://" + addr)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
}

type answer struct {
	status int
	body   string
	header http.Header
}

func get(t *testing.T, c *http.Client, u string, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

func startProxy(t *testing.T, allow ...string) *Proxy {
	t.Helper()
	p, err := Start(netguard.New(allow), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func newLane(t *testing.T, p *Proxy) *Lane {
	t.Helper()
	l, err := p.NewLane()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// A lane serves only the files of the job its tab runs, only where that
// job's page may load them: its own host for a page with scripts, the home
// origin's /<token>/ for a page written there without scripts. Another
// lane, the proxy's own address, or the same lane after the job get nothing
// of them, whatever token they name.
func TestLanesServeOnlyTheirJob(t *testing.T) {
	p := startProxy(t)
	laneA, laneB := newLane(t, p), newLane(t, p)
	a, b := client(t, laneA.Addr()), client(t, laneB.Addr())
	scriptedA, doneA := laneA.Serve(Bundle{"secret.txt": []byte("A-SECRET")}, false)
	writtenB, doneB := laneB.Serve(Bundle{"secret.txt": []byte("B-SECRET")}, true)
	def := client(t, p.Addr())

	tests := []struct {
		name   string
		c      *http.Client
		url    string
		status int
		body   string
	}{
		{"scripted job, own host", a, scriptedA.URL("secret.txt"), 200, "A-SECRET"},
		{"scripted job, own token on home", a, scriptedA.HomeURL("secret.txt"), 404, ""},
		{"scripted job, other job's home path", a, writtenB.HomeURL("secret.txt"), 404, ""},
		{"scripted job, other job's host", a, writtenB.URL("secret.txt"), 404, ""},
		{"scripted job, missing file", a, scriptedA.URL("nope.txt"), 404, ""},
		{"written job, own home path", b, writtenB.HomeURL("secret.txt"), 200, "B-SECRET"},
		{"written job, own host", b, writtenB.URL("secret.txt"), 404, ""},
		{"written job, other job's host", b, scriptedA.URL("secret.txt"), 404, ""},
		{"written job, other job's home path", b, scriptedA.HomeURL("secret.txt"), 404, ""},
		{"home page on a lane", a, HomeURL, 200, homePage},
		{"proxy address, a job's host", def, scriptedA.URL("secret.txt"), 404, ""},
		{"proxy address, a job's home path", def, writtenB.HomeURL("secret.txt"), 404, ""},
		{"proxy address, home page", def, HomeURL, 200, homePage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := get(t, tc.c, tc.url, nil)
			if got.status != tc.status || (tc.body != "" && got.body != tc.body) || (tc.status != 200 && strings.Contains(got.body, "SECRET")) {
				t.Errorf("%s: %d %q, want %d %q", tc.url, got.status, got.body, tc.status, tc.body)
			}
			// Nothing from a bundle host ever sends a Referer naming it.
			if rp := got.header.Get("Referrer-Policy"); rp != "no-referrer" {
				t.Errorf("%s: Referrer-Policy %q", tc.url, rp)
			}
		})
	}

	doneA()
	doneB()
	for _, u := range []struct {
		c *http.Client
		u string
	}{{a, scriptedA.URL("secret.txt")}, {b, writtenB.HomeURL("secret.txt")}} {
		if got := get(t, u.c, u.u, nil); got.status != 404 {
			t.Errorf("after the job, %s: %d %q", u.u, got.status, got.body)
		}
	}
	// A job's end does not end the next job's serving on the same lane.
	next, doneNext := laneA.Serve(Bundle{"x": []byte("NEXT")}, false)
	doneA()
	if got := get(t, a, next.URL("x"), nil); got.body != "NEXT" {
		t.Errorf("an earlier job's end stopped the next job's files: %d %q", got.status, got.body)
	}
	doneNext()
}

// What the proxy forwards loses a Referer or Origin that names a bundle
// host (the token is in it); other values pass.
func TestForwardDropsBundleReferers(t *testing.T) {
	seen := make(chan http.Header, 10)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		io.WriteString(w, "UPSTREAM")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p := startProxy(t, ln.Addr().String())
	lane := newLane(t, p)
	c := client(t, lane.Addr())
	up := "http://" + ln.Addr().String() + "/x"

	tests := []struct {
		name, referer, origin string
		keep                  bool
	}{
		{"job host", "http://b0123456789abcdef0123456789abcdef.bundle.docrender.internal/index.html", "http://b0123456789abcdef0123456789abcdef.bundle.docrender.internal", false},
		{"home path", "http://home.bundle.docrender.internal/0123456789abcdef0123456789abcdef/index.html", "http://home.bundle.docrender.internal", false},
		{"upper case", "http://B01.BUNDLE.DOCRENDER.INTERNAL/", "http://B01.Bundle.Docrender.Internal", false},
		{"elsewhere", "http://example.com/page", "http://example.com", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := get(t, c, up, map[string]string{"Referer": tc.referer, "Origin": tc.origin})
			if got.body != "UPSTREAM" {
				t.Fatalf("not forwarded: %d %q", got.status, got.body)
			}
			h := <-seen
			if tc.keep != (h.Get("Referer") == tc.referer) || tc.keep != (h.Get("Origin") == tc.origin) {
				t.Errorf("upstream saw Referer %q, Origin %q (keep=%v)", h.Get("Referer"), h.Get("Origin"), tc.keep)
			}
		})
	}
}
