package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCounters(t *testing.T) {
	m := New()
	m.ObserveHTTP("/pdf/view/:id", "GET", 200, 30*time.Millisecond)
	m.ObserveHTTP("/pdf/view/:id", "GET", 200, 10*time.Millisecond)
	m.ObserveHTTP("/pdf/generate", "POST", 429, time.Millisecond)
	done := m.JobStarted(KindRender)
	if v := testutil.ToFloat64(m.inFlight.WithLabelValues(KindRender)); v != 1 {
		t.Fatalf("in flight during a job = %v, want 1", v)
	}
	done(OutcomeOK)
	m.JobStarted(KindMerge)(OutcomeRefused)
	m.QuotaRejected("QUOTA_EXCEEDED")
	m.BatchDocument("done")
	m.BatchFinished("completed")

	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"requests by template", testutil.ToFloat64(m.httpRequests.WithLabelValues("/pdf/view/:id", "GET", "200")), 2},
		{"requests by status", testutil.ToFloat64(m.httpRequests.WithLabelValues("/pdf/generate", "POST", "429")), 1},
		{"in flight after", testutil.ToFloat64(m.inFlight.WithLabelValues(KindRender)), 0},
		{"quota", testutil.ToFloat64(m.quotaRejections.WithLabelValues("QUOTA_EXCEEDED")), 1},
		{"batch docs", testutil.ToFloat64(m.batchDocuments.WithLabelValues("done")), 1},
		{"batches", testutil.ToFloat64(m.batchesFinished.WithLabelValues("completed")), 1},
		{"render histograms", float64(testutil.CollectAndCount(m.renderDuration)), 2},
		{"http histograms", float64(testutil.CollectAndCount(m.httpDuration)), 2},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestNilIsANoOp(t *testing.T) {
	var m *Metrics
	m.ObserveHTTP("/x", "GET", 200, time.Second)
	m.JobStarted(KindZip)(OutcomeError)
	m.QuotaRejected("QUOTA_EXCEEDED")
	m.BatchDocument("done")
	m.BatchFinished("error")
	m.WatchQueueDepth(func(context.Context) (uint64, error) { return 1, nil })
	m.WatchBrowserRestarts(func() int64 { return 1 })
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("nil handler answered %d", rec.Code)
	}
}

func TestSampledGauges(t *testing.T) {
	tests := []struct {
		name    string
		depth   uint64
		err     error
		want    string
		wantNot string
	}{
		{name: "read", depth: 7, want: "docrender_queue_depth 7"},
		{name: "failed read exports nothing", err: errors.New("nats down"), wantNot: "docrender_queue_depth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			m.WatchQueueDepth(func(context.Context) (uint64, error) { return tc.depth, tc.err })
			// A second source (the embedded worker) must not panic on a duplicate.
			m.WatchQueueDepth(func(context.Context) (uint64, error) { return 99, nil })
			m.WatchBrowserRestarts(func() int64 { return 3 })
			m.WatchBrowserRestarts(func() int64 { return 5 })
			body := scrape(t, m)
			if tc.want != "" && !strings.Contains(body, tc.want+"\n") {
				t.Errorf("scrape lacks %q:\n%s", tc.want, body)
			}
			if tc.wantNot != "" && strings.Contains(body, tc.wantNot+" ") {
				t.Errorf("scrape has %q", tc.wantNot)
			}
			if !strings.Contains(body, "docrender_browser_restarts_total 3\n") {
				t.Errorf("browser restarts missing or not the first source's")
			}
		})
	}
}

// Two Metrics never share a series: each process (and each test service)
// has its own registry.
func TestSeparateRegistries(t *testing.T) {
	a, b := New(), New()
	a.QuotaRejected("HOSTED_PDF_LIMIT_REACHED")
	if strings.Contains(scrape(t, b), `docrender_quota_rejections_total{code="HOSTED_PDF_LIMIT_REACHED"}`) {
		t.Fatal("a counter of one Metrics shows in another")
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Whatever methods and statuses clients cause, the label values stay a
// small fixed set (one series per odd method would grow without end).
func TestHTTPLabelsAreBounded(t *testing.T) {
	m := New()
	for i := range 200 {
		m.ObserveHTTP("unmatched", fmt.Sprintf("M%03d", i), 405, time.Millisecond)
	}
	for _, method := range []string{"GET", "get", "PROPFIND", "POST"} {
		m.ObserveHTTP("/healthz", method, 200, time.Millisecond)
	}
	m.ObserveHTTP("/healthz", "GET", 0, time.Millisecond)
	m.ObserveHTTP("/healthz", "GET", 1000, time.Millisecond)
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	methods, codes := map[string]bool{}, map[string]bool{}
	for _, f := range families {
		if f.GetName() != "docrender_http_requests_total" {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				switch l.GetName() {
				case "method":
					methods[l.GetValue()] = true
				case "status":
					codes[l.GetValue()] = true
				}
			}
		}
	}
	if len(methods) != 3 || !methods["GET"] || !methods["POST"] || !methods["OTHER"] {
		t.Errorf("method labels %v, want GET, POST, OTHER", methods)
	}
	if len(codes) != 3 || !codes["405"] || !codes["200"] || !codes["other"] {
		t.Errorf("status labels %v, want 405, 200, other", codes)
	}
}

// PDFium's replacements are counters by reason, every reason exported
// (0 when none), the first source kept.
func TestPDFiumReplacements(t *testing.T) {
	m := New()
	reasons := []string{"deadline", "failed", "recycled"}
	ready := false
	m.WatchPDFiumReplacements(reasons, func() (map[string]uint64, bool) {
		return map[string]uint64{"deadline": 4, "failed": 1}, ready
	})
	m.WatchPDFiumReplacements(reasons, func() (map[string]uint64, bool) { return map[string]uint64{"deadline": 99}, true })
	// No engine to ask: no sample, not zeros (a counter's reset).
	if body := scrape(t, m); strings.Contains(body, "docrender_pdfium_replacements_total{") {
		t.Errorf("samples without an engine:\n%s", body)
	}
	ready = true
	body := scrape(t, m)
	for _, want := range []string{
		"# TYPE docrender_pdfium_replacements_total counter",
		`docrender_pdfium_replacements_total{reason="deadline"} 4`,
		`docrender_pdfium_replacements_total{reason="failed"} 1`,
		`docrender_pdfium_replacements_total{reason="recycled"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
}
