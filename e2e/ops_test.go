package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/config"
)

// The gateway's /metrics counts requests by route template and status, and
// in embedded mode also shows the in-process worker's renders.
func TestMetricsOnGateway(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	before := scrape(t, svc.URL)
	c.generatePDF(`<h1>METRICS</h1>`, nil)
	resp := c.withKey("GET", "/pdf/view/nosuchfile0123456789", body{})
	readAll(t, resp)
	resp = c.withKey("GET", "/no/such/route/abcdef987", body{})
	readAll(t, resp)
	after := scrape(t, svc.URL)

	for _, tc := range []struct {
		name   string
		metric string
		labels []string
	}{
		{"generate by template and status", "docrender_http_requests_total", []string{"route", "/pdf/generate", "method", "POST", "status", "200"}},
		{"generate latency", "docrender_http_request_duration_seconds_count", []string{"route", "/pdf/generate", "status", "200"}},
		{"a file route by its template", "docrender_http_requests_total", []string{"route", "/pdf/view/:id", "method", "GET"}},
		{"unknown paths share one label", "docrender_http_requests_total", []string{"route", "unmatched", "status", "404"}},
		{"render duration (in-process worker)", "docrender_render_duration_seconds_count", []string{"kind", "render", "outcome", "ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := metricValue(after, tc.metric, tc.labels...) - metricValue(before, tc.metric, tc.labels...); d < 1 {
				t.Errorf("%s%v grew by %v, want at least 1", tc.metric, tc.labels, d)
			}
		})
	}
	for _, name := range []string{"docrender_queue_depth", "docrender_browser_restarts_total", "docrender_renders_in_flight", "go_goroutines"} {
		if !hasMetric(after, name) {
			t.Errorf("%s missing from /metrics", name)
		}
	}
	// Raw paths (IDs) never become label values.
	for _, raw := range []string{"nosuchfile0123456789", "abcdef987"} {
		if strings.Contains(after, raw) {
			t.Errorf("raw path %q leaked into /metrics", raw)
		}
	}
}

// A request refused by the plan's conversion limit is counted by its code.
func TestMetricsQuotaRejection(t *testing.T) {
	svc := startService(t, func(cfg *config.Config) {
		p := cfg.Plans["hobby"]
		p.Conversions = 1
		cfg.Plans["hobby"] = p
	})
	c := newClient(t, svc)
	c.generatePDF(`<p>one</p>`, nil)
	expectError(t, c.generate([]file{htmlFile("index.html", `<p>two</p>`)}, nil), http.StatusTooManyRequests, "QUOTA_EXCEEDED")
	m := scrape(t, svc.URL)
	if v := metricValue(m, "docrender_quota_rejections_total", "code", "QUOTA_EXCEEDED"); v != 1 {
		t.Fatalf("quota rejections = %v, want 1", v)
	}
	if v := metricValue(m, "docrender_http_requests_total", "route", "/pdf/generate", "status", "429"); v != 1 {
		t.Fatalf("429s on /pdf/generate = %v, want 1", v)
	}
}

// bin/worker serves /healthz, /readyz and /metrics on DOCRENDER_WORKER_ADDR,
// and every log line of a job carries the request ID the gateway answered
// with (X-Request-ID), across the process boundary.
func TestWorkerOpsAndJobLogs(t *testing.T) {
	_, wkBin := binaries(t)
	ns := namespace(t)
	data := t.TempDir()
	url, _ := startSplitGateway(t, ns, data)
	opsAddr := freePort(t)
	opsURL := "http://" + opsAddr
	wk := startProc(t, wkBin, splitEnv(ns, data, map[string]string{"DOCRENDER_WORKER_ADDR": opsAddr}))
	waitReady(t, opsURL, wk)

	resp, err := http.Get(opsURL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, resp, http.StatusOK)
	readAll(t, resp)
	resp, err = http.Get(opsURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct {
		Checks map[string]string `json:"checks"`
	}
	decode(t, resp, &ready)
	for _, check := range []string{"queue", "blobs", "state", "browser"} {
		if ready.Checks[check] != "ok" {
			t.Errorf("readyz check %s = %q (all: %v)", check, ready.Checks[check], ready.Checks)
		}
	}

	c := newClient(t, &service{URL: url})
	resp = c.generate([]file{htmlFile("index.html", `<h1>LOGGED</h1>`)}, nil)
	mustStatus(t, resp, http.StatusOK)
	readAll(t, resp)
	rid := resp.Header.Get("X-Request-ID")
	if rid == "" {
		t.Fatal("no X-Request-ID on the response")
	}

	// The worker logs "job done" after answering: wait for it.
	var lines []map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for {
		lines = jsonLines(t, wk.out.String())
		if findLine(lines, "job done", rid) != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	done := findLine(lines, "job done", rid)
	if done == nil {
		t.Fatalf("no worker line \"job done\" with request_id %s:\n%s", rid, tail(wk.out.String(), 3000))
	}
	jobID, _ := done["job_id"].(string)
	if jobID == "" {
		t.Fatalf("job done line without job_id: %v", done)
	}
	for _, l := range lines {
		if l["job_id"] == jobID && l["request_id"] != rid {
			t.Errorf("a line of job %s lacks request_id %s: %v", jobID, rid, l)
		}
	}

	m := scrape(t, opsURL)
	if v := metricValue(m, "docrender_render_duration_seconds_count", "kind", "render", "outcome", "ok"); v < 1 {
		t.Errorf("worker render histogram count = %v, want ≥ 1", v)
	}
	for _, name := range []string{"docrender_queue_depth", "docrender_browser_restarts_total", "docrender_renders_in_flight"} {
		if !hasMetric(m, name) {
			t.Errorf("%s missing from the worker's /metrics", name)
		}
	}
}

// jsonLines parses the JSON lines of a process's output, skipping others.
func jsonLines(t testing.TB, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

func findLine(lines []map[string]any, msg, rid string) map[string]any {
	for _, l := range lines {
		if l["msg"] == msg && l["request_id"] == rid {
			return l
		}
	}
	return nil
}

func scrape(t testing.TB, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, resp, http.StatusOK)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricValue sums the samples of name whose labels include the given
// key/value pairs (Prometheus text format).
func metricValue(body, name string, kv ...string) float64 {
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		labels, value := "", ""
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			labels, value = line[len(name):i], line[i+1:]
		}
		ok := true
		for i := 0; i+1 < len(kv); i += 2 {
			if !strings.Contains(labels, kv[i]+"="+strconv.Quote(kv[i+1])) {
				ok = false
			}
		}
		if v, err := strconv.ParseFloat(value, 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}

func hasMetric(body, name string) bool {
	return strings.Contains(body, "\n"+name+" ") || strings.Contains(body, "\n"+name+"{")
}
