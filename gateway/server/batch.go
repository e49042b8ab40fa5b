package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"
	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/idempotency"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/gateway/templates"
	"github.com/docrender/docrender/pkg/batch"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/officefmt"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// Timing of the waits on a batch. Progress is read from the state store,
// so any gateway can answer for any batch.
const (
	// sseInterval is the progress stream's cadence (spec 4.5, §8): how
	// often a batch's watcher reads its progress, for its streams and its
	// waiting non-stream requests alike.
	sseInterval = 500 * time.Millisecond
	// syncMaxWait bounds a non-stream request; the batch itself goes on.
	syncMaxWait = 2 * time.Hour
	// batchStartHold bounds the start of a batch (storing its documents and
	// queuing them): a reservation still pending after it belongs to a
	// gateway that died mid-start and is given back.
	batchStartHold = 15 * time.Minute
	// sseMaxFailures ends a progress stream whose state store stopped answering.
	sseMaxFailures = 10
)

// batchAPI serves batch generation and its progress (spec 4.3-4.5, §6).
type batchAPI struct {
	s       *Server
	tracker *batch.Tracker
	// hooks checks webhook URLs against DOCRENDER_WEBHOOK_ALLOW_HOSTS at submission.
	hooks *netguard.Policy
	// watch runs one progress watcher per batch for this server's streams
	// and waiting requests (watch.go).
	watch *progressHub
	// streams counts the progress streams open on this server.
	streams atomic.Int64
	// closing is closed when the server shuts down: progress streams end.
	closing   chan struct{}
	closeOnce sync.Once
}

// newBatchAPI serves batch generation and its progress (spec 4.3-4.5).
func newBatchAPI(s *Server) *batchAPI {
	b := &batchAPI{
		s:       s,
		tracker: batch.New(s.State, s.Queue, s.files, s.Blobs, s.Log.With("component", "batch")),
		hooks:   netguard.New(s.Config.WebhookAllowHosts),
		closing: make(chan struct{}),
	}
	b.tracker.Instrument(s.Metrics)
	b.watch = newProgressHub(b.tracker.Progress, sseInterval, s.Log.With("component", "progress"))
	return b
}

// batchRequest is the body of POST /pdf/generate-batch.
type batchRequest struct {
	Documents []batchDocument `json:"documents"`
	BatchName *string         `json:"batchName"`
	Options   json.RawMessage `json:"options"`
	Stream    *bool           `json:"stream"`
	Host      *bool           `json:"host"`
	Webhook   *batch.Webhook  `json:"webhook"`
	// Template is a stored template every document fills with its data
	// (DESIGN §9).
	Template json.RawMessage `json:"template"`
}

type batchDocument struct {
	FileName    *string `json:"fileName"`
	HTMLContent *string `json:"htmlContent"`
	// URL is a page to fetch instead of htmlContent (DESIGN §6).
	URL *string `json:"url"`
	// Data fills the batch's template instead (DESIGN §9).
	Data json.RawMessage `json:"data"`
	// Office is an office file to convert instead (DESIGN §11).
	Office *batchOffice `json:"office"`
	// PDF is a PDF of the client's instead, through a tool (DESIGN §11).
	PDF *batchPDF `json:"pdf"`
	// A document's own print options (DESIGN §6) replace the batch's.
	pdfopts.PrintRaw
}

// batchOffice is a batch document's office file: its name, whose extension
// says its format, and its bytes in base64.
type batchOffice struct {
	FileName *string `json:"fileName"`
	Content  *string `json:"content"`
}

// batchPDF is a batch document's PDF: its bytes in base64, an optional
// name (for errors, and the document's name unless it has one), and the
// tool whose output the document is: {"op": "flatten" | "optimize" |
// "pages" | "metadata", with the tool's options inline}; none: the PDF as
// sent. The batch's watermark and §8 steps then apply as to a page.
type batchPDF struct {
	FileName *string        `json:"fileName"`
	Content  *string        `json:"content"`
	Tool     map[string]any `json:"tool"`
}

// batchTools are the tools a batch document may name: those that make one
// PDF of one (a split makes several; text and images make no PDF).
var batchTools = []string{pdfopts.ToolFlatten, pdfopts.ToolOptimize, pdfopts.ToolPages, pdfopts.ToolMetadata}

// maxOfficeName bounds an office file's name (it names the file in errors).
const maxOfficeName = 255

// batchPlan is a validated batch request.
type batchPlan struct {
	fileNames []string
	html      []string
	urls      []string
	// office is each office document's file (else nil).
	office []*batch.OfficeFile
	// pdfs is each PDF document's file and tool (else nil).
	pdfs []*batch.PDFFile
	// own is each document's print options where it has its own (else nil).
	own []*pdfopts.PrintOptions
	// base is the batch's options as sent, under each document's own.
	base    pdfopts.PrintRaw
	name    string
	opts    pdfopts.Options
	stream  bool
	host    bool
	webhook *batch.Webhook
	// fingerprint is the request's, when it carries an Idempotency-Key.
	fingerprint string
	// tpl is the stored template the documents fill (DESIGN §9), and data
	// each document's, canonical JSON; nil without a template.
	tpl    *templates.Template
	tplVer templates.Version
	data   [][]byte
}

// parseBatch validates the whole request, every document included, before
// anything is reserved or queued.
func (b *batchAPI) parseBatch(c echo.Context, u *account.User) (*batchPlan, error) {
	var req batchRequest
	if err := readJSON(c, &req); err != nil {
		return nil, err
	}
	if len(req.Documents) == 0 {
		return nil, apierr.Invalid("documents", "must be a non-empty array of {fileName, htmlContent}")
	}
	plan := b.s.acct.Plan(u.Plan)
	if len(req.Documents) > plan.MaxBatch {
		return nil, apierr.Invalid("documents", fmt.Sprintf("at most %d documents per batch on the %s plan (got %d)",
			plan.MaxBatch, plan.Name, len(req.Documents))).WithHint("Split the batch, or change plan.")
	}
	p := &batchPlan{stream: req.Stream != nil && *req.Stream}
	if err := p.readOptions(req.Options, b.s.Config.RenderTimeout); err != nil {
		return nil, err
	}
	check := b.s.pageURLChecker()
	pageURL := func(field, raw string) (string, error) { return check(c.Request().Context(), field, raw) }
	if len(req.Template) > 0 && string(req.Template) != "null" {
		ref, err := parseTemplateRef("template", req.Template)
		if err != nil {
			return nil, err
		}
		if p.tpl, p.tplVer, err = b.s.resolveTemplate(c.Request().Context(), u, ref); err != nil {
			return nil, err
		}
		// A template's header and footer get room, as a generate's do.
		p.opts.MakeRoom(slices.Contains(p.tplVer.Files, pdfopts.HeaderFile), slices.Contains(p.tplVer.Files, pdfopts.FooterFile))
	}
	if err := p.readDocuments(req.Documents, b.s.Config.RenderTimeout, b.s.Config.MaxUpload, pageURL); err != nil {
		return nil, err
	}
	if p.hasOffice() {
		// Nobody would take them: the batch would wait out its documents' deliveries.
		if err := b.s.officeTaken(c.Request().Context()); err != nil {
			return nil, err
		}
	}
	if err := b.s.checkRecord(p.opts.Record, u, p.opts.Stages); err != nil {
		return nil, err
	}
	for i, own := range p.own {
		if own != nil {
			if err := b.s.checkRecord(own.Record, u, own.Stages); err != nil {
				return nil, inDocument(i, err)
			}
		}
	}
	var err error
	if p.name, err = batchName(req.BatchName); err != nil {
		return nil, err
	}
	p.host = p.opts.Host || (req.Host != nil && *req.Host)
	if req.Webhook != nil {
		p.webhook = req.Webhook
	}
	if p.webhook != nil {
		if err := b.checkWebhook(c.Request().Context(), p.webhook); err != nil {
			return nil, err
		}
	}
	if idemOf(c) != nil {
		p.fingerprint = p.fingerprintOf(req.BatchName)
	}
	return p, nil
}

// fingerprintOf is what the batch asks for, as validated and normalised
// (DESIGN §4.20): the same documents and options however they were
// written ("A5" or "a5", key order, spacing) are the same request. The
// name is the one sent (the default is made of the time).
func (p *batchPlan) fingerprintOf(rawName *string) string {
	var office []*batch.OfficeFile
	if p.hasOffice() {
		office = p.office
	}
	var pdfs []*batch.PDFFile
	if slices.ContainsFunc(p.pdfs, func(f *batch.PDFFile) bool { return f != nil }) {
		pdfs = p.pdfs
	}
	b, _ := json.Marshal(struct {
		FileNames, HTML, URLs []string
		// Absent without office or PDF documents: a batch's fingerprint is
		// the one it had before they existed.
		Office       []*batch.OfficeFile `json:",omitempty"`
		PDFs         []*batch.PDFFile    `json:",omitempty"`
		Own          []*pdfopts.PrintOptions
		Page         *jobspb.Page
		Watermark    *jobspb.Watermark
		Print        pdfopts.PrintOptions
		UserType     string
		Name         *string
		Stream, Host bool
		Webhook      *batch.Webhook
		Template     string
		Data         [][]byte
	}{p.fileNames, p.html, p.urls, office, pdfs, p.own, p.opts.Page, p.opts.Watermark, p.opts.PrintOptions, p.opts.UserType,
		rawName, p.stream, p.host, p.webhook, p.templateID(), p.data})
	return fingerprint("generate-batch", string(b))
}

// hasOffice says whether a document of the batch is an office file.
func (p *batchPlan) hasOffice() bool {
	return slices.ContainsFunc(p.office, func(f *batch.OfficeFile) bool { return f != nil })
}

// templateID names the batch's template version, "" without one.
func (p *batchPlan) templateID() string {
	if p.tpl == nil {
		return ""
	}
	return fmt.Sprintf("%s@%d", p.tpl.ID, p.tplVer.Version)
}

// readDocuments validates each document: its name, its page (htmlContent,
// a url that pageURL checks, or an office file of at most maxUpload bytes)
// and its own print options.
func (p *batchPlan) readDocuments(docs []batchDocument, renderTimeout time.Duration, maxUpload int64, pageURL func(field, raw string) (string, error)) error {
	p.fileNames = make([]string, len(docs))
	p.html = make([]string, len(docs))
	p.urls = make([]string, len(docs))
	p.office = make([]*batch.OfficeFile, len(docs))
	p.pdfs = make([]*batch.PDFFile, len(docs))
	p.own = make([]*pdfopts.PrintOptions, len(docs))
	for i, d := range docs {
		field := fmt.Sprintf("documents[%d]", i)
		if d.PDF != nil {
			if p.tpl != nil {
				return apierr.Invalid(field+".pdf", "a batch with a template takes each document's data, not a PDF")
			}
			if d.URL != nil || d.HTMLContent != nil || d.Data != nil || d.Office != nil {
				return apierr.Invalid(field+".pdf", "send either pdf or htmlContent, url or office, not several")
			}
			f, err := readBatchPDF(field+".pdf", d.PDF, maxUpload)
			if err != nil {
				return err
			}
			p.pdfs[i] = f
		}
		if d.Office != nil {
			if p.tpl != nil {
				return apierr.Invalid(field+".office", "a batch with a template takes each document's data, not an office file")
			}
			if d.URL != nil || d.HTMLContent != nil || d.Data != nil {
				return apierr.Invalid(field+".office", "send either office or htmlContent or url, not several")
			}
			f, err := readOffice(field+".office", d.Office, maxUpload)
			if err != nil {
				return err
			}
			p.office[i] = f
		}
		def := ""
		switch {
		case p.tpl != nil:
			// DESIGN §9: a template's documents may go unnamed.
			def = fmt.Sprintf("%s-%d", p.tpl.Name, i+1)
		case p.office[i] != nil:
			// An office document is named after its file unless told.
			def = strings.TrimSuffix(p.office[i].Name, path.Ext(p.office[i].Name))
		case p.pdfs[i] != nil && p.pdfs[i].Name != "":
			def = strings.TrimSuffix(p.pdfs[i].Name, path.Ext(p.pdfs[i].Name))
		case d.FileName == nil || strings.TrimSpace(*d.FileName) == "":
			return apierr.Invalid(field+".fileName", "is required")
		}
		name, err := pdfopts.FileName(d.FileName, def)
		if err != nil {
			var bad *invalid.Error
			if errors.As(err, &bad) {
				return apierr.Invalid(field+".fileName", bad.Problem)
			}
			return err
		}
		p.fileNames[i] = name
		switch {
		case p.office[i] != nil, p.pdfs[i] != nil:
		case p.tpl != nil:
			if d.URL != nil || d.HTMLContent != nil {
				return apierr.Invalid(field+".data", "a batch with a template takes each document's data, not htmlContent or url")
			}
			data, err := templateData(field+".data", d.Data)
			if err != nil {
				return err
			}
			p.data = append(p.data, data)
		case d.Data != nil:
			return apierr.Invalid(field+".data", "needs the batch's template: send template with the documents' data")
		case d.URL != nil && d.HTMLContent != nil:
			return apierr.Invalid(field+".url", "send either url or htmlContent, not both")
		case d.URL != nil:
			if p.urls[i], err = pageURL(field+".url", *d.URL); err != nil {
				return err
			}
		case d.HTMLContent == nil || strings.TrimSpace(*d.HTMLContent) == "":
			return apierr.Invalid(field+".htmlContent", "is required")
		default:
			p.html[i] = *d.HTMLContent
		}
		if !d.PrintRaw.IsZero() {
			own, err := d.PrintRaw.Over(p.base).Validate(renderTimeout)
			if err != nil {
				var bad *invalid.Error
				if errors.As(err, &bad) {
					return apierr.Invalid(field+"."+bad.Field, bad.Problem).WithHint(bad.Hint)
				}
				return err
			}
			if err := pdfopts.CheckStages(own.Steps()); err != nil {
				return inDocument(i, err)
			}
			switch {
			case own.StageWatermark != nil && !proto.Equal(own.StageWatermark, p.opts.Watermark):
				// The watermark is the batch's, stamped on every document.
				return apierr.Invalid(field+".stages", "a watermark step belongs in the batch's options")
			case own.StepsOrdered && p.opts.Watermark != nil && own.StageWatermark == nil:
				// Its own steps would leave the batch's watermark out.
				return apierr.Invalid(field+".stages", "the batch has a watermark: give its step here too, with the same fields")
			}
			p.own[i] = &own
		}
	}
	return nil
}

// readOffice checks a batch document's office file (field): a name of a
// format the office engine converts, and base64 content of at most max
// bytes once decoded.
func readOffice(field string, o *batchOffice, max int64) (*batch.OfficeFile, error) {
	if o.FileName == nil || strings.TrimSpace(*o.FileName) == "" {
		return nil, apierr.Invalid(field+".fileName", "is required: the file's name, whose extension says its format (report.docx)")
	}
	name := path.Base(strings.ReplaceAll(strings.TrimSpace(*o.FileName), "\\", "/"))
	switch {
	case len(name) > maxOfficeName || strings.ContainsFunc(name, unicode.IsControl):
		return nil, apierr.Invalid(field+".fileName", fmt.Sprintf("must be a file name of at most %d bytes", maxOfficeName))
	case !officefmt.Converted(name):
		return nil, apierr.Invalid(field+".fileName", fmt.Sprintf("%q is not an office format this service converts", path.Ext(name))).
			WithHint("Name the file after its format: .docx, .xlsx, .pptx, .odt, .ods, .odp, .rtf, .txt, .csv, ...")
	}
	data, err := fileContent(field+".content", o.Content, max)
	if err != nil {
		return nil, err
	}
	return &batch.OfficeFile{Name: name, Content: data}, nil
}

// fileContent decodes a batch document's file (field): base64 of at most
// max bytes once decoded, judged before decoding.
func fileContent(field string, content *string, max int64) ([]byte, error) {
	if content == nil || *content == "" {
		return nil, apierr.Invalid(field, "is required: the file's bytes in base64")
	}
	if int64(base64.StdEncoding.DecodedLen(len(*content))) > max+2 {
		return nil, apierr.Invalid(field, fmt.Sprintf("decodes to more than %d bytes, the upload limit", max))
	}
	data, err := base64.StdEncoding.DecodeString(*content)
	if err != nil {
		return nil, apierr.Invalid(field, "must be the file's bytes in standard base64")
	}
	if int64(len(data)) > max {
		return nil, apierr.Invalid(field, fmt.Sprintf("decodes to more than %d bytes, the upload limit", max))
	}
	return data, nil
}

// readBatchPDF checks a batch document's PDF (field): its content a PDF at
// first sight (the worker reads it whole and names a corrupt one), its
// name, and its tool's options as the tool's route checks them; the
// route's own options (fileName, host, userType, stages) are the batch's.
func readBatchPDF(field string, o *batchPDF, max int64) (*batch.PDFFile, error) {
	f := &batch.PDFFile{}
	if o.FileName != nil {
		f.Name = path.Base(strings.ReplaceAll(strings.TrimSpace(*o.FileName), "\\", "/"))
		if len(f.Name) > maxOfficeName || strings.ContainsFunc(f.Name, unicode.IsControl) || f.Name == "." || f.Name == "/" {
			return nil, apierr.Invalid(field+".fileName", fmt.Sprintf("must be a file name of at most %d bytes", maxOfficeName))
		}
	}
	data, err := fileContent(field+".content", o.Content, max)
	if err != nil {
		return nil, err
	}
	if why := (&pdfSniffer{head: data[:min(len(data), sniffLen)]}).notPDF(); why != "" {
		return nil, apierr.Invalid(field+".content", why)
	}
	f.Content = data
	if o.Tool == nil {
		return f, nil
	}
	op, _ := o.Tool["op"].(string)
	if !slices.Contains(batchTools, op) {
		return nil, apierr.Invalid(field+".tool.op", "must be one of "+strings.Join(batchTools, ", ")+" (a tool whose output is one PDF)")
	}
	fields := maps.Clone(o.Tool)
	delete(fields, "op")
	for _, own := range []string{"fileName", "host", "userType", "stages"} {
		if _, ok := fields[own]; ok {
			return nil, apierr.Invalid(field+".tool."+own, "is the batch's: give it in the batch's options")
		}
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	opts, err := pdfopts.ParseToolOptions(op, string(raw))
	if err != nil {
		var bad *invalid.Error
		if errors.As(err, &bad) {
			return nil, apierr.Invalid(field+".tool."+bad.Field, bad.Problem).WithHint(bad.Hint)
		}
		return nil, err
	}
	f.Tool = opts.Job
	return f, nil
}

// inDocument names document i in a 400 that names a field.
func inDocument(i int, err error) error {
	var e *apierr.Error
	if !errors.As(err, &e) {
		return err
	}
	field, ok := e.Extra["field"].(string)
	if !ok {
		return err
	}
	own := fmt.Sprintf("documents[%d].%s", i, field)
	out := *e
	out.Message = strings.Replace(e.Message, field, own, 1)
	out.Extra = map[string]any{"field": own}
	return &out
}

// readOptions validates the options applied to every document (spec 2.1).
// A webhook may also be given inside options.
func (p *batchPlan) readOptions(raw json.RawMessage, renderTimeout time.Duration) error {
	var r pdfopts.Raw
	var extra struct {
		Webhook *batch.Webhook `json:"webhook"`
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := pdfopts.Decode(raw, &r); err != nil {
			return err
		}
		if err := pdfopts.Decode(raw, &extra); err != nil {
			return err
		}
	}
	var err error
	if p.opts, err = r.Validate("document", renderTimeout); err != nil {
		return err
	}
	if err := pdfopts.CheckStages(p.opts.Steps()); err != nil {
		return err
	}
	p.base = r.PrintRaw
	p.webhook = extra.Webhook
	return nil
}

// batchName is the ZIP's name without .zip; default batch-<unix ms> (spec 4.3).
func batchName(raw *string) (string, error) {
	if raw == nil || strings.TrimSpace(*raw) == "" {
		return batch.DefaultName(time.Now()), nil
	}
	n := strings.TrimSpace(*raw)
	n = strings.TrimSuffix(strings.TrimSuffix(n, ".zip"), ".ZIP")
	name, err := pdfopts.FileName(&n, "")
	if err != nil {
		return "", apierr.Invalid("batchName", "must be a usable file name of at most 200 characters")
	}
	return name, nil
}

func (b *batchAPI) checkWebhook(ctx context.Context, w *batch.Webhook) error {
	if strings.TrimSpace(w.URL) == "" {
		return apierr.Invalid("webhook.url", "is required")
	}
	if len(w.Secret) > 512 {
		return apierr.Invalid("webhook.secret", "at most 512 characters")
	}
	return batch.CheckWebhookURL(ctx, strings.TrimSpace(w.URL), b.hooks)
}

// generate is POST /pdf/generate-batch (spec 4.3).
func (b *batchAPI) generate(c echo.Context) error {
	u := currentUser(c)
	p, err := b.parseBatch(c, u)
	if err != nil {
		return err
	}
	// DESIGN §4.20: the same keyed request joins the batch it started.
	o, err := b.s.beginIdempotent(c, u, p.fingerprint)
	if err != nil {
		return err
	}
	var rec *batch.Record
	if o != nil {
		if rec, err = b.tracker.Get(c.Request().Context(), o.BatchID); err != nil {
			return err
		}
		c.Response().Header().Set(headerReplayed, "true")
	} else {
		if rec, err = b.start(c, u, p); err != nil {
			return err
		}
		logger(c).Info("batch started", "batch_id", rec.ID, "documents", rec.Total, "stream", p.stream, "host", p.host)
		if err := keepOutcome(c, idempotency.Outcome{Status: http.StatusOK, BatchID: rec.ID}); err != nil {
			logger(c).Warn("keeping a batch's idempotency key failed", "batch_id", rec.ID, "err", err)
		}
	}
	announceBatch(c, rec)
	if p.stream {
		return c.JSON(http.StatusOK, map[string]any{
			"batchId": rec.ID,
			"total":   rec.Total,
			"message": "Batch processing started. Track progress at " + rec.BaseURL + "/pdf/progress/" + rec.ID,
		})
	}
	return b.answerWhenDone(c, rec)
}

// start reserves the batch's conversions (and hosted slot) and hands the
// batch to package batch, which owns them from then on (batch.Submit).
func (b *batchAPI) start(c echo.Context, u *account.User, p *batchPlan) (*batch.Record, error) {
	ctx := c.Request().Context()
	now := time.Now().UTC()
	plan := b.s.acct.Plan(u.Plan)
	id := ids.New()
	rec := &batch.Record{
		ID: id, OwnerID: u.ID, RequestID: requestID(c), Name: p.name, Total: len(p.html),
		Host: p.host, UserType: p.opts.UserType, ZipID: id, BaseURL: b.s.Config.BaseURL,
		Retention: plan.Retention, CreatedAt: now, Webhook: p.webhook, Report: p.opts.Report,
	}
	if p.host {
		rec.ZipID, rec.HostedExpiresAt = ids.New(), now.Add(plan.Retention)
	}
	charge, err := b.s.acct.ReserveConversions(ctx, u, rec.ID, int64(rec.Total), batchStartHold, rec.TTL())
	if err != nil {
		return nil, err
	}
	rec.Charge = charge
	// From Submit on, the batch owns its charge (its record carries it, and
	// Submit gives it back on failure): no longer pending either way.
	defer func() {
		if err := b.s.acct.CommitConversions(context.WithoutCancel(ctx), charge); err != nil {
			b.s.Log.Warn("keeping a batch's conversions failed", "batch_id", rec.ID, "err", err)
		}
	}()
	if p.host {
		if err := b.s.files.ReserveHosted(ctx, u.ID, rec.ZipID, rec.HostedExpiresAt, plan.Hosted); err != nil {
			_ = b.s.acct.ReleaseConversions(context.WithoutCancel(ctx), charge)
			return nil, err
		}
	}
	names := batch.EntryNames(p.fileNames)
	docs := make([]batch.Document, len(names))
	for i := range docs {
		docs[i] = batch.Document{EntryName: names[i], HTML: p.html[i], URL: p.urls[i], Office: p.office[i], PDF: p.pdfs[i], Own: p.own[i]}
		if p.tpl != nil {
			docs[i].Data = p.data[i]
		}
	}
	render := &jobspb.RenderJob{Page: p.opts.Page, Watermark: p.opts.Watermark,
		Print: p.opts.Print, Info: p.opts.Info, Encryption: p.opts.Encryption, Url: p.opts.Fetch, Record: p.opts.Record,
		MaxPages: int32(plan.MaxPages), Stages: p.opts.Stages, StepsOrdered: p.opts.StepsOrdered, PagesStage: p.opts.Pages}
	if p.tpl != nil {
		render.BundlePrefix, render.Files, render.Entry = blob.TemplateFiles(p.tpl.ID, p.tplVer.Version), p.tplVer.Files, p.tplVer.Entry
		render.Template = &jobspb.TemplateFill{TemplateId: p.tpl.ID, Version: int32(p.tplVer.Version)}
	}
	if err := b.tracker.Submit(ctx, rec, docs, render, b.s.Config.RenderTimeout); err != nil {
		return nil, err
	}
	return rec, nil
}

// waitDone waits until the batch ends, following its watcher with the
// batch's progress streams, or until ctx ends or syncMaxWait passes.
func (b *batchAPI) waitDone(ctx context.Context, rec *batch.Record) (batch.Progress, error) {
	ctx, cancel := context.WithTimeout(ctx, syncMaxWait)
	defer cancel()
	return b.watch.wait(ctx, rec)
}

// announceBatch names the batch in the answer's headers (X-Batch-Id, and a
// Link to its progress), whatever the answer (DESIGN §4.20). A sync batch
// no longer sends them ahead as 103 Early Hints: Python's http.client takes
// any 1xx but 100 as the final answer. A client that must survive being cut
// off while it waits sends an Idempotency-Key and, retrying, joins the
// batch it paid for.
func announceBatch(c echo.Context, rec *batch.Record) {
	h := c.Response().Header()
	h.Set(headerBatchID, rec.ID)
	h.Set("Link", "<"+rec.BaseURL+"/pdf/progress/"+rec.ID+`>; rel="monitor"`)
}

// errShuttingDown ends the wait of a sync batch when the server shuts down.
var errShuttingDown = errors.New("gateway shutting down")

// headerBatchID names the batch of a generate-batch answer.
const headerBatchID = "X-Batch-Id"

// answerWhenDone answers a non-stream batch once it ended: the ZIP itself,
// or with host the hosted ZIP result (spec 2.7).
func (b *batchAPI) answerWhenDone(c echo.Context, rec *batch.Record) error {
	ctx := c.Request().Context()
	// A gateway shutting down answers its waiting clients instead of
	// cutting them off when its grace period ends: the batch goes on
	// without this gateway, and the answer says where to follow it.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-b.closing:
			cancel(errShuttingDown)
		case <-wctx.Done():
		}
	}()
	p, err := b.waitDone(wctx, rec)
	if errors.Is(context.Cause(wctx), errShuttingDown) && ctx.Err() == nil {
		e := apierr.Newf(http.StatusServiceUnavailable, "This gateway is restarting; the batch goes on. Follow it at %s/pdf/progress/%s.", rec.BaseURL, rec.ID)
		e.Header = map[string]string{"Retry-After": "5"}
		return e
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return apierr.Newf(http.StatusInternalServerError, "The batch did not finish in time. Track it at %s/pdf/progress/%s.", rec.BaseURL, rec.ID)
		}
		if errors.Is(err, context.Canceled) {
			// Nobody to answer; the batch goes on and its ZIP expires unread.
			logger(c).Info("client left before its batch ended", "batch_id", rec.ID)
			return nil
		}
		return err
	}
	if p.Status == batch.Error {
		return apierr.New(http.StatusInternalServerError, p.Message)
	}
	res, err := b.tracker.Result(ctx, rec)
	if err != nil || res == nil {
		return fmt.Errorf("batch %s completed without a result: %w", rec.ID, err)
	}
	if rec.Host {
		return c.JSON(http.StatusOK, map[string]any{
			"success":            true,
			"message":            fmt.Sprintf("Batch completed: %d PDFs generated and hosted.", res.DocumentsGenerated),
			"documentsGenerated": res.DocumentsGenerated,
			"downloadUrl":        res.DownloadURL,
			"zipId":              res.ZipID,
			"expiresAt":          res.ExpiresAt,
		})
	}
	// The ZIP was answered, not announced: nobody else will fetch it,
	// unless a retry with the request's Idempotency-Key does.
	if idemOf(c) == nil {
		defer b.dropZip(ctx, rec)
	}
	return b.s.sendBlob(c, blob.FileKey(rec.ZipID), rec.Name+".zip", "application/zip", "attachment")
}

// dropZip deletes a non-stream batch's ZIP once it was sent.
func (b *batchAPI) dropZip(ctx context.Context, rec *batch.Record) {
	ctx = context.WithoutCancel(ctx)
	f, err := b.s.files.Get(ctx, rec.ZipID)
	if err != nil {
		return
	}
	if err := b.s.files.Delete(ctx, f); err != nil {
		b.s.Log.Warn("deleting a sent batch ZIP failed", "batch_id", rec.ID, "err", err)
	}
}

// ownBatch returns the caller's batch, nil when it is unknown or expired,
// or a 403 for another account's.
func (b *batchAPI) ownBatch(c echo.Context) (*batch.Record, error) {
	rec, err := b.tracker.Get(c.Request().Context(), c.Param("batchId"))
	if errors.Is(err, batch.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rec.OwnerID != currentUser(c).ID {
		return nil, apierr.New(http.StatusForbidden, "This batch belongs to another account.")
	}
	return rec, nil
}

// progress is GET /pdf/progress/:batchId (spec 4.4, DESIGN 4.10).
func (b *batchAPI) progress(c echo.Context) error {
	rec, err := b.ownBatch(c)
	if err != nil {
		return err
	}
	if rec == nil {
		return c.JSON(http.StatusNotFound, batch.NotFoundProgress())
	}
	p, err := b.tracker.Progress(c.Request().Context(), rec)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}
