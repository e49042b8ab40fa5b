package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Batch statuses (spec 2.5).
const (
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusError      = "error"
	StatusNotFound   = "not_found"
)

// BatchDocument is one document of a batch: HTML, the URL of a public
// page, an office file, a PDF, or (in a batch with a Template) the template's
// data; and optionally its own print options over the batch's.
type BatchDocument struct {
	// FileName is the PDF's name in the ZIP, without .pdf: required but
	// in a batch with a template, whose documents default to
	// <template name>-<n>.
	FileName    string `json:"fileName,omitempty"`
	HTMLContent string `json:"htmlContent,omitempty"`
	URL         string `json:"url,omitempty"`
	// Data fills the batch's Template (DESIGN §9): as TemplateRequest's
	// Data (nil sends {}).
	Data any `json:"data,omitempty"`
	// Office is an office file converted instead of HTML (DESIGN §11).
	Office *OfficeFile `json:"office,omitempty"`
	// PDF is a PDF of yours instead of HTML, through a tool or as sent,
	// then the batch's watermark and steps (DESIGN §11).
	PDF *PDFFile `json:"pdf,omitempty"`
	*PrintOptions
}

// PDFFile is a batch document's PDF: Content is its bytes (sent in
// base64); FileName, when set, names it in errors and names the document
// when it has no FileName of its own. Tool, when set, is the tool whose
// output the document is: NewTool("flatten", nil), NewTool("optimize",
// map[string]any{"imageQuality": 60}), NewTool("pages",
// map[string]any{"select": "1-2"}) or NewTool("metadata", ...).
type PDFFile struct {
	FileName string `json:"fileName,omitempty"`
	Content  []byte `json:"content"`
	Tool     Stage  `json:"tool,omitempty"`
}

// NewTool is a batch PDF document's tool: op (flatten, optimize, pages,
// metadata) with its options inline, as NewStage builds a step.
func NewTool(op string, fields map[string]any) Stage { return NewStage(op, fields) }

// OfficeFile is a batch document's office file (docx, xlsx, pptx, odt,
// ods, odp, rtf, txt, csv, ...): FileName's extension says its format;
// Content is its bytes (sent in base64). Without its own FileName the
// document is named after the file.
type OfficeFile struct {
	FileName string `json:"fileName"`
	Content  []byte `json:"content"`
}

// Webhook is called when a batch completes or fails (DESIGN §4.18).
type Webhook struct {
	URL string `json:"url"`
	// Secret signs each delivery (X-Docrender-Signature).
	Secret string `json:"secret,omitempty"`
}

// BatchRequest is a batch of documents rendered into one ZIP (spec 4.3).
type BatchRequest struct {
	Documents []BatchDocument `json:"documents"`
	// BatchName is the ZIP's name (default batch-<timestamp>).
	BatchName string `json:"batchName,omitempty"`
	// Options apply to every document.
	Options *PDFOptions `json:"options,omitempty"`
	Webhook *Webhook    `json:"webhook,omitempty"`
	// Template, when set, is a stored template every document fills with
	// its Data instead of HTMLContent or URL (DESIGN §9), in every mode
	// (ZIP, hosted, streamed, webhook).
	Template *TemplateRef `json:"template,omitempty"`
	// Host stores the ZIP behind an expiring link (StartBatch only; the
	// synchronous calls are GenerateBatch and GenerateBatchHosted).
	Host bool `json:"-"`
	// IdempotencyKey, when set, makes a repeat of this request join the
	// batch the first one started (DESIGN §4.20): a client cut off while it
	// waits gets the batch it paid for, charged once.
	IdempotencyKey string `json:"-"`
}

func (r BatchRequest) body(stream, host bool) (func() (io.ReadCloser, string, error), error) {
	if len(r.Documents) == 0 {
		return nil, errors.New("docrender: a batch needs documents")
	}
	if r.Template != nil {
		if err := r.Template.check(); err != nil {
			return nil, err
		}
		docs := make([]BatchDocument, len(r.Documents))
		for i, d := range r.Documents {
			if d.HTMLContent != "" || d.URL != "" || d.Office != nil || d.PDF != nil {
				return nil, fmt.Errorf("docrender: document %d: a batch with a template takes each document's Data, not HTMLContent, URL, Office or PDF", i)
			}
			data, err := templateData(d.Data)
			if err != nil {
				return nil, fmt.Errorf("docrender: document %d: data: %w", i, err)
			}
			d.Data = data
			docs[i] = d
		}
		r.Documents = docs
	} else {
		for i, d := range r.Documents {
			if d.Data != nil {
				return nil, fmt.Errorf("docrender: document %d: Data needs the batch's Template", i)
			}
		}
	}
	return jsonBody(struct {
		BatchRequest
		Stream bool `json:"stream,omitempty"`
		Host   bool `json:"host,omitempty"`
	}{r, stream, host})
}

// HostedZip is a hosted batch's answer (spec 2.7).
type HostedZip struct {
	Success            bool      `json:"success"`
	Message            string    `json:"message"`
	DocumentsGenerated int       `json:"documentsGenerated"`
	DownloadURL        string    `json:"downloadUrl"`
	ZipID              string    `json:"zipId"`
	ExpiresAt          time.Time `json:"expiresAt"`
}

// GenerateBatch renders every document and returns the ZIP once all are
// done (the call lasts as long as the batch; bound it with ctx).
func (c *Client) GenerateBatch(ctx context.Context, r BatchRequest) (*Download, error) {
	body, err := r.body(false, false)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, &request{method: http.MethodPost, path: "/pdf/generate-batch", auth: authKey, body: body, idempotencyKey: r.IdempotencyKey})
	if err != nil {
		return nil, err
	}
	return newDownload(resp), nil
}

// GenerateBatchHosted renders every document, stores the ZIP and returns
// its link once all are done.
func (c *Client) GenerateBatchHosted(ctx context.Context, r BatchRequest) (*HostedZip, error) {
	body, err := r.body(false, true)
	if err != nil {
		return nil, err
	}
	var h HostedZip
	return &h, c.doJSON(ctx, &request{method: http.MethodPost, path: "/pdf/generate-batch", auth: authKey, body: body, idempotencyKey: r.IdempotencyKey}, &h)
}

// BatchStarted is the answer of StartBatch.
type BatchStarted struct {
	BatchID string `json:"batchId"`
	Total   int    `json:"total"`
	Message string `json:"message"`
}

// StartBatch starts a batch and returns at once with its ID (stream:true);
// follow it with FollowBatch, ProgressEvents or Progress, then fetch the
// ZIP with DownloadBatch (or, with Host, from the completion's link).
func (c *Client) StartBatch(ctx context.Context, r BatchRequest) (*BatchStarted, error) {
	body, err := r.body(true, r.Host)
	if err != nil {
		return nil, err
	}
	var s BatchStarted
	return &s, c.doJSON(ctx, &request{method: http.MethodPost, path: "/pdf/generate-batch", auth: authKey, body: body, idempotencyKey: r.IdempotencyKey}, &s)
}

// Progress is a batch's progress record (spec 2.5).
type Progress struct {
	Total   int    `json:"total"`
	Current int    `json:"current"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Done reports whether the batch is over (completed or error).
func (p Progress) Done() bool { return p.Status == StatusCompleted || p.Status == StatusError }

// BatchCompletion is where a completed batch's ZIP is (spec 4.4).
type BatchCompletion struct {
	// DownloadURL is /pdf/download/<batchId>, or the hosted ZIP's link.
	DownloadURL string `json:"downloadUrl"`
	// Hosted batches only:
	ZipID              string    `json:"zipId"`
	ExpiresAt          time.Time `json:"expiresAt"`
	DocumentsGenerated int       `json:"documentsGenerated"`
}

// Completion reads a completed batch's message: "Download URL: <url>",
// or with host the JSON of the hosted ZIP.
func (p Progress) Completion() (*BatchCompletion, error) {
	if p.Status != StatusCompleted {
		return nil, fmt.Errorf("docrender: batch is %s, not completed", p.Status)
	}
	if u, ok := strings.CutPrefix(p.Message, "Download URL: "); ok {
		return &BatchCompletion{DownloadURL: strings.TrimSpace(u), DocumentsGenerated: p.Current}, nil
	}
	var bc BatchCompletion
	if err := json.Unmarshal([]byte(p.Message), &bc); err != nil {
		return nil, fmt.Errorf("docrender: completion message %q: %w", p.Message, err)
	}
	return &bc, nil
}

// failure is the error of a batch that ended in error or is unknown; nil
// for any other state. A failed batch is the 500 a synchronous batch would
// have answered; an unknown one a 404.
func (p Progress) failure() error {
	switch p.Status {
	case StatusError:
		return &Error{StatusCode: http.StatusInternalServerError, Code: CodeInternal, Message: p.Message}
	case StatusNotFound:
		return &Error{StatusCode: http.StatusNotFound, Code: CodeNotFound, Message: p.Message}
	}
	return nil
}

func batchPath(id, suffix string) (string, error) {
	esc, err := pathEscape(id)
	if err != nil {
		return "", err
	}
	return "/pdf/progress/" + esc + suffix, nil
}

// Progress polls a batch's progress (GET /pdf/progress/:batchId). An
// unknown or expired batch returns its not_found record together with a
// 404 *Error.
func (c *Client) Progress(ctx context.Context, batchID string) (*Progress, error) {
	p, err := batchPath(batchID, "")
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: p, auth: authKey, ok: []int{http.StatusOK, http.StatusNotFound}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var pr Progress
	if err := decodeJSON(resp, &pr); err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return &pr, &Error{StatusCode: http.StatusNotFound, Code: CodeNotFound, Message: pr.Message,
			RequestID: resp.Header.Get("X-Request-ID")}
	}
	return &pr, nil
}

// WaitBatch polls a batch every interval (500 ms when 0) until it is over,
// and returns its last record; a failed or unknown batch is an *Error.
func (c *Client) WaitBatch(ctx context.Context, batchID string, interval time.Duration) (*Progress, error) {
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	for {
		p, err := c.Progress(ctx, batchID)
		if err != nil {
			return p, err
		}
		if p.Done() {
			return p, p.failure()
		}
		if err := c.sleep(ctx, interval); err != nil {
			return p, err
		}
	}
}

// DownloadBatch fetches the ZIP of a completed batch started without host
// (GET /pdf/download/<batchId>).
func (c *Client) DownloadBatch(ctx context.Context, batchID string) (*Download, error) {
	return c.DownloadFile(ctx, batchID)
}

// Reconnection of a progress stream that ended before its batch did (a
// gateway restarting closes its streams without a last event).
const (
	// sseDefaultRetry is the wait before reconnecting, unless the
	// stream's retry field says otherwise.
	sseDefaultRetry = time.Second
	// sseMaxReconnects bounds reconnections in a row that bring no event.
	sseMaxReconnects = 5
)

// FollowBatch follows a batch over Server-Sent Events (GET
// /pdf/progress/:batchId/stream), calling onProgress (when not nil) with
// every record, the last included, and returns the last record. A batch
// that fails, or is unknown, returns its record with an *Error (500 or
// 404). An error event is checked by polling the batch's progress (GET
// /pdf/progress/:batchId): the gateway sends one too when it cannot read
// the progress for a while, and the batch then goes on; it is followed by
// polling until it is over. A stream that ends before the batch does is
// opened again, as a browser's EventSource would (sending Last-Event-ID
// when the stream gave IDs), up to a bounded number of times in a row
// without news.
func (c *Client) FollowBatch(ctx context.Context, batchID string, onProgress func(Progress)) (*Progress, error) {
	path, err := batchPath(batchID, "/stream")
	if err != nil {
		return nil, err
	}
	st := &streamState{retry: sseDefaultRetry}
	var last *Progress
	for fails := 0; ; {
		p, err := c.followOnce(ctx, path, st, onProgress)
		if p != nil {
			last = p
		}
		if errors.Is(err, errErrorEvent) {
			// The stream's error record does not tell a failed batch from
			// a gateway that cannot read the progress right now (it then
			// asks to poll); the batch's own record does.
			return c.pollBatch(ctx, batchID, last, onProgress)
		}
		if err == nil && p != nil && (p.Done() || p.Status == StatusNotFound) {
			return p, p.failure()
		}
		var apiErr *Error
		if errors.As(err, &apiErr) || ctx.Err() != nil {
			// The service refused the stream (a 4xx, or a 5xx after its
			// retries), or the caller gave up.
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			return last, err
		}
		if st.gotEvent {
			fails = 0
		} else if fails++; fails > sseMaxReconnects {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return last, fmt.Errorf("docrender: progress stream of batch %s: ended %d times without news: %w", batchID, fails, err)
		}
		st.gotEvent = false
		if err := c.sleep(ctx, st.retry); err != nil {
			return last, err
		}
	}
}

// errErrorEvent is followOnce's answer to an event whose record says
// error: FollowBatch polls to learn whether the batch failed.
var errErrorEvent = errors.New("docrender: the progress stream sent an error event")

// streamPollInterval spaces the polls of a batch whose stream gave up.
const streamPollInterval = 500 * time.Millisecond

// pollBatch follows a batch by polling its progress until it is over,
// calling onProgress with each reading; last is the stream's last record,
// returned when the first poll gets none.
func (c *Client) pollBatch(ctx context.Context, batchID string, last *Progress, onProgress func(Progress)) (*Progress, error) {
	for {
		p, err := c.Progress(ctx, batchID)
		if p != nil {
			last = p
			if onProgress != nil {
				onProgress(*p)
			}
		}
		if err != nil {
			return last, err
		}
		if p.Done() {
			return p, p.failure()
		}
		if err := c.sleep(ctx, streamPollInterval); err != nil {
			return last, err
		}
	}
}

// streamState is what outlives one connection of a progress stream.
type streamState struct {
	lastID   string
	retry    time.Duration
	gotEvent bool
}

// followOnce reads one connection of the stream until its terminal event
// (returned with a nil error) or its end (the last record, and the read
// error or nil). A record saying error is not passed on: it returns the
// last record before it with errErrorEvent.
func (c *Client) followOnce(ctx context.Context, path string, st *streamState, onProgress func(Progress)) (*Progress, error) {
	h := http.Header{"Accept": {"text/event-stream"}, "Cache-Control": {"no-cache"}}
	if st.lastID != "" {
		h.Set("Last-Event-ID", st.lastID)
	}
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: path, auth: authKey, header: h})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return nil, &Error{StatusCode: resp.StatusCode, Code: "UNEXPECTED_CONTENT_TYPE",
			Message: fmt.Sprintf("progress stream answered %q, not text/event-stream", resp.Header.Get("Content-Type"))}
	}
	r := newSSEReader(resp.Body)
	var last *Progress
	for {
		ev, err := r.next()
		st.lastID = r.lastID
		if r.retry > 0 {
			st.retry = r.retry
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return last, err
		}
		var p Progress
		if err := json.Unmarshal([]byte(ev.Data), &p); err != nil || p.Status == "" {
			continue // not a progress record: an event this client does not know
		}
		st.gotEvent = true
		if p.Status == StatusError {
			return last, errErrorEvent
		}
		last = &p
		if onProgress != nil {
			onProgress(p)
		}
		if p.Done() || p.Status == StatusNotFound || ev.Name == "complete" || ev.Name == "error" {
			return last, nil
		}
	}
}

// ProgressEvent is one reading of a batch's progress on the channel of
// ProgressEvents. The last one has Done set, and Err when the batch
// failed, is unknown, or could not be followed.
type ProgressEvent struct {
	Progress Progress
	Done     bool
	Err      error
}

// ProgressEvents follows a batch as FollowBatch does and sends each
// record on the returned channel, then a last event with Done set, then
// closes it. Read it to the end or cancel ctx.
func (c *Client) ProgressEvents(ctx context.Context, batchID string) <-chan ProgressEvent {
	ch := make(chan ProgressEvent, 1)
	go func() {
		defer close(ch)
		var sent *Progress
		final, err := c.FollowBatch(ctx, batchID, func(p Progress) {
			if p.Done() || p.Status == StatusNotFound {
				return // sent last, with Done
			}
			sent = &p
			select {
			case ch <- ProgressEvent{Progress: p}:
			case <-ctx.Done():
			}
		})
		ev := ProgressEvent{Done: true, Err: err}
		switch {
		case final != nil:
			ev.Progress = *final
		case sent != nil:
			ev.Progress = *sent
		}
		select {
		case ch <- ev:
		case <-ctx.Done():
		}
	}()
	return ch
}
