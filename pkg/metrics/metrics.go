// Package metrics holds docrender's Prometheus collectors. Each process
// builds one Metrics with a registry of its own (never the global default
// registry), so two services in one test binary never share counters, and
// an embedded gateway hands the same Metrics to its in-process worker: one
// /metrics shows both.
//
// Every method is safe on a nil *Metrics and then does nothing, so code
// built without metrics (unit tests) needs no special case.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of a job, the outcome label of the render histogram.
const (
	OutcomeOK      = "ok"      // a result was produced
	OutcomeRefused = "refused" // the input's fault (bad page, timeout): answered, not retried
	OutcomeError   = "error"   // not the input's fault: the job is retried
	// OutcomeCancelled: its client went away and the gateway sent a cancel notice.
	OutcomeCancelled = "cancelled"
)

// Kinds of job, the kind label of the render histogram and in-flight gauge.
const (
	KindRender = "render"
	KindBatch  = "batch_document"
	KindMerge  = "merge"
	KindZip    = "zip"
	// KindSlice is a slice of a long document printed for its job (DESIGN §10).
	KindSlice = "slice"
	// KindInspect is POST /pdf/inspect's reading of a PDF (DESIGN §8).
	KindInspect = "inspect"
)

// Buckets in seconds. HTTP covers fast JSON routes and synchronous renders
// that wait for a worker; renders go up to the longest sensible timeout.
var (
	httpBuckets   = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	renderBuckets = []float64{.05, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60, 120}
)

// Metrics is one process's collectors.
type Metrics struct {
	reg             *prometheus.Registry
	httpRequests    *prometheus.CounterVec
	httpDuration    *prometheus.HistogramVec
	renderDuration  *prometheus.HistogramVec
	inFlight        *prometheus.GaugeVec
	batchDocuments  *prometheus.CounterVec
	batchesFinished *prometheus.CounterVec
	quotaRejections *prometheus.CounterVec

	mu      sync.Mutex
	watched map[string]bool // function-backed collectors registered once each
}

// New builds the collectors on a fresh registry, with the Go runtime and
// process collectors included.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docrender_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "docrender_http_request_duration_seconds",
			Help:    "HTTP request latency, by route template, method and status.",
			Buckets: httpBuckets,
		}, []string{"route", "method", "status"}),
		renderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "docrender_render_duration_seconds",
			Help:    "Time a worker spent on a job, by kind (render, batch_document, merge, zip) and outcome (ok, refused, error, cancelled).",
			Buckets: renderBuckets,
		}, []string{"kind", "outcome"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "docrender_renders_in_flight",
			Help: "Jobs a worker is running now, by kind.",
		}, []string{"kind"}),
		batchDocuments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docrender_batch_documents_total",
			Help: "Batch documents settled, by outcome (done, failed, skipped).",
		}, []string{"outcome"}),
		batchesFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docrender_batches_finished_total",
			Help: "Batches that reached a final status (completed, error).",
		}, []string{"status"}),
		quotaRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docrender_quota_rejections_total",
			Help: "Requests refused by a plan limit, by error code.",
		}, []string{"code"}),
		watched: map[string]bool{},
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.httpDuration, m.renderDuration, m.inFlight,
		m.batchDocuments, m.batchesFinished, m.quotaRejections,
	)
	return m
}

// Registry is the process's registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return prometheus.NewRegistry()
	}
	return m.reg
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{})
}

// ObserveHTTP records one answered request. route must be the route
// template (/pdf/view/:id), never the raw path: raw paths carry IDs and
// would make a time series per file. The method and status are bounded
// here: a client chooses the method (any token is a valid one), and
// every new label value is a time series kept until the process ends.
func (m *Metrics) ObserveHTTP(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	method, code := methodLabel(method), statusLabel(status)
	m.httpRequests.WithLabelValues(route, method, code).Inc()
	m.httpDuration.WithLabelValues(route, method, code).Observe(d.Seconds())
}

// methodLabel is method if it is one of HTTP's own, else OTHER.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// statusLabel is the status code, or "other" outside 100..599.
func statusLabel(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status)
}

// JobStarted counts a job of kind as in flight; call the returned function
// with the job's outcome when it ends.
func (m *Metrics) JobStarted(kind string) (done func(outcome string)) {
	if m == nil {
		return func(string) {}
	}
	start := time.Now()
	g := m.inFlight.WithLabelValues(kind)
	g.Inc()
	return func(outcome string) {
		g.Dec()
		m.renderDuration.WithLabelValues(kind, outcome).Observe(time.Since(start).Seconds())
	}
}

// BatchDocument counts a batch document settled as done, failed or skipped.
func (m *Metrics) BatchDocument(outcome string) {
	if m == nil {
		return
	}
	m.batchDocuments.WithLabelValues(outcome).Inc()
}

// BatchFinished counts a batch that reached its final status. Call it only
// where that status was set (once per batch, not per redelivery).
func (m *Metrics) BatchFinished(status string) {
	if m == nil {
		return
	}
	m.batchesFinished.WithLabelValues(status).Inc()
}

// QuotaRejected counts a request refused by a plan limit.
func (m *Metrics) QuotaRejected(code string) {
	if m == nil {
		return
	}
	m.quotaRejections.WithLabelValues(code).Inc()
}

// WatchQueueDepth exports the number of jobs in the queue, asked of depth
// at each scrape. Only the first call registers (an embedded gateway and
// its worker both offer the same queue).
func (m *Metrics) WatchQueueDepth(depth func(context.Context) (uint64, error)) {
	if m == nil || !m.first("queue_depth") {
		return
	}
	m.reg.MustRegister(&sampled{
		desc: prometheus.NewDesc("docrender_queue_depth",
			"Jobs in the JetStream work queue (waiting or being worked on), sampled at scrape.", nil, nil),
		kind: prometheus.GaugeValue,
		read: func(ctx context.Context) (float64, error) {
			n, err := depth(ctx)
			return float64(n), err
		},
	})
}

// WatchKindDepths exports the jobs in the queue of each worker kind
// (DESIGN §1: each kind scales on its own backlog), asked of depths at each
// scrape; kinds are exported with 0 when none of theirs wait. Only the
// first call registers.
func (m *Metrics) WatchKindDepths(kinds []string, depths func(context.Context) (map[string]uint64, error)) {
	if m == nil || !m.first("queue_kind_depth") {
		return
	}
	m.reg.MustRegister(&sampledKinds{
		desc: prometheus.NewDesc("docrender_queue_kind_depth",
			"Jobs in the JetStream work queue for one worker kind (waiting or being worked on), sampled at scrape.", []string{"kind"}, nil),
		kinds: kinds,
		read:  depths,
		typ:   prometheus.GaugeValue,
	})
}

// WatchPDFiumReplacements exports the PDFium child processes the worker
// killed and replaced (worker/pdfium), by reason: "deadline" (a call past
// its job's time: slow or hostile PDFs), "failed" (a child that crashed
// or garbled its answer), "recycled" (grown past its memory bound). A
// rising "failed" is a PDFium crash worth a look. read gives each reason's
// count since start, false when it cannot say now (no engine yet, or one
// starting): the scrape then has no sample, a gap, rather than zeros that
// a counter's rate would read as a reset. Only the first call registers.
func (m *Metrics) WatchPDFiumReplacements(reasons []string, read func() (map[string]uint64, bool)) {
	if m == nil || !m.first("pdfium_replacements") {
		return
	}
	m.reg.MustRegister(&sampledKinds{
		desc: prometheus.NewDesc("docrender_pdfium_replacements_total",
			"PDFium child processes killed and replaced, by reason.", []string{"reason"}, nil),
		kinds: reasons,
		read: func(context.Context) (map[string]uint64, error) {
			v, ok := read()
			if !ok {
				return nil, errNoSample
			}
			return v, nil
		},
		typ: prometheus.CounterValue,
	})
}

// sampledKinds is sampled with a value per label value (a worker kind, a
// reason).
type sampledKinds struct {
	desc  *prometheus.Desc
	kinds []string
	read  func(context.Context) (map[string]uint64, error)
	typ   prometheus.ValueType
}

func (s *sampledKinds) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *sampledKinds) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
	defer cancel()
	v, err := s.read(ctx)
	if err != nil {
		return
	}
	for _, k := range s.kinds {
		ch <- prometheus.MustNewConstMetric(s.desc, s.typ, float64(v[k]), k)
	}
}

// WatchBrowserRestarts exports how often the process relaunched Chromium.
func (m *Metrics) WatchBrowserRestarts(restarts func() int64) {
	if m == nil || !m.first("browser_restarts") {
		return
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "docrender_browser_restarts_total",
		Help: "Chromium relaunches after a crash or hang.",
	}, func() float64 { return float64(restarts()) }))
}

// WatchChromiumSandbox exports whether the worker's Chromium runs with its
// sandbox (1) or without it, as DOCRENDER_CHROMIUM_NO_SANDBOX allows (0).
func (m *Metrics) WatchChromiumSandbox(on func() bool) {
	if m == nil || !m.first("chromium_sandbox") {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "docrender_chromium_sandbox",
		Help: "1 when Chromium runs with its sandbox, 0 when DOCRENDER_CHROMIUM_NO_SANDBOX turned it off.",
	}, func() float64 {
		if on() {
			return 1
		}
		return 0
	}))
}

func (m *Metrics) first(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watched[name] {
		return false
	}
	m.watched[name] = true
	return true
}

// errNoSample is a read that has nothing to say at this scrape.
var errNoSample = errors.New("metrics: no sample now")

// sampleTimeout bounds a scrape-time read: a NATS outage must not stall
// every scrape for the client's default timeout.
const sampleTimeout = 2 * time.Second

// sampled is a gauge read at scrape time. A failed read exports no sample
// rather than a stale or zero value that would look real.
type sampled struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	read func(context.Context) (float64, error)
}

func (s *sampled) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *sampled) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
	defer cancel()
	v, err := s.read(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(s.desc, s.kind, v)
}
