// Package batch is the life of a batch generation (spec 2.5, 3.1, 4.3-4.5),
// kept in the state store so that every gateway can answer for any batch and
// every worker can advance it:
//
//	gateway: reserve conversions (and hosted slot) → Submit (inputs, record,
//	         one BatchDocumentJob per document) → read Progress / Result
//	worker:  each document DocDone, or DocNotDone + Fail; the one that makes
//	         DocDone reach Total queues the ZipJob; the ZIP job's worker builds
//	         the ZIP and calls Complete (or Fail)
//
// The batch owns its reservation from Submit on: a document that produces
// nothing gives its conversion back, and a failed batch frees its hosted slot.
//
// Counting is idempotent: a document counts as done by adding its index to
// a set, so a redelivered job never counts twice, `current` never exceeds
// `total` and never decreases.
package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/apitime"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/metrics"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/usage"
	"github.com/docrender/docrender/proto/jobspb"
)

// Status values of a progress record (spec 2.5).
const (
	Processing = "processing"
	Completed  = "completed"
	Error      = "error"
	NotFound   = "not_found"
)

// ErrNotFound is returned for an unknown or expired batch.
var ErrNotFound = errors.New("batch: not found")

// Webhook is where a batch's completion or failure is announced (DESIGN 4.18).
type Webhook struct {
	URL    string `json:"url"`
	Secret string `json:"secret,omitempty"`
}

// Record is what a batch is, fixed when it is created. It is read by every
// document job, so it holds nothing proportional to the number of documents
// (the ZIP entry names live under a key of their own).
type Record struct {
	ID        string `json:"id"`
	OwnerID   string `json:"ownerId"`
	RequestID string `json:"requestId,omitempty"`
	// Name is the ZIP's name without .zip.
	Name  string `json:"name"`
	Total int    `json:"total"`
	Host  bool   `json:"host"`
	// UserType is the hosted ZIP's access (DESIGN 4.4); a non-hosted ZIP is always private.
	UserType string `json:"userType,omitempty"`
	// ZipID is the ZIP's file ID: the hosted slot reserved at submission,
	// or the batch ID itself for a non-hosted ZIP (DESIGN 4.3).
	ZipID   string `json:"zipId"`
	BaseURL string `json:"baseUrl"`
	// Charge is the batch's conversions, one per document; a document that
	// produces nothing gives its one back, to the month that paid.
	Charge    usage.Reservation `json:"charge"`
	Retention time.Duration     `json:"retention"`
	// HostedExpiresAt is the hosted ZIP's expiry, fixed when its slot was reserved.
	HostedExpiresAt time.Time `json:"hostedExpiresAt,omitzero"`
	CreatedAt       time.Time `json:"createdAt"`
	Webhook         *Webhook  `json:"webhook,omitempty"`
	// Report puts report.json, one entry per document, into the ZIP (DESIGN §6).
	Report bool `json:"report,omitempty"`
}

// Progress is the progress record of spec 2.5.
type Progress struct {
	Total   int    `json:"total"`
	Current int    `json:"current"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Terminal reports whether the batch is over (completed or error).
func (p Progress) Terminal() bool { return p.Status == Completed || p.Status == Error }

// NotFoundProgress is the record for an unknown or expired batch (DESIGN 4.10).
func NotFoundProgress() Progress {
	return Progress{Status: NotFound, Message: "Batch not found. It may have expired or never existed."}
}

// Result is a completed batch's ZIP, as the hosted ZIP result (spec 2.7)
// and the completion message (spec 4.4) describe it.
type Result struct {
	DownloadURL        string `json:"downloadUrl"`
	ZipID              string `json:"zipId"`
	ExpiresAt          string `json:"expiresAt"`
	DocumentsGenerated int    `json:"documentsGenerated"`
}

// final is the terminal state, written once (first writer wins).
type final struct {
	Progress
	At     time.Time `json:"at"`
	Result *Result   `json:"result,omitempty"`
}

func recordKey(id string) string         { return "batch:" + id }
func namesKey(id string) string          { return "batch:" + id + ":names" }
func doneKey(id string) string           { return "batch:" + id + ":done" }
func settledKey(id string) string        { return "batch:" + id + ":settled" }
func finalKey(id string) string          { return "batch:" + id + ":final" }
func indexMember(i int) string           { return strconv.Itoa(i) }
func deliveryID(id, event string) string { return id + "." + event }
func progressMessage(current, total int) string {
	return fmt.Sprintf("Generated %d/%d PDFs", current, total)
}

// DefaultName is the ZIP name when the request gives none (spec 4.3).
func DefaultName(now time.Time) string { return "batch-" + strconv.FormatInt(now.UnixMilli(), 10) }

// EntryNames turns the documents' file names into ZIP entry names:
// name.pdf, a repeated name becoming "name (2).pdf", "name (3).pdf", so no
// entry hides another. Names are compared case-insensitively, as archive
// tools on Windows and macOS would.
func EntryNames(fileNames []string) []string {
	taken := make(map[string]bool, len(fileNames))
	out := make([]string, len(fileNames))
	for i, n := range fileNames {
		name := n + ".pdf"
		for k := 2; taken[strings.ToLower(name)]; k++ {
			name = fmt.Sprintf("%s (%d).pdf", n, k)
		}
		taken[strings.ToLower(name)] = true
		out[i] = name
	}
	return out
}

// Queue is what a batch needs of the job queue (pkg/queue's Conn).
type Queue interface {
	// Admit refuses (ErrQueueFull) n more batch documents of account when
	// they would take more than its share of the queue.
	Admit(ctx context.Context, account string, n int) error
	Publish(ctx context.Context, job *jobspb.Job) error
	PublishWebhook(ctx context.Context, d *jobspb.WebhookDelivery) error
}

// Tracker reads and advances batches.
type Tracker struct {
	st      state.Store
	q       Queue
	files   *files.Store
	usage   *usage.Meter
	blobs   blob.Store
	log     *slog.Logger
	metrics *metrics.Metrics // nil until Instrument
	now     func() time.Time
}

// New returns a tracker. q may be nil where nothing is published (tests).
func New(st state.Store, q Queue, fs *files.Store, blobs blob.Store, log *slog.Logger) *Tracker {
	return &Tracker{st: st, q: q, files: fs, usage: usage.New(st), blobs: blobs, log: log, now: time.Now}
}

// Instrument counts the batches this tracker ends in m.
func (t *Tracker) Instrument(m *metrics.Metrics) { t.metrics = m }

// inputWriters is how many documents' HTML Submit writes at once.
const inputWriters = 8

// Document is one document of a new batch.
type Document struct {
	// EntryName is its name in the ZIP (EntryNames).
	EntryName string
	// HTML is the page, or URL the address of one to fetch (DESIGN §6).
	HTML string
	URL  string
	// Own is the document's own print options (DESIGN §6, its fields over
	// the batch's options); nil: the batch's.
	Own *pdfopts.PrintOptions
	// Data fills the batch's stored template (DESIGN §9), a JSON object,
	// instead of HTML.
	Data []byte
	// Office is an office file to convert instead of a page (DESIGN §11).
	Office *OfficeFile
	// PDF is a PDF of the client's instead of a page (DESIGN §11): a
	// tool's output, or the PDF as sent, through the batch's steps.
	PDF *PDFFile
}

// OfficeFile is a batch document's office file: its client-side name
// (whose extension says its format) and its bytes.
type OfficeFile struct {
	Name    string
	Content []byte
}

// PDFFile is a batch document's PDF: its client-side name, its bytes, and
// the tool to run on it (its Tool set, the input left for Submit to fill;
// nil: none).
type PDFFile struct {
	Name    string
	Content []byte
	Tool    *jobspb.ToolJob
}

// pdfKey is where document i's PDF is stored, under its inputs.
func pdfKey(id string, i int) string {
	return blob.BatchInputs(id, i) + "input.pdf"
}

// officeKey is where document i's office file is stored: under its
// inputs, by its name's extension (the client's name travels in the job).
func officeKey(id string, i int, name string) string {
	return blob.BatchInputs(id, i) + "office" + path.Ext(name)
}

// InlineDataBytes is the most template data a job message carries; more
// travels through the blob store (a generate's too).
const InlineDataBytes = 256 << 10

// Submit starts r, whose conversions (r.Charge) and, with r.Host, hosted
// slot (r.ZipID) are reserved: from here the batch owns them. It stores
// each document's HTML (or office file) and the record, then queues one job
// per document, printed with render's page and watermark (an office file is
// converted with what applies of them, officeJob). A watermark image is stored
// once, in the batch's folder, and every job names its key (the inputs'
// removal, once every document has settled or none was queued, takes it
// too). An error before any job is queued gives everything back. If the
// queue refuses a document part-way, the batch fails at once (the queued
// ones are skipped when their turn comes) and the documents never queued
// are given back; the error then wraps the queue's.
func (t *Tracker) Submit(ctx context.Context, r *Record, docs []Document, render *jobspb.RenderJob, timeout time.Duration) error {
	if len(docs) != r.Total {
		return fmt.Errorf("batch: %d documents for a total of %d", len(docs), r.Total)
	}
	names := make([]string, len(docs))
	for i, d := range docs {
		names[i] = d.EntryName
	}
	if err := t.q.Admit(ctx, r.OwnerID, r.Total); err != nil {
		t.abandon(ctx, r)
		return fmt.Errorf("batch: %w", err)
	}
	if err := t.writeInputs(ctx, r.ID, docs); err != nil {
		t.abandon(ctx, r)
		return err
	}
	wm, err := blob.OffloadWatermark(ctx, t.blobs, blob.BatchWatermark(r.ID), render.GetWatermark())
	if err != nil {
		t.abandon(ctx, r)
		return fmt.Errorf("batch: %w", err)
	}
	rec, err := blob.OffloadRecord(ctx, t.blobs, blob.BatchDir(r.ID)+"record/", render.GetRecord())
	if err != nil {
		t.abandon(ctx, r)
		return fmt.Errorf("batch: %w", err)
	}
	ownRec := make([]*jobspb.Record, len(docs))
	for i, d := range docs {
		if d.Own == nil || d.Own.Record == nil {
			continue
		}
		// A document's own record (its §8 fields over the batch's) keeps its
		// bytes beside its page.
		if ownRec[i], err = blob.OffloadRecord(ctx, t.blobs, blob.BatchInputs(r.ID, i)+"record/", d.Own.Record); err != nil {
			t.abandon(ctx, r)
			return fmt.Errorf("batch: document %d: %w", i, err)
		}
	}
	if err := t.Create(ctx, r, names); err != nil {
		t.abandon(ctx, r)
		return err
	}
	for i := range r.Total {
		job := &jobspb.Job{
			// Deterministic: a publish retried after a lost ack is deduplicated.
			Id:        r.ID + "-" + strconv.Itoa(i),
			RequestId: r.RequestID,
			AccountId: r.OwnerID,
			OutputKey: blob.BatchPDF(r.ID, i),
			TimeoutMs: timeout.Milliseconds(),
			Kind: &jobspb.Job_BatchDocument{BatchDocument: &jobspb.BatchDocumentJob{
				BatchId: r.ID, Index: int32(i),
				Render: &jobspb.RenderJob{
					BundlePrefix: blob.BatchInputs(r.ID, i), Files: []string{"index.html"}, Entry: "index.html",
					Page: render.GetPage(), Watermark: wm,
					Print: render.GetPrint(), Info: render.GetInfo(), Encryption: render.GetEncryption(),
					Record: rec, MaxPages: render.GetMaxPages(),
					Stages: render.GetStages(), StepsOrdered: render.GetStepsOrdered(), PagesStage: render.GetPagesStage(),
				},
			}},
		}
		rj := job.GetBatchDocument().Render
		fetch := render.GetUrl()
		if own := docs[i].Own; own != nil {
			rj.Print, rj.Info, rj.Encryption, rj.Record, fetch = own.Print, own.Info, own.Encryption, ownRec[i], own.Fetch
			rj.Stages, rj.StepsOrdered, rj.PagesStage = own.Stages, own.StepsOrdered, own.Pages
		}
		if fill := render.GetTemplate(); fill != nil {
			// A stored template's files, filled with this document's data.
			rj.BundlePrefix, rj.Files, rj.Entry = render.GetBundlePrefix(), render.GetFiles(), render.GetEntry()
			rj.Template = &jobspb.TemplateFill{TemplateId: fill.TemplateId, Version: fill.Version, DataJson: docs[i].Data}
			if len(docs[i].Data) > InlineDataBytes {
				key := blob.BatchInputs(r.ID, i) + "data.json"
				if err := t.blobs.Put(ctx, key, bytes.NewReader(docs[i].Data), int64(len(docs[i].Data))); err != nil {
					t.refused(ctx, r, i, err)
					return fmt.Errorf("batch: store document %d's data: %w", i, err)
				}
				rj.Template.DataJson, rj.Template.DataKey = nil, key
			}
		}
		if f := docs[i].Office; f != nil {
			job.GetBatchDocument().Office, job.GetBatchDocument().Render = officeJob(rj, officeKey(r.ID, i, f.Name), f.Name), nil
		}
		if f := docs[i].PDF; f != nil {
			job.GetBatchDocument().Tool, job.GetBatchDocument().Render = toolJob(rj, pdfKey(r.ID, i), f), nil
		}
		if docs[i].URL != "" {
			rj.BundlePrefix, rj.Files, rj.Entry = "", nil, ""
			rj.Url = proto.CloneOf(fetch)
			if rj.Url == nil {
				rj.Url = &jobspb.PageURL{}
			}
			rj.Url.Url = docs[i].URL
		}
		if err := t.q.Publish(ctx, job); err != nil {
			t.refused(ctx, r, i, err)
			return fmt.Errorf("batch: queue document %d: %w", i, err)
		}
	}
	return nil
}

// officeJob converts the office file at key, named name, with what applies
// to it of the document's render: the batch's orientation and page ranges,
// its watermark and every §8 step, in the document's order.
func officeJob(rj *jobspb.RenderJob, key, name string) *jobspb.OfficeJob {
	return &jobspb.OfficeJob{InputKeys: []string{key}, InputNames: []string{name},
		Landscape: rj.GetPage().GetLandscape(), PageRanges: rj.GetPrint().GetPageRanges(),
		Watermark: rj.GetWatermark(), Info: rj.GetInfo(), Encryption: rj.GetEncryption(), Record: rj.GetRecord(),
		Stages: rj.GetStages(), StepsOrdered: rj.GetStepsOrdered(), PagesStage: rj.GetPagesStage(), MaxPages: rj.GetMaxPages()}
}

// toolJob runs f's tool on the PDF at key, then what applies to it of the
// document's render: its watermark and every §8 step, in the document's
// order (a PDF has no page to print: the print options do not apply).
func toolJob(rj *jobspb.RenderJob, key string, f *PDFFile) *jobspb.ToolJob {
	tj := &jobspb.ToolJob{}
	if f.Tool != nil {
		tj = proto.CloneOf(f.Tool)
	}
	tj.InputKey, tj.InputName = key, f.Name
	tj.Watermark, tj.Info, tj.Encryption, tj.Record = rj.GetWatermark(), rj.GetInfo(), rj.GetEncryption(), rj.GetRecord()
	tj.Stages, tj.StepsOrdered, tj.PagesStage = rj.GetStages(), rj.GetStepsOrdered(), rj.GetPagesStage()
	return tj
}

// writeInputs stores each document's HTML as the index.html of its own
// bundle, or its office file under its inputs.
func (t *Tracker) writeInputs(ctx context.Context, id string, docs []Document) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, inputWriters)
	for i, d := range docs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if d.URL != "" || d.Data != nil {
				return // fetched by the worker, or a stored template's data
			}
			key, body, n := blob.BatchInputs(id, i)+"index.html", io.Reader(strings.NewReader(d.HTML)), len(d.HTML)
			switch {
			case d.Office != nil:
				key, body, n = officeKey(id, i, d.Office.Name), bytes.NewReader(d.Office.Content), len(d.Office.Content)
			case d.PDF != nil:
				key, body, n = pdfKey(id, i), bytes.NewReader(d.PDF.Content), len(d.PDF.Content)
			}
			err := t.blobs.Put(ctx, key, body, int64(n))
			if err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("batch: inputs: %w", first)
	}
	return nil
}

// abandon gives back everything of a batch none of whose jobs was queued.
func (t *Tracker) abandon(ctx context.Context, r *Record) {
	ctx = context.WithoutCancel(ctx)
	t.release(ctx, r, "all", r.Charge.N)
	if r.Host {
		if err := t.files.ReleaseHosted(ctx, r.OwnerID, r.ZipID); err != nil {
			t.log.ErrorContext(ctx, "freeing the hosted slot failed", "batch_id", r.ID, "err", err)
		}
	}
	t.removeTemp(ctx, r)
}

// refused fails a batch whose document `queued` the queue refused, and gives
// back that one and every one after it.
func (t *Tracker) refused(ctx context.Context, r *Record, queued int, cause error) {
	ctx = context.WithoutCancel(ctx)
	t.log.ErrorContext(ctx, "queuing a batch failed", "batch_id", r.ID, "queued", queued, "err", cause)
	if _, err := t.Fail(ctx, r, fmt.Sprintf("The batch could not be queued (%d of %d documents queued).", queued, r.Total)); err != nil {
		t.log.ErrorContext(ctx, "failing the batch failed", "batch_id", r.ID, "err", err)
	}
	for i := queued; i < r.Total; i++ {
		if err := t.DocNotDone(ctx, r, i); err != nil {
			t.log.ErrorContext(ctx, "giving back unqueued documents failed", "batch_id", r.ID, "from", i, "err", err)
			return
		}
	}
}

// TTL is how long a batch's state lives: as long as its ZIP may be
// downloaded, and a day more, so a late poll still finds the record. Its
// documents may give their conversions back for as long.
func (r *Record) TTL() time.Duration { return r.Retention + 24*time.Hour }

// Create stores a new batch with its ZIP entry names, before any job is published.
func (t *Tracker) Create(ctx context.Context, r *Record, entryNames []string) error {
	if len(entryNames) != r.Total {
		return fmt.Errorf("batch: %d names for %d documents", len(entryNames), r.Total)
	}
	names, err := json.Marshal(entryNames)
	if err != nil {
		return fmt.Errorf("batch: create: %w", err)
	}
	if err := t.st.Set(ctx, namesKey(r.ID), names, r.TTL()); err != nil {
		return fmt.Errorf("batch: create: %w", err)
	}
	return t.putRecord(ctx, r, r.TTL())
}

func (t *Tracker) putRecord(ctx context.Context, r *Record, ttl time.Duration) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("batch: record: %w", err)
	}
	if err := t.st.Set(ctx, recordKey(r.ID), b, max(ttl, time.Second)); err != nil {
		return fmt.Errorf("batch: record: %w", err)
	}
	return nil
}

// Get returns the batch record, or ErrNotFound.
func (t *Tracker) Get(ctx context.Context, id string) (*Record, error) {
	if !ids.Valid(id) {
		return nil, ErrNotFound
	}
	b, err := t.st.Get(ctx, recordKey(id))
	if errors.Is(err, state.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("batch: get: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("batch: get: %w", err)
	}
	return &r, nil
}

// EntryNamesOf returns the ZIP entry names stored with the batch.
func (t *Tracker) EntryNamesOf(ctx context.Context, r *Record) ([]string, error) {
	b, err := t.st.Get(ctx, namesKey(r.ID))
	if err != nil {
		return nil, fmt.Errorf("batch: names: %w", err)
	}
	var names []string
	if err := json.Unmarshal(b, &names); err != nil || len(names) != r.Total {
		return nil, fmt.Errorf("batch: names: corrupt (%d for %d documents): %v", len(names), r.Total, err)
	}
	return names, nil
}

// terminal returns the batch's terminal state, or nil while it runs.
func (t *Tracker) terminal(ctx context.Context, id string) (*final, error) {
	b, err := t.st.Get(ctx, finalKey(id))
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("batch: status: %w", err)
	}
	var f final
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("batch: status: %w", err)
	}
	return &f, nil
}

// Progress is the batch's progress record now.
func (t *Tracker) Progress(ctx context.Context, r *Record) (Progress, error) {
	f, err := t.terminal(ctx, r.ID)
	if err != nil {
		return Progress{}, err
	}
	if f != nil {
		return f.Progress, nil
	}
	n, err := t.st.SetCard(ctx, doneKey(r.ID))
	if err != nil {
		return Progress{}, fmt.Errorf("batch: progress: %w", err)
	}
	cur := min(int(n), r.Total)
	return Progress{Total: r.Total, Current: cur, Status: Processing, Message: progressMessage(cur, r.Total)}, nil
}

// Result returns the ZIP of a completed batch, or nil.
func (t *Tracker) Result(ctx context.Context, r *Record) (*Result, error) {
	f, err := t.terminal(ctx, r.ID)
	if err != nil || f == nil {
		return nil, err
	}
	return f.Result, nil
}

// Failed reports whether the batch ended in error; its documents still
// queued are then skipped.
func (t *Tracker) Failed(ctx context.Context, r *Record) (bool, error) {
	f, err := t.terminal(ctx, r.ID)
	if err != nil {
		return false, err
	}
	return f != nil && f.Status == Error, nil
}

// settle marks document i as finished one way or the other and reports
// whether this call was the first to do so, and whether every document is
// now settled.
func (t *Tracker) settle(ctx context.Context, r *Record, i int) (first, all bool, err error) {
	first, n, err := t.st.SetAdd(ctx, settledKey(r.ID), indexMember(i), r.TTL())
	if err != nil {
		return false, false, fmt.Errorf("batch: settle: %w", err)
	}
	return first, int(n) >= r.Total, nil
}

// DocDone records document i as generated and returns how many are; when
// that is every document, the caller queues the batch's ZipJob.
func (t *Tracker) DocDone(ctx context.Context, r *Record, i int) (int, error) {
	if i < 0 || i >= r.Total {
		return 0, fmt.Errorf("batch: document %d of %d", i, r.Total)
	}
	// Settled first: a crash between the two leaves the document settled but
	// not done, and its redelivery adds it to done without giving anything back.
	if _, _, err := t.settle(ctx, r, i); err != nil {
		return 0, err
	}
	_, n, err := t.st.SetAdd(ctx, doneKey(r.ID), indexMember(i), r.TTL())
	if err != nil {
		return 0, fmt.Errorf("batch: done: %w", err)
	}
	return int(n), nil
}

// DocNotDone records that document i produced no PDF (it failed, or was
// skipped because the batch had already failed): its conversion is given
// back, once however often this is called. The last document settled of a
// failed batch removes the batch's temporary files.
func (t *Tracker) DocNotDone(ctx context.Context, r *Record, i int) error {
	first, all, err := t.settle(ctx, r, i)
	if err != nil {
		return err
	}
	if first {
		t.release(ctx, r, "doc:"+indexMember(i), 1)
	}
	if all {
		t.removeTemp(ctx, r)
	}
	return nil
}

// release gives n of the batch's conversions back, once for part. A
// failure is logged, not returned: the document's outcome stands either way.
func (t *Tracker) release(ctx context.Context, r *Record, part string, n int64) {
	if err := t.usage.Release(ctx, r.Charge, part, n); err != nil {
		t.log.ErrorContext(ctx, "giving conversions back failed", "batch_id", r.ID, "n", n, "err", err)
	}
}

func (t *Tracker) removeTemp(ctx context.Context, r *Record) {
	if err := t.blobs.DeletePrefix(context.WithoutCancel(ctx), blob.BatchDir(r.ID)); err != nil {
		t.log.WarnContext(ctx, "removing batch files failed", "batch_id", r.ID, "err", err)
	}
}

// Fail ends the batch in error with msg, unless it already ended, and
// reports whether this call ended it. The first caller to end it frees the
// hosted slot; every caller queues the webhook of the batch's end (the
// queue drops the repeats), so a caller whose first try ended the batch
// and then lost the state store still announces it when it tries again.
func (t *Tracker) Fail(ctx context.Context, r *Record, msg string) (bool, error) {
	cur, err := t.st.SetCard(ctx, doneKey(r.ID))
	if err != nil {
		return false, fmt.Errorf("batch: fail: %w", err)
	}
	f := final{Progress: Progress{Total: r.Total, Current: min(int(cur), r.Total), Status: Error, Message: msg}, At: t.now().UTC()}
	won, err := t.setFinal(ctx, r, &f)
	if err != nil {
		return false, err
	}
	if !won {
		return false, t.Notify(ctx, r)
	}
	t.log.WarnContext(ctx, "batch failed", "batch_id", r.ID, "request_id", r.RequestID, "msg", msg)
	t.metrics.BatchFinished(Error)
	if r.Host {
		if err := t.files.ReleaseHosted(context.WithoutCancel(ctx), r.OwnerID, r.ZipID); err != nil {
			t.log.ErrorContext(ctx, "freeing the hosted slot failed", "batch_id", r.ID, "err", err)
		}
	}
	return true, t.Notify(ctx, r)
}

func (t *Tracker) setFinal(ctx context.Context, r *Record, f *final) (bool, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return false, fmt.Errorf("batch: status: %w", err)
	}
	won, err := t.st.SetNX(ctx, finalKey(r.ID), b, r.TTL())
	if err != nil {
		return false, fmt.Errorf("batch: status: %w", err)
	}
	return won, nil
}

// ZipFile is the stored-file record for the batch's ZIP of size bytes
// (already written to blob.FileKey(r.ZipID)).
func (t *Tracker) ZipFile(r *Record, size int64) *files.File {
	now := t.now().UTC()
	f := &files.File{
		ID:          r.ZipID,
		OwnerID:     r.OwnerID,
		Name:        r.Name + ".zip",
		ContentType: "application/zip",
		Size:        size,
		CreatedAt:   now,
	}
	if r.Host {
		f.Hosted, f.UserType, f.ExpiresAt = true, r.UserType, r.HostedExpiresAt
	} else {
		// A ZIP reached through the batch ID is private (DESIGN 4.4).
		f.UserType, f.ExpiresAt = "registered", now.Add(r.Retention)
	}
	return f
}

// DownloadURL is where the batch's ZIP is fetched (spec 2.7, 4.4).
func DownloadURL(r *Record) string {
	if r.Host {
		return r.BaseURL + "/api/hosted-pdfs/" + r.ZipID
	}
	return r.BaseURL + "/pdf/download/" + r.ID
}

// CompletionMessage is the progress message of a completed batch (spec 4.4):
// the download URL, or with host a JSON string of the hosted result.
func CompletionMessage(r *Record, res *Result) string {
	if !r.Host {
		return "Download URL: " + res.DownloadURL
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// Complete records the batch's ZIP file and ends the batch completed, and
// queues the webhook of the batch's end (a repeat, from a redelivered ZIP
// job or a try again after the state store came back, is dropped by the
// queue). Calling it again changes nothing else.
func (t *Tracker) Complete(ctx context.Context, r *Record, zip *files.File) (bool, error) {
	if err := t.files.Put(ctx, zip); err != nil {
		return false, fmt.Errorf("batch: complete: %w", err)
	}
	res := &Result{DownloadURL: DownloadURL(r), ZipID: zip.ID, ExpiresAt: apitime.Format(zip.ExpiresAt), DocumentsGenerated: r.Total}
	f := final{
		Progress: Progress{Total: r.Total, Current: r.Total, Status: Completed, Message: CompletionMessage(r, res)},
		At:       t.now().UTC(), Result: res,
	}
	won, err := t.setFinal(ctx, r, &f)
	if err != nil {
		return false, err
	}
	if !won {
		return false, t.Notify(ctx, r)
	}
	t.log.InfoContext(ctx, "batch completed", "batch_id", r.ID, "request_id", r.RequestID, "documents", r.Total, "zip_bytes", zip.Size)
	t.metrics.BatchFinished(Completed)
	// The batch's state now lives exactly as long as its ZIP.
	if err := t.putRecord(ctx, r, time.Until(zip.ExpiresAt)); err != nil {
		t.log.WarnContext(ctx, "shortening the batch record's life failed", "batch_id", r.ID, "err", err)
	}
	t.removeTemp(ctx, r)
	return true, t.Notify(ctx, r)
}
