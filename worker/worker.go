// Package worker consumes render and merge jobs from the queue. It owns the
// only Chromium (package browser) and the only PDF editing (package pdfedit)
// in docrender; the gateway never renders.
package worker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/metrics"
	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/office"
	"github.com/docrender/docrender/worker/pdfium"
	"github.com/docrender/docrender/worker/poppler"
	"github.com/docrender/docrender/worker/render"
	"github.com/docrender/docrender/worker/sign"
)

// Worker is one worker process's job loop.
type Worker struct {
	cfg      config.Config
	q        *queue.Conn
	blobs    blob.Store
	log      *slog.Logger
	proxy    *egress.Proxy
	pool     *browser.Pool
	renderer *render.Renderer
	// batch is nil on a worker without a shared state store.
	batch *batchSupport
	// state is the state store shared with the gateways and the other
	// workers; nil: none (split mode without Redis).
	state state.Store
	// splitting are the jobs of this process printed in slices: a slice
	// of one of them taken from the queue is left to its job's tabs.
	splitting sync.Map
	// metrics is nil until Instrument (all its methods accept nil).
	metrics *metrics.Metrics
	// identities sign PDFs (DESIGN §8), loaded at start from
	// DOCRENDER_SIGNING_DIR; tsa stamps PAdES B-T signatures.
	identities map[string]*sign.Identity
	tsa        *sign.TSA
	// templates keeps stored templates parsed between jobs (DESIGN §9).
	templates *templateCache
	// pdfium reads text and renders pages for the PDF tools (DESIGN §11).
	pdfium *lazy[*pdfium.Engine]
	// pdftotext reads plain text for /pdf/text, faster than PDFium; nil
	// where poppler is not installed (PDFium reads it).
	pdftotext *poppler.Engine
	// office converts office documents (DESIGN §11) on a worker of the
	// office kind, started on its first job; officeErr is why this machine
	// cannot (no LibreOffice): such a worker takes no office jobs.
	office    *lazy[*office.Engine]
	officeErr error
}

// tabsPerSlot is how many warm tabs the pool keeps per render slot (the
// queue runs cfg.Workers jobs at once): a tab that ran scripts is cleaned
// after its job (a navigation and its storage cleared, browser.Pool), and
// the next job takes a clean tab rather than wait for that; at full load
// the wait was a quarter of a job's time (docs/benchmarks.md, session 9).
const tabsPerSlot = 2

// New starts the egress proxy and Chromium, for a worker that takes the
// chromium kind (cfg.WorkerKinds). st is the state store shared with the
// gateways (batch progress); nil disables batch jobs.
func New(ctx context.Context, cfg config.Config, q *queue.Conn, blobs blob.Store, st state.Store, log *slog.Logger) (*Worker, error) {
	// An identity that cannot be read stops the start, naming the file.
	ids, err := sign.LoadDir(cfg.SigningDir)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w := &Worker{cfg: cfg, q: q, blobs: blobs, log: log, identities: ids, templates: newTemplateCache(templateCacheBytes),
		// One PDFium instance per job slot: a tool's call holds one throughout.
		pdfium: &lazy[*pdfium.Engine]{
			start: func(ctx context.Context) (*pdfium.Engine, error) {
				return pdfium.New(ctx, pdfium.Config{Instances: cfg.Workers, Log: log})
			},
			stop: func(e *pdfium.Engine) { _ = e.Close() },
		}}
	if cfg.Takes(jobspb.KindPDF) {
		if w.pdftotext, err = poppler.New(poppler.Config{}); err != nil {
			log.Warn("worker: no pdftotext: PDFium reads /pdf/text's plain text, about 3x slower (install poppler-utils)", "error", err)
		}
	}
	if cfg.TSAURL != "" {
		// The operator's TSA, outside the page egress rules (DESIGN §2).
		w.tsa = &sign.TSA{URL: cfg.TSAURL}
	}
	w.batch = newBatchSupport(st, w)
	w.state = st
	if cfg.Takes(jobspb.KindOffice) {
		if err := w.startOffice(ctx); err != nil {
			return nil, err
		}
	}
	if !cfg.Takes(jobspb.KindChromium) {
		// A pdf or office worker: no browser (DESIGN §1).
		return w, nil
	}
	proxy, err := egress.Start(netguard.New(cfg.RenderAllowHosts), log)
	if err != nil {
		return nil, fmt.Errorf("worker: egress proxy: %w", err)
	}
	pool, err := browser.Start(ctx, browser.Config{Bin: cfg.ChromiumPath, Proxy: proxy.Addr(), HomeURL: egress.HomeURL, Tabs: tabsPerSlot * cfg.Workers, Log: log,
		NoSandbox: cfg.ChromiumNoSandbox, User: cfg.ChromiumUser,
		NewLane: func() (browser.Lane, error) { return proxy.NewLane() }})
	if err != nil {
		proxy.Close()
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.proxy, w.pool = proxy, pool
	w.renderer = &render.Renderer{Blobs: blobs, Pool: pool, Log: log, MaxOutputBytes: cfg.MaxOutputBytes, SplitPages: cfg.SplitPages, SplitSlots: cfg.Workers, SlicePages: cfg.SlicePages,
		// Images without alternative text for the report (DESIGN §8), found
		// before the QR codes fill in their data-qr images' src; inline QR
		// codes (DESIGN §4.15), filled in before printing.
		Hooks: []render.PageHook{render.Accessibility, render.QRCodes}}
	return w, nil
}

// Instrument makes the worker record its jobs, browser restarts, PDFium
// child replacements and queue depth in m. Call it before Run; an embedded gateway passes its own m, so
// one /metrics shows both.
func (w *Worker) Instrument(m *metrics.Metrics) {
	w.metrics = m
	if w.batch != nil {
		w.batch.batches.Instrument(m)
	}
	if w.pool != nil {
		m.WatchBrowserRestarts(w.pool.Restarts)
		m.WatchChromiumSandbox(w.pool.Sandboxed)
	}
	m.WatchPDFiumReplacements(pdfium.ReplacementReasons(), w.pdfiumReplacements)
	m.WatchKindDepths(jobspb.WorkerKinds(), w.q.KindDepths)
	m.WatchQueueDepth(w.q.Depth)
}

// Ready says whether the worker can take its jobs: its browser answers
// (a worker without the chromium kind has none to wait for).
func (w *Worker) Ready(ctx context.Context) error {
	if w.pool == nil {
		return nil
	}
	return w.pool.Ready(ctx)
}

// Healthy fails once the browser has been gone too long (a restart mends it).
func (w *Worker) Healthy() error {
	if w.pool == nil {
		return nil
	}
	return w.pool.Healthy()
}

// Pool exposes the browser pool (readiness checks, tests); nil without
// the chromium kind.
func (w *Worker) Pool() *browser.Pool { return w.pool }

// Run consumes jobs (and webhook deliveries) until ctx ends, then finishes
// the jobs in hand.
func (w *Worker) Run(ctx context.Context) error {
	return w.runWithWebhooks(ctx)
}

// Close stops Chromium, the proxy and PDFium.
func (w *Worker) Close() {
	w.pdfium.close()
	if w.office != nil {
		w.office.close()
	}
	if w.pool != nil {
		w.pool.Close()
		w.proxy.Close()
	}
}

func failure(kind jobspb.ErrorKind, msg string) *jobspb.Result {
	return &jobspb.Result{ErrorKind: kind, ErrorMessage: msg}
}

// Handle runs one job; see queue.Handler for the meaning of its returns.
// Each job kind lives in a file of its own (job_*.go).
func (w *Worker) Handle(ctx context.Context, job *jobspb.Job, d queue.Delivery) (*jobspb.Result, error) {
	batchID, _ := job.BatchRef()
	log := w.log.With("job_id", job.Id, "request_id", job.RequestId, "batch_id", batchID)
	start := time.Now()
	done := w.metrics.JobStarted(jobKind(job))
	var res *jobspb.Result
	var err error
	defer func() { done(outcome(ctx, res, err)) }()
	if kind := job.WorkerKind(); !w.takes(kind) {
		// Never routed here (each kind has its subjects): a bug, not the client's.
		return nil, fmt.Errorf("worker: a %s job on a worker of kinds %v", kind, w.cfg.Kinds())
	}
	switch k := job.Kind.(type) {
	case *jobspb.Job_Render:
		res, err = w.handleRender(ctx, job, k.Render)
	case *jobspb.Job_BatchDocument:
		res, err = w.handleBatchDoc(ctx, job, k.BatchDocument, d)
	case *jobspb.Job_Zip:
		res, err = w.handleZip(ctx, k.Zip, d)
	case *jobspb.Job_Merge:
		res, err = w.handleMerge(ctx, job)
	case *jobspb.Job_Inspect:
		res, err = w.handleInspect(ctx, job)
	case *jobspb.Job_Slice:
		res, err = w.handleSlice(ctx, job, k.Slice)
	case *jobspb.Job_Tool:
		res, err = w.handleTool(ctx, job, job.GetTool())
	case *jobspb.Job_Screenshot:
		res, err = w.handleScreenshot(ctx, job, k.Screenshot)
	case *jobspb.Job_Office:
		res, err = w.handleOffice(ctx, job, k.Office)
	default:
		return failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "Unknown job kind."), nil
	}
	switch {
	case queue.Cancelled(ctx):
		// The gateway sent a cancel notice: its client left (backpressure).
		log.Info("render stopped: job cancelled by its client", "ms", time.Since(start).Milliseconds())
	case err != nil:
		log.Warn("job failed", "err", err, "attempt", d.Attempt)
	case res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_NONE:
		log.Info("job refused", "kind", res.ErrorKind.String(), "msg", res.ErrorMessage)
	default:
		log.Info("job done", "bytes", res.Size, "ms", time.Since(start).Milliseconds())
	}
	return res, err
}

// jobKind is the kind label of a job's metrics.
func jobKind(job *jobspb.Job) string {
	switch job.Kind.(type) {
	case *jobspb.Job_Zip:
		return metrics.KindZip
	case *jobspb.Job_Merge:
		return metrics.KindMerge
	case *jobspb.Job_BatchDocument:
		return metrics.KindBatch
	case *jobspb.Job_Inspect:
		return metrics.KindInspect
	case *jobspb.Job_Slice:
		return metrics.KindSlice
	case *jobspb.Job_Tool, *jobspb.Job_Screenshot, *jobspb.Job_Office:
		// The tool's op ("split", "images", "screenshot"): each reads apart.
		return job.Op()
	}
	return metrics.KindRender
}

// outcome is the outcome label of a finished job.
func outcome(ctx context.Context, res *jobspb.Result, err error) string {
	switch {
	case queue.Cancelled(ctx):
		return metrics.OutcomeCancelled
	case err != nil:
		return metrics.OutcomeError
	case res == nil || res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_NONE:
		return metrics.OutcomeRefused
	}
	return metrics.OutcomeOK
}

// store writes a finished PDF to the job's output key.
func (w *Worker) store(ctx context.Context, job *jobspb.Job, pdf []byte) (_ *jobspb.Result, err error) {
	ctx, span := tracing.Child(ctx, "store", attribute.Int("docrender.bytes", len(pdf)))
	defer func() { tracing.End(span, err) }()
	if err := w.blobs.Put(ctx, job.OutputKey, bytes.NewReader(pdf), int64(len(pdf))); err != nil {
		return nil, fmt.Errorf("worker: store result: %w", err)
	}
	return &jobspb.Result{OutputKey: job.OutputKey, Size: int64(len(pdf))}, nil
}

// startOffice readies the office kind: LibreOffice is checked now (cheap)
// and started on the first office job (lazy). A machine without it takes
// no office jobs and says why (OfficeUnavailable); a worker of the office
// kind alone cannot do anything, so its start fails naming what is missing.
func (w *Worker) startOffice(ctx context.Context) error {
	if err := office.Check(ctx, w.cfg.OfficePath); err != nil {
		if len(w.cfg.Kinds()) == 1 {
			return fmt.Errorf("worker: %w", err)
		}
		w.officeErr = err
		w.log.Warn("office documents off: this worker takes no office jobs", "err", err)
		return nil
	}
	cfg := office.Config{Path: w.cfg.OfficePath, Slots: w.cfg.Workers, Timeout: w.cfg.RenderTimeout, MaxMemory: officeMaxMemory, Log: w.log}
	w.office = &lazy[*office.Engine]{
		start: func(ctx context.Context) (*office.Engine, error) { return office.New(ctx, cfg) },
		stop:  (*office.Engine).Close,
	}
	return nil
}

// OfficeUnavailable says why this worker takes no office jobs although
// its kinds include office (no LibreOffice here); nil when it takes them
// or does not take the kind at all.
func (w *Worker) OfficeUnavailable() error { return w.officeErr }

// takes says whether this worker consumes jobs of kind: its kinds, less
// office when this machine cannot convert office documents.
func (w *Worker) takes(kind string) bool {
	return w.cfg.Takes(kind) && (kind != jobspb.KindOffice || w.officeErr == nil)
}

// pdfiumReplacements are the PDFium engine's child replacements by
// reason; false while there is no engine to ask (none started, one
// starting, or one in-process, which has no children).
func (w *Worker) pdfiumReplacements() (map[string]uint64, bool) {
	eng, ok := w.pdfium.peek()
	if !ok {
		return nil, false
	}
	counts := eng.Replacements()
	if counts == nil {
		return nil, false
	}
	out := map[string]uint64{}
	for r, n := range counts {
		out[r.String()] = uint64(n)
	}
	return out, true
}
