package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrender/docrender/worker/browser"
)

// canary is a loopback server that must never be reached by a rendered page.
type canary struct {
	hits atomic.Int64
	addr string
	port string
}

func startCanary(t *testing.T, network, addr string) *canary {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &canary{addr: ln.Addr().String()}
	_, c.port, _ = net.SplitHostPort(c.addr)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		fmt.Fprint(w, "CANARYLEAK")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return c
}

func TestPagesCannotReachPrivateAddresses(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	v4 := startCanary(t, "tcp4", "127.0.0.1:0")
	v6 := startCanary(t, "tcp6", "[::1]:0")
	targets := privateTargets(v4.port, v6.port)
	var b strings.Builder
	b.WriteString(`<!doctype html><body><p>START</p>`)
	for i, u := range targets {
		fmt.Fprintf(&b, `<img src="%s?i=%d"><iframe src="%s?f=%d"></iframe>`, u, i, u, i)
		fmt.Fprintf(&b, `<link rel="stylesheet" href="%s?css=%d">`, u, i)
	}
	b.WriteString(`<iframe src="file:///etc/passwd" style="width:600px;height:200px"></iframe>`)
	b.WriteString(`<iframe src="file:///etc/hostname"></iframe>`)
	b.WriteString(`<script>
const urls = ` + jsList(targets) + `;
const out = [];
Promise.allSettled(urls.map(u => {
  if (u.startsWith('ws')) { try { new WebSocket(u); } catch (e) {} return Promise.resolve(); }
  return fetch(u).then(r => r.text()).then(t => out.push(t));
})).then(() => {
  const x = new XMLHttpRequest();
  try { x.open('GET', urls[0] + '?xhr=1', false); x.send(); out.push(x.responseText); } catch (e) {}
  document.body.insertAdjacentHTML('beforeend', '<p>FETCHED ' + out.join(' ') + ' END</p>');
});
</script>`)
	// Give the script a moment; the page is printed after load and fonts.
	b.WriteString(`<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">`)
	pdf := c.generatePDF(b.String(), nil)
	txt := text(t, pdf)
	if strings.Contains(txt, "CANARYLEAK") || strings.Contains(txt, "root:") {
		t.Fatalf("a private resource reached the PDF:\n%s", txt)
	}
	if !strings.Contains(txt, "START") {
		t.Fatalf("page did not render:\n%s", txt)
	}
	if n := v4.hits.Load() + v6.hits.Load(); n != 0 {
		t.Fatalf("canary hit %d times", n)
	}
}

func jsList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ",") + "]"
}

// A redirect from an allowed host to a private one is refused too: each hop
// goes through the same check.
func TestAllowListAndRedirects(t *testing.T) {
	can := startCanary(t, "tcp4", "127.0.0.1:0")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var allowedHits atomic.Int64
	allowed := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowedHits.Add(1)
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://"+can.addr+"/after-redirect", http.StatusFound)
			return
		}
		fmt.Fprint(w, `<p>ALLOWEDCONTENT</p>`)
	})}
	go allowed.Serve(ln)
	t.Cleanup(func() { allowed.Close() })
	allowedAddr := ln.Addr().String()

	svc := startService(t, func(cfg *configT) { cfg.RenderAllowHosts = []string{allowedAddr} })
	c := newClient(t, svc)
	html := fmt.Sprintf(`<p>TOP</p><iframe src="http://%s/page"></iframe><iframe src="http://%s/redirect"></iframe><img src="http://%s/direct">`,
		allowedAddr, allowedAddr, can.addr)
	txt := text(t, c.generatePDF(html, nil))
	if !strings.Contains(txt, "ALLOWEDCONTENT") {
		t.Errorf("allow-listed host not reachable:\n%s", txt)
	}
	if allowedHits.Load() < 2 {
		t.Errorf("allowed host hit %d times", allowedHits.Load())
	}
	if can.hits.Load() != 0 || strings.Contains(txt, "CANARYLEAK") {
		t.Fatalf("canary reached via redirect or directly: %d hits", can.hits.Load())
	}
}

// Jobs do not share cookies, storage, history or windows, also when their
// tab is reused; the probe tries every place a page can leave state.
func TestJobsAreIsolated(t *testing.T) {
	svc := startService(t, func(cfg *configT) { cfg.Workers = 1 })
	c := newClient(t, svc)
	// Storage is per origin and every job has an origin of its own; the
	// cookie with a domain wider than the job's host is the one to catch.
	probe := `<p id="o"></p><script>
const seen = 'cookie=' + (document.cookie || 'none') + ' local=' + (localStorage.getItem('k') || 'none') +
  ' session=' + (sessionStorage.getItem('k') || 'none') + ' history=' + history.length + ' name=' + (window.name || 'none');
document.cookie = 'secret=s1; path=/';
document.cookie = 'wide=s2; path=/; domain=bundle.docrender.internal';
localStorage.setItem('k', 'leak'); sessionStorage.setItem('k', 'leak'); window.name = 'leak';
indexedDB.open('d', 1);
window.open(location.href + '?popup');
document.getElementById('o').textContent = seen;
</script>`
	first := ""
	for i := range 4 {
		txt := strings.TrimSpace(text(t, c.generatePDF(probe, nil)))
		if !strings.Contains(txt, "cookie=none local=none session=none history=") || !strings.HasSuffix(txt, "name=none") {
			t.Fatalf("job %d saw state of an earlier job: %s", i, txt)
		}
		// The history length is the same for every job: none inherits entries.
		if first == "" {
			first = txt
		} else if txt != first {
			t.Fatalf("job %d saw %q, the first job %q", i, txt, first)
		}
	}
	// A page that stays within its uploads leaves its tab reusable. (The
	// probes' tabs are renewed after them, popups: that ends first.)
	pool := svc.Worker.Pool()
	settled(t, pool)
	before := pool.Fresh()
	for range 3 {
		c.generatePDF(simpleHTML, nil)
	}
	settled(t, pool)
	if got := pool.Fresh() - before; got != 0 {
		t.Errorf("%d new browser contexts for plain pages, want the tab reused", got)
	}
	// One that reached out elsewhere gets a fresh context afterwards.
	c.generatePDF(`<img src="http://192.0.2.1/x.png"><p>out</p>`, nil)
	c.generatePDF(simpleHTML, nil)
	settled(t, pool)
	if got := pool.Fresh() - before; got != 1 {
		t.Errorf("%d new contexts after a page reached another origin, want 1", got)
	}
}

// settled waits until every tab of pool is back, cleaned or renewed: the
// pool readies a tab after the job's answer, so a test that counts
// browser contexts reads them after this.
func settled(t *testing.T, pool *browser.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := pool.Settled(ctx); err != nil {
		t.Fatal("tabs not back in the pool:", err)
	}
}

// The same probe without a popup: its tab is cleaned and reused rather than
// renewed (the path TestJobsAreIsolated's popup skips), and a page that
// plants state in its pagehide handler and timers, which could run while
// the tab moves on, leaves nothing either. Two accounts take turns. Every
// job has an origin of its own, so storage and host cookies would stay
// apart anyway (they check that it stays so); the cookie for the whole
// bundle domain and window.name are what only the cleaning keeps from the
// next job (without it, both reach it: checked by disabling Pool.clean).
func TestCleanedTabsKeepNoState(t *testing.T) {
	svc := startService(t, func(cfg *configT) { cfg.Workers = 1 })
	tenants := []*client{newClient(t, svc), newClient(t, svc)}
	probe := `<p id="o"></p><script>
const seen = 'cookie=' + (document.cookie || 'none') + ' local=' + (localStorage.getItem('k') || 'none') +
  ' session=' + (sessionStorage.getItem('k') || 'none') + ' name=' + (window.name || 'none');
const plant = () => {
  document.cookie = 'secret=s1; path=/';
  document.cookie = 'wide=s2; path=/; domain=bundle.docrender.internal';
  localStorage.setItem('k', 'leak'); sessionStorage.setItem('k', 'leak'); window.name = 'leak';
};
plant();
addEventListener('pagehide', plant);
setInterval(plant, 1);
document.getElementById('o').textContent = seen;
</script>`
	before := svc.Worker.Pool().Fresh()
	for i := range 6 {
		txt := strings.TrimSpace(text(t, tenants[i%2].generatePDF(probe, nil)))
		if txt != "cookie=none local=none session=none name=none" {
			t.Fatalf("job %d saw state of an earlier job: %s", i, txt)
		}
	}
	settled(t, svc.Worker.Pool())
	if got := svc.Worker.Pool().Fresh() - before; got != 0 {
		t.Errorf("%d new browser contexts: the test did not check cleaning", got)
	}
}
