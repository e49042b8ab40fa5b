package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/pkg/config"
)

func TestValidRequestID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"abc-123", true},
		{"3f2b8c1e-9d4a-4f6b-8c2d-1a2b3c4d5e6f", true},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", true},
		{"a/b+c=d_e.f:g@h", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"has space", false},
		{"new\nline", false},
		{`quote"`, false},
		{"<script>", false},
		{"tab\t", false},
		{"del\x7f", false},
		{"ünïcode", false},
		{"bidi\u202e", false},
		{"a{b}", false},
	}
	for _, tc := range tests {
		if got := validRequestID(tc.id); got != tc.want {
			t.Errorf("validRequestID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestCrossSite(t *testing.T) {
	base := origin("https://Docs.Example.com:443/")
	if base != "https://docs.example.com" {
		t.Fatalf("origin of the base URL: %q", base)
	}
	tests := []struct {
		name    string
		headers map[string]string
		want    bool
	}{
		{"no header (a program)", nil, false},
		{"fetch same-origin", map[string]string{"Sec-Fetch-Site": "same-origin"}, false},
		{"fetch none (typed by the user)", map[string]string{"Sec-Fetch-Site": "none"}, false},
		{"fetch same-site", map[string]string{"Sec-Fetch-Site": "same-site"}, true},
		{"fetch cross-site", map[string]string{"Sec-Fetch-Site": "cross-site"}, true},
		{"fetch wins over origin", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://docs.example.com"}, true},
		{"own origin", map[string]string{"Origin": "https://docs.example.com"}, false},
		{"own origin, explicit port", map[string]string{"Origin": "https://DOCS.example.com:443"}, false},
		{"other origin", map[string]string{"Origin": "https://evil.example"}, true},
		{"other scheme", map[string]string{"Origin": "http://docs.example.com"}, true},
		{"other port", map[string]string{"Origin": "https://docs.example.com:8443"}, true},
		{"suffix trick", map[string]string{"Origin": "https://docs.example.com.evil.example"}, true},
		{"null origin", map[string]string{"Origin": "null"}, true},
		{"own referer", map[string]string{"Referer": "https://docs.example.com/dashboard?x=1"}, false},
		{"other referer", map[string]string{"Referer": "https://evil.example/page"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/keys", nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			if got := crossSite(r, base); got != tc.want {
				t.Fatalf("crossSite = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClientKey(t *testing.T) {
	tests := []struct{ ip, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::2", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"", "invalid"},
		{"not an ip", "invalid"},
	}
	for _, tc := range tests {
		if got := clientKey(tc.ip); got != tc.want {
			t.Errorf("clientKey(%q) = %q, want %q", tc.ip, got, tc.want)
		}
	}
}

func TestWindowKey(t *testing.T) {
	now := time.Unix(1000*60+42, 0)
	key, left := windowKey("p", time.Minute, now)
	if key != "p:1000" || left != 18*time.Second {
		t.Fatalf("windowKey = %q, %v", key, left)
	}
}

func TestBodyLimit(t *testing.T) {
	s := &Server{Deps: Deps{Config: config.Config{MaxUpload: 50 << 20}}}
	small := &Server{Deps: Deps{Config: config.Config{MaxUpload: 4 << 10}}}
	e := echo.New()
	tests := []struct {
		srv  *Server
		path string
		want int64
	}{
		{s, "/api/auth/login", 16 << 10},
		{s, "/api/auth/register", 16 << 10},
		{s, "/api/keys", 1 << 20},
		{s, "/api/billing/subscription/change-plan", 1 << 20},
		{s, "/pdf/qrcode", 1 << 20},
		{s, "", 1 << 20},
		{s, "/pdf/generate", 50 << 20},
		{s, "/pdf/merge", 50 << 20},
		{s, "/pdf/generate-batch", 50 << 20},
		{s, "/pdf/inspect", 50 << 20}, // a PDF as large as merge takes
		{small, "/api/keys", 4 << 10},
	}
	for _, tc := range tests {
		c := e.NewContext(httptest.NewRequest("POST", "/", nil), httptest.NewRecorder())
		c.SetPath(tc.path)
		if got := tc.srv.bodyLimit(c); got != tc.want {
			t.Errorf("bodyLimit(%q) = %d, want %d", tc.path, got, tc.want)
		}
	}
}

// edgeServer serves h behind the deadlines middleware on a real listener
// with short timeouts.
func edgeServer(t *testing.T, to config.HTTPTimeouts, h echo.HandlerFunc) string {
	t.Helper()
	s := &Server{Deps: Deps{Config: config.Config{HTTP: to, MaxUpload: 1 << 20}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	e := echo.New()
	e.HTTPErrorHandler = s.writeError
	e.Pre(s.deadlines)
	e.Any("/*", h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := to.Server(e)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// pacedReader gives n bytes, chunk at a time, one chunk every gap.
type pacedReader struct {
	n, chunk int
	gap      time.Duration
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if p.n == 0 {
		return 0, io.EOF
	}
	time.Sleep(p.gap)
	k := min(p.chunk, p.n, len(b))
	for i := range k {
		b[i] = 'a'
	}
	p.n -= k
	return k, nil
}

func TestDeadlines(t *testing.T) {
	to := config.HTTPTimeouts{ReadHeader: time.Second, Read: 400 * time.Millisecond, Write: 400 * time.Millisecond,
		Idle: time.Second, MinRate: 16 << 10}
	// readThenWait reads the body, then works for longer than every
	// timeout before it answers, as a sync render does.
	readThenWait := func(c echo.Context) error {
		n, err := io.Copy(io.Discard, c.Request().Body)
		if err != nil {
			return err
		}
		select {
		case <-time.After(3 * to.Read):
		case <-c.Request().Context().Done():
			return errors.New("request cancelled while working")
		}
		return c.String(http.StatusOK, fmt.Sprint(n))
	}
	addr := edgeServer(t, to, readThenWait)
	post := func(body io.Reader) (*http.Response, time.Duration, error) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/x", body)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		return resp, time.Since(start), err
	}

	t.Run("a trickled body is cut off", func(t *testing.T) {
		resp, took, err := post(&pacedReader{n: 1000, chunk: 1, gap: 50 * time.Millisecond})
		if err != nil {
			t.Fatalf("no answer: %v after %v", err, took)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "REQUEST_TIMEOUT") {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if took > to.Read+time.Second {
			t.Fatalf("cut off after %v", took)
		}
	})
	t.Run("a body arriving steadily outlasts the read timeout", func(t *testing.T) {
		// 16 KiB at 20 KiB/s: twice the read timeout. The work after it
		// outlasts the body's allowance: the request must not be cancelled.
		resp, took, err := post(&pacedReader{n: 16 << 10, chunk: 1 << 10, gap: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != fmt.Sprint(16<<10) {
			t.Fatalf("status %d after %v: %s", resp.StatusCode, took, b)
		}
	})
	t.Run("no body, long work", func(t *testing.T) {
		resp, err := http.Get("http://" + addr + "/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	})

	// A response written slowly: a stream outlasts the write timeout, a
	// plain response does not.
	slowWrites := func(c echo.Context) error {
		if c.QueryParam("stream") != "" {
			streamWrites(c)
		}
		c.Response().WriteHeader(http.StatusOK)
		for i := range 8 {
			if _, err := fmt.Fprintf(c.Response(), "event %d\n", i); err != nil {
				return nil
			}
			c.Response().Flush()
			time.Sleep(to.Write / 2)
		}
		return nil
	}
	// A huge MinRate leaves the plain response the write timeout alone.
	slow := to
	slow.MinRate = 1 << 40
	addr2 := edgeServer(t, slow, slowWrites)
	for _, tc := range []struct {
		query string
		want  int
	}{{"?stream=1", 8}, {"", 0}} {
		t.Run("slow writes "+tc.query, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr2)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET /x%s HTTP/1.1\r\nHost: x\r\n\r\n", tc.query)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			all, _ := io.ReadAll(bufio.NewReader(conn))
			got := strings.Count(string(all), "event ")
			if tc.want > 0 && got != tc.want {
				t.Fatalf("stream: %d events, want %d:\n%s", got, tc.want, all)
			}
			if tc.want == 0 && got == 8 {
				t.Fatalf("a plain response written for %v outlasted the write timeout %v", 4*to.Write, to.Write)
			}
		})
	}
}

// An informational answer (a sync batch's 103 Early Hints) does not start
// the write deadline: the real answer, long after, still gets its time.
func TestEarlyHintsDoNotStartTheWriteDeadline(t *testing.T) {
	to := config.HTTPTimeouts{ReadHeader: time.Second, Read: time.Second, Write: 300 * time.Millisecond, Idle: time.Second, MinRate: 16 << 10}
	addr := edgeServer(t, to, func(c echo.Context) error {
		c.Response().Writer.WriteHeader(http.StatusEarlyHints)
		time.Sleep(3 * to.Write) // a batch working
		return c.String(http.StatusOK, "the zip")
	})
	resp, err := http.Get("http://" + addr + "/x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(b) != "the zip" {
		t.Fatalf("after 103 and a long wait: %d %q %v", resp.StatusCode, b, err)
	}
}

// A configuration without timeouts (zero values) means none, as in net/http.
func TestDeadlinesZeroMeansNone(t *testing.T) {
	addr := edgeServer(t, config.HTTPTimeouts{}, func(c echo.Context) error {
		b, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		return c.String(http.StatusOK, string(b))
	})
	resp, err := http.Post("http://"+addr+"/x", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "hello" {
		t.Fatalf("status %d: %q", resp.StatusCode, b)
	}
}
