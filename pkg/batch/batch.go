// Package batch keeps the state of batch generations (spec 2.5, 3.1, 4.3-4.5)
// in the state store, so that every gateway can answer for any batch and
// every worker can advance it. The gateway creates a batch and publishes one
// render job per document; workers report each document done or failed;
// the worker that completes the last document queues the ZIP job, and the
// ZIP job completes the batch.
//
// Counting is idempotent: a document counts as done by adding its index to
// a set, so a redelivered job never counts twice, `current` never exceeds
// `total` and never decreases.
package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
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
	// UsageKey is the conversion counter the batch was reserved against;
	// failed documents are given back to it, even after the month changed.
	UsageKey  string        `json:"usageKey"`
	Retention time.Duration `json:"retention"`
	// HostedExpiresAt is the hosted ZIP's expiry, fixed when its slot was reserved.
	HostedExpiresAt time.Time `json:"hostedExpiresAt,omitzero"`
	CreatedAt       time.Time `json:"createdAt"`
	Webhook         *Webhook  `json:"webhook,omitempty"`
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

// Blob keys of a batch's temporary files; all under Prefix(id).
func Prefix(id string) string             { return "batches/" + id + "/" }
func InputPrefix(id string, i int) string { return Prefix(id) + "in/" + strconv.Itoa(i) + "/" }
func PDFKey(id string, i int) string      { return Prefix(id) + "pdf/" + strconv.Itoa(i) + ".pdf" }
func recordKey(id string) string          { return "batch:" + id }
func namesKey(id string) string           { return "batch:" + id + ":names" }
func doneKey(id string) string            { return "batch:" + id + ":done" }
func settledKey(id string) string         { return "batch:" + id + ":settled" }
func finalKey(id string) string           { return "batch:" + id + ":final" }
func indexMember(i int) string            { return strconv.Itoa(i) }
func deliveryID(id, event string) string  { return id + "." + event }
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

// Tracker reads and advances batches.
type Tracker struct {
	st    state.Store
	q     *queue.Conn
	files *files.Store
	blobs blob.Store
	log   *slog.Logger
	now   func() time.Time
}

// New returns a tracker. q may be nil where nothing is published (tests).
func New(st state.Store, q *queue.Conn, fs *files.Store, blobs blob.Store, log *slog.Logger) *Tracker {
	return &Tracker{st: st, q: q, files: fs, blobs: blobs, log: log, now: time.Now}
}

// ttl is how long a batch's state lives: as long as its ZIP may be
// downloaded, and a day more, so a late poll still finds the record.
func (r *Record) ttl() time.Duration { return r.Retention + 24*time.Hour }

// Create stores a new batch with its ZIP entry names, before any job is published.
func (t *Tracker) Create(ctx context.Context, r *Record, entryNames []string) error {
	if len(entryNames) != r.Total {
		return fmt.Errorf("batch: %d names for %d documents", len(entryNames), r.Total)
	}
	names, err := json.Marshal(entryNames)
	if err != nil {
		return fmt.Errorf("batch: create: %w", err)
	}
	if err := t.st.Set(ctx, namesKey(r.ID), names, r.ttl()); err != nil {
		return fmt.Errorf("batch: create: %w", err)
	}
	return t.putRecord(ctx, r, r.ttl())
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
	if !files.ValidID(id) {
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
	first, n, err := t.st.SetAdd(ctx, settledKey(r.ID), indexMember(i), r.ttl())
	if err != nil {
		return false, false, fmt.Errorf("batch: settle: %w", err)
	}
	return first, int(n) >= r.Total, nil
}

// DocDone records document i as generated and returns how many are; when
// that is every document, the caller queues the ZIP job (QueueZip).
func (t *Tracker) DocDone(ctx context.Context, r *Record, i int) (int, error) {
	if i < 0 || i >= r.Total {
		return 0, fmt.Errorf("batch: document %d of %d", i, r.Total)
	}
	// Settled first: a crash between the two leaves the document settled but
	// not done, and its redelivery adds it to done without giving anything back.
	if _, _, err := t.settle(ctx, r, i); err != nil {
		return 0, err
	}
	_, n, err := t.st.SetAdd(ctx, doneKey(r.ID), indexMember(i), r.ttl())
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
		t.release(ctx, r, 1)
	}
	if all {
		t.removeTemp(ctx, r)
	}
	return nil
}

// release gives n conversions back. A failure is logged, not returned:
// the document's outcome stands either way.
func (t *Tracker) release(ctx context.Context, r *Record, n int64) {
	if r.UsageKey == "" || n <= 0 {
		return
	}
	if _, err := t.st.IncrBy(ctx, r.UsageKey, -n, 62*24*time.Hour); err != nil {
		t.log.ErrorContext(ctx, "giving conversions back failed", "batch_id", r.ID, "n", n, "err", err)
	}
}

// ReleaseUnqueued gives back the conversions of documents from..Total-1,
// whose jobs were never published (the queue refused them).
func (t *Tracker) ReleaseUnqueued(ctx context.Context, r *Record, from int) error {
	for i := from; i < r.Total; i++ {
		if err := t.DocNotDone(ctx, r, i); err != nil {
			return err
		}
	}
	return nil
}

func (t *Tracker) removeTemp(ctx context.Context, r *Record) {
	if err := t.blobs.DeletePrefix(context.WithoutCancel(ctx), Prefix(r.ID)); err != nil {
		t.log.WarnContext(ctx, "removing batch files failed", "batch_id", r.ID, "err", err)
	}
}

// Fail ends the batch in error with msg, unless it already ended. The
// first caller to end it frees the hosted slot and queues the
// batch.failed webhook; it reports whether this call ended it.
func (t *Tracker) Fail(ctx context.Context, r *Record, msg string) (bool, error) {
	cur, err := t.st.SetCard(ctx, doneKey(r.ID))
	if err != nil {
		return false, fmt.Errorf("batch: fail: %w", err)
	}
	f := final{Progress: Progress{Total: r.Total, Current: min(int(cur), r.Total), Status: Error, Message: msg}, At: t.now().UTC()}
	won, err := t.setFinal(ctx, r, &f)
	if err != nil || !won {
		return won, err
	}
	t.log.WarnContext(ctx, "batch failed", "batch_id", r.ID, "request_id", r.RequestID, "msg", msg)
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
	won, err := t.st.SetNX(ctx, finalKey(r.ID), b, r.ttl())
	if err != nil {
		return false, fmt.Errorf("batch: status: %w", err)
	}
	return won, nil
}

// QueueZip queues the ZIP job of a batch whose documents are all done.
// Its message ID deduplicates the job when two workers both see the last
// document done (a redelivery).
func (t *Tracker) QueueZip(ctx context.Context, r *Record) error {
	job := &jobspb.Job{
		Id:         "zip-" + r.ID,
		RequestId:  r.RequestID,
		AccountId:  r.OwnerID,
		BatchId:    r.ID,
		BatchIndex: -1,
		Kind:       &jobspb.Job_Zip{Zip: &jobspb.ZipJob{}},
	}
	if err := t.q.Publish(ctx, job); err != nil {
		return fmt.Errorf("batch: queue zip: %w", err)
	}
	return nil
}

// ZipFile is the stored-file record for the batch's ZIP of size bytes
// (already written to files.BlobKey(r.ZipID)).
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

// Complete records the batch's ZIP file and ends the batch completed; the
// first caller queues the batch.completed webhook. Calling it again (a
// redelivered ZIP job) changes nothing.
func (t *Tracker) Complete(ctx context.Context, r *Record, zip *files.File) (bool, error) {
	if err := t.files.Put(ctx, zip); err != nil {
		return false, fmt.Errorf("batch: complete: %w", err)
	}
	res := &Result{DownloadURL: DownloadURL(r), ZipID: zip.ID, ExpiresAt: zip.ExpiresAt.UTC().Format(time.RFC3339), DocumentsGenerated: r.Total}
	f := final{
		Progress: Progress{Total: r.Total, Current: r.Total, Status: Completed, Message: CompletionMessage(r, res)},
		At:       t.now().UTC(), Result: res,
	}
	won, err := t.setFinal(ctx, r, &f)
	if err != nil || !won {
		return won, err
	}
	t.log.InfoContext(ctx, "batch completed", "batch_id", r.ID, "request_id", r.RequestID, "documents", r.Total, "zip_bytes", zip.Size)
	// The batch's state now lives exactly as long as its ZIP.
	if err := t.putRecord(ctx, r, time.Until(zip.ExpiresAt)); err != nil {
		t.log.WarnContext(ctx, "shortening the batch record's life failed", "batch_id", r.ID, "err", err)
	}
	t.removeTemp(ctx, r)
	return true, t.Notify(ctx, r)
}
