package ops

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/health"
	"github.com/docrender/docrender/pkg/metrics"
)

func TestEndpoints(t *testing.T) {
	m := metrics.New()
	m.QuotaRejected("QUOTA_EXCEEDED") // any series, to find in /metrics
	s, err := Start("127.0.0.1:0", config.DefaultHTTPTimeouts(), m, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	base := "http://" + s.Addr()
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("nats: no servers") }
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

	tests := []struct {
		name       string
		checks     map[string]Check // nil: not yet set (starting)
		path       string
		wantStatus int
		wantChecks map[string]string
	}{
		{"alive while starting", nil, "/healthz", 200, nil},
		{"not ready while starting", nil, "/readyz", 503, map[string]string{"startup": "failing"}},
		{"ready", map[string]Check{"queue": ok, "browser": ok}, "/readyz", 200, map[string]string{"queue": "ok", "browser": "ok"}},
		{"one check failing", map[string]Check{"queue": down, "browser": ok}, "/readyz", 503, map[string]string{"queue": "failing", "browser": "ok"}},
		{"alive whatever the checks", map[string]Check{"queue": down}, "/healthz", 200, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.checks != nil {
				s.SetChecks(tc.checks)
			}
			resp, err := http.Get(base + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Checks map[string]string `json:"checks"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			for k, v := range tc.wantChecks {
				if body.Checks[k] != v {
					t.Errorf("check %s = %q, want %q (%v)", k, body.Checks[k], v, body.Checks)
				}
			}
			if strings.Contains(strings.Join(values(body.Checks), " "), "nats:") {
				t.Error("a check's error leaked into the body")
			}
		})
	}

	t.Run("a hanging check is bounded", func(t *testing.T) {
		s.SetChecks(map[string]Check{"blobs": hang})
		start := time.Now()
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || time.Since(start) > health.Timeout+time.Second {
			t.Fatalf("status %d after %v", resp.StatusCode, time.Since(start))
		}
	})

	t.Run("metrics", func(t *testing.T) {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), `docrender_quota_rejections_total{code="QUOTA_EXCEEDED"} 1`) {
			t.Fatalf("status %d:\n%.500s", resp.StatusCode, b)
		}
	})
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestTimeouts: a client that stalls in its headers or its body, or keeps
// an idle connection, is disconnected within the listener's timeouts.
func TestTimeouts(t *testing.T) {
	to := config.HTTPTimeouts{ReadHeader: 300 * time.Millisecond, Read: 600 * time.Millisecond,
		Write: time.Second, Idle: 400 * time.Millisecond, MinRate: 1 << 10}
	s, err := Start("127.0.0.1:0", to, metrics.New(), slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	s.SetChecks(map[string]Check{})
	tests := []struct {
		name string
		// send is written at once; the client then sends nothing more.
		send  string
		limit time.Duration
	}{
		{"stalled headers", "GET /healthz HTTP/1.1\r\nHost: x\r\n", to.ReadHeader},
		{"stalled body", "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", to.Read},
		{"idle after a request", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", to.Idle},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := io.WriteString(conn, tc.send); err != nil {
				t.Fatal(err)
			}
			// Whatever the server answers, it must then close the connection.
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = io.Copy(io.Discard, bufio.NewReader(conn))
			took := time.Since(start)
			if err != nil {
				t.Fatalf("connection not closed by the server: %v after %v", err, took)
			}
			if took > tc.limit+time.Second {
				t.Fatalf("closed after %v, limit %v", took, tc.limit)
			}
		})
	}
}
