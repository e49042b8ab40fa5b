package e2e

// The HTTP edge (DESIGN §5): listener timeouts, body caps, login
// throttling, the origin check of cookie requests, request IDs and the
// metrics listener, tried from outside as a client would.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/config"
)

// edgeTimeouts are short, so the tests outlast them quickly.
var edgeTimeouts = config.HTTPTimeouts{ReadHeader: 2 * time.Second, Read: 2 * time.Second,
	Write: time.Second, Idle: 2 * time.Second, MinRate: 64 << 10}

// withT is c reporting to the (sub)test t.
func (c *client) withT(t testing.TB) *client {
	cc := *c
	cc.t = t
	return &cc
}

// pacedReader yields n bytes of fill, chunk at a time, one chunk every gap.
type pacedReader struct {
	data  []byte
	chunk int
	gap   time.Duration
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(p.gap)
	n := copy(b[:min(len(b), p.chunk)], p.data)
	p.data = p.data[n:]
	return n, nil
}

// rawConn opens a TCP connection to addr (host:port).
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedWithin reads conn until the server closes it and fails unless it
// did within limit of start.
func closedWithin(t *testing.T, conn net.Conn, start time.Time, limit time.Duration) []byte {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(limit + 10*time.Second))
	got, err := io.ReadAll(conn)
	took := time.Since(start)
	if err != nil && !strings.Contains(err.Error(), "reset by peer") {
		t.Fatalf("connection still open after %v: %v", took, err)
	}
	if took > limit {
		t.Fatalf("connection closed after %v, limit %v", took, limit)
	}
	return got
}

func TestEdgeTimeouts(t *testing.T) {
	svc := startService(t, func(cfg *configT) {
		cfg.HTTP = edgeTimeouts
		cfg.MetricsAddr = "127.0.0.1:0"
	})
	c := newClient(t, svc)
	api := strings.TrimPrefix(svc.URL, "http://")
	to := edgeTimeouts

	t.Run("login body trickled byte by byte is cut off", func(t *testing.T) {
		conn := rawConn(t, api)
		fmt.Fprintf(conn, "POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
		start := time.Now()
		go func() {
			for range 1000 {
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		got := closedWithin(t, conn, start, to.Read+1500*time.Millisecond)
		if !bytes.HasPrefix(got, []byte("HTTP/1.1 408 ")) || !bytes.Contains(got, []byte(`"code":"REQUEST_TIMEOUT"`)) {
			t.Fatalf("answer %q, want 408 REQUEST_TIMEOUT", got)
		}
	})
	t.Run("headers trickled byte by byte are cut off", func(t *testing.T) {
		for _, addr := range []string{api, svc.App.MetricsAddr()} {
			conn := rawConn(t, addr)
			start := time.Now()
			go func() {
				for _, b := range []byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200)) {
					if _, err := conn.Write([]byte{b}); err != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			closedWithin(t, conn, start, to.ReadHeader+1500*time.Millisecond)
		}
	})
	t.Run("idle connection is closed", func(t *testing.T) {
		conn := rawConn(t, api)
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		start := time.Now()
		_ = conn.SetReadDeadline(time.Now().Add(to.Idle + 10*time.Second))
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("idle connection: %v, want EOF", err)
		}
		if took := time.Since(start); took > to.Idle+1500*time.Millisecond {
			t.Fatalf("idle connection closed after %v, limit %v", took, to.Idle)
		}
	})
	t.Run("a render outlasting the read and write timeouts is answered", func(t *testing.T) {
		// The page's script keeps the render busy past both timeouts.
		start := time.Now()
		pdf := c.withT(t).generatePDF(`<p>SLOW RENDER</p><script>const t0 = Date.now(); while (Date.now() - t0 < 3500) {}</script>`, nil)
		if took := time.Since(start); took < to.Read+to.Write {
			t.Fatalf("render took %v: too short to outlast the timeouts", took)
		}
		if !strings.Contains(text(t, pdf), "SLOW RENDER") {
			t.Fatal("PDF lacks its text")
		}
	})
	t.Run("an upload arriving steadily past the read timeout is accepted", func(t *testing.T) {
		// 3 MiB at about 1 MiB/s: longer than the read timeout, well over MinRate.
		b := multipartBody([]file{htmlFile("index.html", `<p>BIG UPLOAD</p>`), {Name: "big.bin", Data: bytes.Repeat([]byte("x"), 3<<20)}}, nil)
		data, _ := io.ReadAll(b.r)
		req, _ := http.NewRequest("POST", svc.URL+"/pdf/generate", &pacedReader{data: data, chunk: 64 << 10, gap: 60 * time.Millisecond})
		req.ContentLength = int64(len(data))
		req.Header.Set("Content-Type", b.ctype)
		req.Header.Set("X-API-Key", c.Key)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		mustStatus(t, resp, http.StatusOK)
		if !strings.Contains(text(t, readAll(t, resp)), "BIG UPLOAD") {
			t.Fatal("PDF lacks its text")
		}
		if took := time.Since(start); took < to.Read {
			t.Fatalf("upload took %v: too short to outlast the read timeout", took)
		}
	})
	t.Run("a progress stream stays open past the write timeout", func(t *testing.T) {
		c := c.withT(t)
		id := c.startStream(map[string]any{"documents": slowDocs(4, 1500, "edge")})
		start := time.Now()
		resp := c.openStream(id)
		checkSSEHeaders(t, resp)
		events := readEvents(t, resp)
		took := time.Since(start)
		if len(events) == 0 || events[len(events)-1].Name != "complete" {
			t.Fatalf("stream ended after %v without complete: %+v", took, events)
		}
		if took < 2*to.Write {
			t.Fatalf("stream lasted %v: too short to outlast the write timeout %v", took, to.Write)
		}
	})
	t.Run("metrics only on their own listener", func(t *testing.T) {
		resp, err := http.Get(svc.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		expectError(t, resp, http.StatusNotFound, apierr.NotFound)
		if !strings.Contains(scrape(t, "http://"+svc.App.MetricsAddr()), "docrender_http_requests_total") {
			t.Fatal("metrics listener lacks the request counter")
		}
		resp, err = http.Get("http://" + svc.App.MetricsAddr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("metrics listener answers /healthz with %d, want 404", resp.StatusCode)
		}
	})
}

// Without DOCRENDER_METRICS_ADDR, /metrics is on the API address (DESIGN §2).
func TestMetricsOnAPIAddressByDefault(t *testing.T) {
	svc := sharedService(t)
	if svc.App.MetricsAddr() != "" {
		t.Fatalf("a metrics listener at %s without DOCRENDER_METRICS_ADDR", svc.App.MetricsAddr())
	}
	if !strings.Contains(scrape(t, svc.URL), "docrender_queue_depth") {
		t.Fatal("/metrics lacks the queue depth")
	}
}

// sentCounter counts what the client managed to send.
type sentCounter struct {
	r io.Reader
	n int64
}

func (s *sentCounter) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += int64(n)
	return n, err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestBodyCaps(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	const big = 50 << 20
	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprintf("50 MiB login body, declared %v", declared), func(t *testing.T) {
			const prefix = `{"email":"a@example.com","password":"`
			sent := &sentCounter{r: io.MultiReader(strings.NewReader(prefix), io.LimitReader(zeros{}, big))}
			req, _ := http.NewRequest("POST", svc.URL+"/api/auth/login", struct{ io.Reader }{sent})
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = -1
			if declared {
				req.ContentLength = big + int64(len(prefix))
			}
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("no answer after %v, %d bytes sent: %v", time.Since(start), sent.n, err)
			}
			e := expectError(t, resp, http.StatusRequestEntityTooLarge, apierr.PayloadTooLarge)
			if !strings.Contains(e.Message, "16384") {
				t.Errorf("message %q does not state the limit", e.Message)
			}
			// Socket buffers take a few MiB; the server read no more than the cap.
			if sent.n > 16<<20 {
				t.Errorf("the client sent %d bytes before the answer", sent.n)
			}
		})
	}
	pad := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name   string
		path   string
		body   string
		header map[string]string
		status int
		limit  string
	}{
		{"register over 16 KiB", "/api/auth/register", `{"email":"b@example.com","password":"` + pad(16<<10) + `"}`, nil, 413, "16384"},
		{"key name over 1 MiB", "/api/keys", `{"name":"` + pad(1<<20) + `"}`, map[string]string{"Authorization": "Bearer " + c.Token}, 413, "1048576"},
		{"qr request over 1 MiB", "/pdf/qrcode", `{"data":"` + pad(1<<20) + `"}`, map[string]string{"X-API-Key": c.Key}, 413, "1048576"},
		// A batch carries whole documents: its cap is the upload limit
		// (8 MiB in tests), so 2 MiB is read and judged on its content.
		{"batch of 2 MiB", "/pdf/generate-batch", `{"documents":[{"fileName":"","htmlContent":"` + pad(2<<20) + `"}]}`, map[string]string{"X-API-Key": c.Key}, 400, ""},
		{"batch over the upload limit", "/pdf/generate-batch", `{"documents":[{"fileName":"a","htmlContent":"` + pad(9<<20) + `"}]}`, map[string]string{"X-API-Key": c.Key}, 413, "8388608"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", svc.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			e := expectError(t, resp, tc.status, map[int]string{400: apierr.BadRequest, 413: apierr.PayloadTooLarge}[tc.status])
			if !strings.Contains(e.Message, tc.limit) {
				t.Errorf("message %q does not state the limit %s", e.Message, tc.limit)
			}
		})
	}
}

// authClient sends login and register requests from a chosen local address.
type authClient struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newAuthClient(t *testing.T, base, localIP string) *authClient {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(localIP)}}
	return &authClient{t: t, base: base, hc: &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: d.DialContext}}}
}

// post sends {email, password} to path with X-Forwarded-For xff (if any);
// it returns the status, the Retry-After, the body and the time taken.
func (a *authClient) post(path, email, password, xff string) (int, string, []byte, time.Duration) {
	a.t.Helper()
	b := jsonBody(map[string]any{"email": email, "password": password})
	req, _ := http.NewRequest("POST", a.base+path, b.r)
	req.Header.Set("Content-Type", b.ctype)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	start := time.Now()
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	body := readAll(a.t, resp)
	return resp.StatusCode, resp.Header.Get("Retry-After"), body, time.Since(start)
}

// check429 checks a throttled answer: shape A RATE_LIMITED, Retry-After within max.
func check429(t *testing.T, body []byte, retryAfter string, max int) {
	t.Helper()
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Body: io.NopCloser(bytes.NewReader(body)), Request: &http.Request{Method: "POST"}}
	expectError(t, resp, http.StatusTooManyRequests, apierr.RateLimited)
	if n, err := strconv.Atoi(retryAfter); err != nil || n < 1 || n > max {
		t.Fatalf("Retry-After %q, want 1 to %d seconds", retryAfter, max)
	}
}

// spoofed is a different made-up X-Forwarded-For for each i.
func spoofed(i int) string { return fmt.Sprintf("198.51.100.%d", i%250+1) }

// awayFromWindowEnd waits, if needed, so that a fixed throttling window
// of this length (aligned on the Unix epoch) has at least need left.
func awayFromWindowEnd(window, need time.Duration) {
	left := window - time.Duration(time.Now().UnixNano()%int64(window))
	if left < need {
		time.Sleep(left + 100*time.Millisecond)
	}
}

// Login is throttled per email and per client address, and a made-up
// X-Forwarded-For changes neither (no trusted proxies configured).
func TestAuthThrottle(t *testing.T) {
	svc := startService(t, func(cfg *configT) { cfg.AuthAttemptsPerMinute = 30 })
	a := newAuthClient(t, svc.URL, "127.0.0.1")
	awayFromWindowEnd(15*time.Minute, 30*time.Second)
	victim := newClient(t, svc)
	t.Run("25 wrong passwords", func(t *testing.T) {
		var statuses []int
		for i := range 25 {
			status, ra, body, _ := a.post("/api/auth/login", victim.Email, "wrong password", spoofed(i))
			statuses = append(statuses, status)
			if status == http.StatusTooManyRequests {
				check429(t, body, ra, 15*60)
			}
		}
		want := slices.Repeat([]int{401}, 10)
		want = append(want, slices.Repeat([]int{429}, 15)...)
		if !slices.Equal(statuses, want) {
			t.Fatalf("statuses %v, want 10 × 401 then 429", statuses)
		}
		// The right password is refused too: the answers must not tell a guess apart.
		if status, _, body, _ := a.post("/api/auth/login", victim.Email, "correct horse", spoofed(99)); status != http.StatusTooManyRequests {
			t.Fatalf("right password during the lock: %d %s", status, body)
		}
		// The victim's API key and session keep working.
		resp := victim.do("GET", "/api/auth/me", body{}, nil)
		mustStatus(t, resp, http.StatusOK)
		readAll(t, resp)
	})
	t.Run("per address, whatever X-Forwarded-For says", func(t *testing.T) {
		// Fresh emails, each with its own made-up X-Forwarded-For: only
		// the address limit can refuse them.
		for i := range 2 * 30 {
			status, ra, body, _ := a.post("/api/auth/login", fmt.Sprintf("nobody%d-%d@example.com", i, time.Now().UnixNano()), "some password", spoofed(i))
			if status == http.StatusTooManyRequests {
				check429(t, body, ra, 60)
				if !strings.Contains(string(body), "address") {
					t.Fatalf("429 not for the address: %s", body)
				}
				return
			}
			if status != http.StatusUnauthorized {
				t.Fatalf("status %d: %s", status, body)
			}
		}
		t.Fatal("60 attempts from one address in a minute were never throttled")
	})
}

// Behind a trusted proxy, the client address is the nearest untrusted
// X-Forwarded-For entry; a connection from elsewhere cannot claim one.
// Login for an unknown email takes as long as for a known one.
func TestAuthBehindTrustedProxy(t *testing.T) {
	svc := startService(t, func(cfg *configT) {
		cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
		cfg.AuthAttemptsPerMinute = 30
	})
	proxy := newAuthClient(t, svc.URL, "127.0.0.1")
	other := newAuthClient(t, svc.URL, "127.0.0.2")
	fresh := func(i int) string { return fmt.Sprintf("nobody%d-%d@example.com", i, time.Now().UnixNano()) }

	t.Run("each forwarded client has its own limit", func(t *testing.T) {
		for i := range 35 {
			if status, _, body, _ := proxy.post("/api/auth/login", fresh(i), "some password", fmt.Sprintf("203.0.113.%d", i+1)); status != http.StatusUnauthorized {
				t.Fatalf("attempt %d: %d %s", i, status, body)
			}
		}
	})
	t.Run("a spoofed entry before the proxy's own is ignored", func(t *testing.T) {
		for i := range 2 * 30 {
			// The proxy appends the real client; the client made up the first entry.
			status, ra, body, _ := proxy.post("/api/auth/login", fresh(i), "some password", spoofed(i)+", 192.0.2.77")
			if status == http.StatusTooManyRequests {
				check429(t, body, ra, 60)
				return
			}
		}
		t.Fatal("one forwarded client was never throttled")
	})
	t.Run("an untrusted connection cannot claim an address", func(t *testing.T) {
		for i := range 2 * 30 {
			status, ra, body, _ := other.post("/api/auth/login", fresh(i), "some password", spoofed(i))
			if status == http.StatusTooManyRequests {
				check429(t, body, ra, 60)
				return
			}
		}
		t.Fatal("an untrusted connection was never throttled")
	})
	t.Run("unknown and known emails take as long", func(t *testing.T) {
		// Known accounts, each tried fewer times than the email limit;
		// every request from its own forwarded address.
		const samples = 21
		var known []string
		for i := range 3 {
			email := fresh(1000 + i)
			if status, _, body, _ := proxy.post("/api/auth/register", email, "correct horse", fmt.Sprintf("192.0.2.%d", i+1)); status != http.StatusCreated {
				t.Fatalf("register: %d %s", status, body)
			}
			known = append(known, email)
		}
		var tKnown, tUnknown []time.Duration
		for i := range samples {
			// Alternate, so the machine's load falls on both alike.
			st, _, body, d := proxy.post("/api/auth/login", known[i%3], "wrong password", fmt.Sprintf("2001:db8:%x::1", i+1))
			if st != http.StatusUnauthorized {
				t.Fatalf("known email: %d %s", st, body)
			}
			tKnown = append(tKnown, d)
			st, _, body, d = proxy.post("/api/auth/login", fresh(2000+i), "wrong password", fmt.Sprintf("2001:db8:%x::2", i+1000))
			if st != http.StatusUnauthorized {
				t.Fatalf("unknown email: %d %s", st, body)
			}
			tUnknown = append(tUnknown, d)
		}
		mk, mu := median(tKnown), median(tUnknown)
		t.Logf("median login: known email %v, unknown email %v", mk, mu)
		if diff := (mu - mk).Abs(); float64(diff) > 0.2*float64(mk) {
			t.Fatalf("median login for an unknown email %v, for a known one %v: more than 20%% apart", mu, mk)
		}
	})
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// A state-changing request signed in by the session cookie must come from
// the service's own origin; API keys and bearer tokens are unaffected.
func TestCookieRequestsFromOtherSites(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	own := svc.baseURL()
	evil := map[string]string{"Origin": "https://evil.example"}
	keyBody := func() body { return jsonBody(map[string]any{"name": "csrf"}) }
	genBody := func() body { return multipartBody([]file{htmlFile("index.html", simpleHTML)}, nil) }
	tests := []struct {
		name   string
		method string
		path   string
		body   func() body
		auth   string // cookie, bearer or key
		header map[string]string
		want   int
	}{
		{"create key, other origin", "POST", "/api/keys", keyBody, "cookie", evil, 403},
		{"create key, cross-site fetch", "POST", "/api/keys", keyBody, "cookie", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"create key, same-site fetch", "POST", "/api/keys", keyBody, "cookie", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"create key, opaque origin", "POST", "/api/keys", keyBody, "cookie", map[string]string{"Origin": "null"}, 403},
		{"create key, other referer", "POST", "/api/keys", keyBody, "cookie", map[string]string{"Referer": "https://evil.example/x"}, 403},
		{"create key, own origin", "POST", "/api/keys", keyBody, "cookie", map[string]string{"Origin": own}, 201},
		{"create key, same-origin fetch", "POST", "/api/keys", keyBody, "cookie", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": own}, 201},
		{"create key, no browser headers", "POST", "/api/keys", keyBody, "cookie", nil, 201},
		{"create key, bearer from anywhere", "POST", "/api/keys", keyBody, "bearer", evil, 201},
		{"list keys, other origin (reads nothing for it)", "GET", "/api/keys", func() body { return body{} }, "cookie", evil, 200},
		{"revoke key, other origin", "DELETE", "/api/keys/" + c.KeyID, func() body { return body{} }, "cookie", evil, 403},
		{"change plan, other origin", "POST", "/api/billing/subscription/change-plan", func() body { return jsonBody(map[string]any{"plan": "pro"}) }, "cookie", evil, 403},
		{"delete account, other origin", "DELETE", "/api/auth/account", func() body { return body{} }, "cookie", evil, 403},
		{"log out, other origin", "POST", "/api/auth/logout", func() body { return body{} }, "cookie", evil, 403},
		{"generate, other origin", "POST", "/pdf/generate", genBody, "cookie", evil, 403},
		{"generate, own origin", "POST", "/pdf/generate", genBody, "cookie", map[string]string{"Origin": own, "Sec-Fetch-Site": "same-origin"}, 200},
		{"generate, API key from anywhere", "POST", "/pdf/generate", genBody, "key", evil, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			for k, v := range tc.header {
				h[k] = v
			}
			var resp *http.Response
			switch tc.auth {
			case "cookie":
				resp = c.do(tc.method, tc.path, tc.body(), h)
			default:
				b := tc.body()
				req, _ := http.NewRequest(tc.method, svc.URL+tc.path, b.r)
				if b.ctype != "" {
					req.Header.Set("Content-Type", b.ctype)
				}
				for k, v := range h {
					req.Header.Set(k, v)
				}
				if tc.auth == "key" {
					req.Header.Set("X-API-Key", c.Key)
				} else {
					req.Header.Set("Authorization", "Bearer "+c.Token)
				}
				var err error
				if resp, err = http.DefaultClient.Do(req); err != nil {
					t.Fatal(err)
				}
			}
			if tc.want == 403 {
				expectError(t, resp, 403, apierr.Forbidden)
				return
			}
			mustStatus(t, resp, tc.want)
			readAll(t, resp)
		})
	}
	// The refused requests changed nothing: the key, the plan and the session stand.
	resp := c.do("GET", "/api/keys", body{}, nil)
	mustStatus(t, resp, http.StatusOK)
	if b := readAll(t, resp); !bytes.Contains(b, []byte(c.KeyID)) {
		t.Fatalf("key %s gone: %s", c.KeyID, b)
	}
	resp = c.do("GET", "/api/billing/subscription", body{}, nil)
	if b := readAll(t, resp); resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"plan":"hobby"`)) {
		t.Fatalf("subscription %d %s", resp.StatusCode, b)
	}
}

// A client's X-Request-ID is used only when short and plain; the response
// carries the ID used.
func TestRequestIDs(t *testing.T) {
	svc := sharedService(t)
	tests := []struct {
		name, sent string
		kept       bool
	}{
		{"plain", "req-123_abc.DEF:9", true},
		{"uuid", "3f2b8c1e-9d4a-4f6b-8c2d-1a2b3c4d5e6f", true},
		{"64 characters", strings.Repeat("a", 64), true},
		{"65 characters", strings.Repeat("a", 65), false},
		{"4 KiB", strings.Repeat("b", 4096), false},
		{"spaces", "a b", false},
		{"markup", "<script>alert(1)</script>", false},
		{"quote and brace", `x"}{"level":"ERROR`, false},
		{"non-ASCII", "ünïcode", false},
		{"bidi override", "abc\u202edef", false},
		{"none", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(context.Background(), "GET", svc.URL+"/healthz", nil)
			if tc.sent != "" {
				req.Header.Set("X-Request-ID", tc.sent)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			got := resp.Header.Get("X-Request-ID")
			if tc.kept {
				if got != tc.sent {
					t.Fatalf("X-Request-ID %q, want the client's %q", got, tc.sent)
				}
				return
			}
			if got == tc.sent || got == "" || len(got) > 64 || strings.Trim(got, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
				t.Fatalf("X-Request-ID %q for a client's %q: want a fresh plain ID", got, tc.sent)
			}
		})
	}
}
