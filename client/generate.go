package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Upload is one file of a generate or merge request. Its content is read
// afresh for each attempt, so a retried request sends it again.
type Upload struct {
	// Name is the file's path as the HTML names it: "index.html",
	// "css/site.css" (forward slashes, relative).
	Name string
	// ContentType is sent with the part; empty: guessed from the name.
	ContentType string
	// Open returns the content.
	Open func() (io.ReadCloser, error)
}

// UploadBytes is an upload of data.
func UploadBytes(name string, data []byte) Upload {
	return Upload{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

// UploadFile is an upload of the file at path, named name (the file's base
// name when empty). The file is read when the request is sent.
func UploadFile(path, name string) Upload {
	if name == "" {
		name = filepath.Base(path)
	}
	return Upload{Name: name, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
}

// UploadDir is every regular file under dir, named by its path relative to
// dir: a page (index.html) with the assets it names by relative path.
// Hidden files and folders (.git, .DS_Store) are left out.
func UploadDir(dir string) ([]Upload, error) {
	var ups []Upload
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		ups = append(ups, UploadFile(p, filepath.ToSlash(rel)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("docrender: read %s: %w", dir, err)
	}
	return ups, nil
}

// Form parts of DESIGN §8 on generate and merge.
const (
	partFiles       = "files"
	partAttachments = "attachments"
	partEInvoiceXML = "factur-x.xml"
)

// formFile is an upload under a form field.
type formFile struct {
	field string
	// defaultType is the content type when the upload has none; empty:
	// guessed from the name.
	defaultType string
	Upload
}

// asParts are files under field.
func asParts(field, defaultType string, files []Upload) []formFile {
	out := make([]formFile, len(files))
	for i, f := range files {
		out[i] = formFile{field: field, defaultType: defaultType, Upload: f}
	}
	return out
}

// multipartBody makes a re-sendable multipart body of fields and of files
// under "files".
func multipartBody(fields [][2]string, files []Upload) func() (io.ReadCloser, string, error) {
	return multipartParts(fields, asParts(partFiles, "", files))
}

// multipartParts makes a re-sendable multipart body: each call streams the
// fields and files anew through a pipe, so no file sits whole in memory.
func multipartParts(fields [][2]string, files []formFile) func() (io.ReadCloser, string, error) {
	return func() (io.ReadCloser, string, error) {
		pr, pw := io.Pipe()
		w := multipart.NewWriter(pw)
		go func() {
			pw.CloseWithError(writeMultipart(w, fields, files))
		}()
		return pr, w.FormDataContentType(), nil
	}
}

func writeMultipart(w *multipart.Writer, fields [][2]string, files []formFile) error {
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := writeFilePart(w, f); err != nil {
			return err
		}
	}
	return w.Close()
}

// recordParts are a generate's or merge's §8 uploads: each attachment
// under "attachments" (without a content type, application/octet-stream:
// the service then picks one by the name's extension, from a fixed table)
// and the e-invoice's XML as the part "factur-x.xml".
func recordParts(attachments []Upload, einvoiceXML *Upload) []formFile {
	parts := asParts(partAttachments, "application/octet-stream", attachments)
	if einvoiceXML != nil {
		x := *einvoiceXML
		if x.Name == "" {
			x.Name = partEInvoiceXML
		}
		parts = append(parts, formFile{field: partEInvoiceXML, defaultType: "text/xml", Upload: x})
	}
	return parts
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")

func writeFilePart(w *multipart.Writer, f formFile) error {
	if f.Open == nil {
		return fmt.Errorf("docrender: upload %q has no content", f.Name)
	}
	h := textproto.MIMEHeader{}
	// The full relative path goes in filename: it is how the HTML finds
	// its assets (multipart.Writer.CreateFormFile would keep it too, but
	// not the content type).
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, quoteEscaper.Replace(f.field), quoteEscaper.Replace(f.Name)))
	ct := f.ContentType
	if ct == "" {
		ct = f.defaultType
	}
	if ct == "" {
		ct = mime.TypeByExtension(path.Ext(f.Name))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	pw, err := w.CreatePart(h)
	if err != nil {
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return &UploadError{Name: f.Name, Err: err}
	}
	defer rc.Close()
	if _, err := io.Copy(pw, &uploadReader{name: f.Name, r: rc}); err != nil {
		return err
	}
	return nil
}

// UploadError is an upload's content that could not be opened or read
// (a local file missing or unreadable): the request was not sent whole,
// and the fault is on this side, not the network's or the service's.
type UploadError struct {
	// Name is the upload's name (Upload.Name).
	Name string
	// Err is the error of Open or Read, an *fs.PathError for a file.
	Err error
}

func (e *UploadError) Error() string { return fmt.Sprintf("docrender: read %s: %v", e.Name, e.Err) }

func (e *UploadError) Unwrap() error { return e.Err }

// uploadReader types the read errors of an upload's content (and only
// those: a write error is the connection's).
type uploadReader struct {
	name string
	r    io.Reader
}

func (u *uploadReader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	if err != nil && err != io.EOF {
		err = &UploadError{Name: u.name, Err: err}
	}
	return n, err
}

// Download is a file the service answers with: a PDF, a ZIP or a PNG. The
// caller reads and closes Body.
type Download struct {
	Body io.ReadCloser
	// Name is the file name the service gives it (Content-Disposition).
	Name        string
	ContentType string
	// Size is the length in bytes, -1 when not announced.
	Size int64
	// Report holds the render report's counts of a generated PDF (nil for
	// a cache hit or a file that was not just rendered).
	Report *ReportCounts
	// Pages is a merged or edited PDF's page count (0 when not announced).
	Pages int
	// Files is how many files a PDF tool's ZIP holds (split parts, page
	// images); 0 when the answer is not such a ZIP.
	Files int
	// BytesBefore and BytesAfter are an optimized PDF's sizes (0 for
	// other answers).
	BytesBefore, BytesAfter int64
	// CacheHit is true when a caching ID returned a stored PDF.
	CacheHit bool
	// BatchID names the batch of a batch ZIP.
	BatchID string
	// Replayed is true when the answer is a kept one given again for a
	// repeat of a request with an IdempotencyKey (DESIGN §4.20).
	Replayed bool
}

// Bytes reads the whole file and closes Body.
func (d *Download) Bytes() ([]byte, error) {
	defer d.Body.Close()
	return io.ReadAll(d.Body)
}

// Save writes the file to path (created or truncated) and closes Body.
func (d *Download) Save(path string) error {
	defer d.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, d.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReportCounts are the counts of the Docrender-Render-Report header.
type ReportCounts struct {
	Pages, RenderMs, Blocked, Failed, ConsoleErrors int
	// Passes is how many times the page was printed to settle its page
	// references (DESIGN §10); the header says it only when more than once,
	// so 0 means 1.
	Passes int
	// Slices is how many slices a long page was printed in at once
	// (DESIGN §10); 0: in one piece.
	Slices int
}

// parseReportHeader reads "pages=3, renderMs=412, blocked=1, failed=0, consoleErrors=0[, passes=2][, slices=5]".
func parseReportHeader(h string) *ReportCounts {
	if h == "" {
		return nil
	}
	r := &ReportCounts{}
	for _, kv := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSpace(v))
		switch k {
		case "pages":
			r.Pages = n
		case "renderMs":
			r.RenderMs = n
		case "blocked":
			r.Blocked = n
		case "failed":
			r.Failed = n
		case "consoleErrors":
			r.ConsoleErrors = n
		case "passes":
			r.Passes = n
		case "slices":
			r.Slices = n
		}
	}
	return r
}

func newDownload(resp *http.Response) *Download {
	d := &Download{Body: resp.Body, ContentType: resp.Header.Get("Content-Type"), Size: resp.ContentLength,
		Report: parseReportHeader(resp.Header.Get("Docrender-Render-Report")), CacheHit: resp.Header.Get("X-Cache") == "HIT",
		BatchID: resp.Header.Get("X-Batch-Id"), Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		d.Name = params["filename"]
	}
	d.Pages, _ = strconv.Atoi(resp.Header.Get("X-PDF-Pages"))
	d.Files, _ = strconv.Atoi(resp.Header.Get("X-Files"))
	d.BytesBefore, _ = strconv.ParseInt(resp.Header.Get("X-Bytes-Before"), 10, 64)
	d.BytesAfter, _ = strconv.ParseInt(resp.Header.Get("X-Bytes-After"), 10, 64)
	return d
}

// Report is the render report of a hosted answer (DESIGN §6).
type Report struct {
	Pages           int             `json:"pages"`
	RenderMs        int64           `json:"renderMs"`
	BlockedRequests []string        `json:"blockedRequests"`
	FailedRequests  []FailedRequest `json:"failedRequests"`
	ConsoleErrors   []string        `json:"consoleErrors"`
	// ImagesWithoutAlt are the images without alternative text (DESIGN
	// §8): by URL, or an element without one by a description starting
	// with "<"; the first 100 of ImagesWithoutAltTotal.
	ImagesWithoutAlt      []string `json:"imagesWithoutAlt"`
	ImagesWithoutAltTotal int      `json:"imagesWithoutAltTotal"`
}

// FailedRequest is a request of the page that failed.
type FailedRequest struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Hosted is a stored PDF's answer (spec 2.2).
type Hosted struct {
	URL       string    `json:"url"`
	PdfID     string    `json:"pdfId"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Report is the render's report (nil for a cache hit).
	Report *Report `json:"report,omitempty"`
}

// GenerateRequest is what POST /pdf/generate renders: files (an HTML page,
// index.html or the first .html, with its assets; header.html and
// footer.html serve as the templates) or the URL of a public page.
type GenerateRequest struct {
	Files   []Upload
	URL     string
	Options *PDFOptions
	// Attachments are files to embed in the PDF (DESIGN §8), uploaded as
	// form parts named "attachments": each Upload's Name is the embedded
	// file's name, its ContentType the file's MIME type (empty: chosen by
	// the service from the name). Only a PDF/A-3 (or no PDF/A) takes them.
	Attachments []Upload
	// EInvoiceXML is a Factur-X / ZUGFeRD invoice's XML, uploaded as the
	// form part "factur-x.xml"; Options.EInvoice names its profile.
	EInvoiceXML *Upload
	// IdempotencyKey, when set, makes a repeat of this request (a retry
	// after a lost connection or a 500, by this client or a later run)
	// answered with the first one's PDF, charged once (DESIGN §4.20): a
	// unique ID per document, 1–255 printable ASCII characters.
	IdempotencyKey string
}

func (r GenerateRequest) idempotencyKey() string { return r.IdempotencyKey }

func (r GenerateRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	return pageBody("generate", r.Files, r.URL, r.Options, r.Options == nil, host, recordParts(r.Attachments, r.EInvoiceXML))
}

// pageBody is the form of a request for a page (generate, screenshot):
// files or the URL of a page, not both; the options (none: the caller set
// none) with host; more parts after the files.
func pageBody(route string, files []Upload, url string, options any, none, host bool, more []formFile) (func() (io.ReadCloser, string, error), error) {
	if (len(files) == 0) == (url == "") {
		return nil, errors.New("docrender: " + route + " needs either files or a URL")
	}
	fields, err := optionsPart(options, none, host)
	if err != nil {
		return nil, err
	}
	if url != "" {
		fields = append(fields, [2]string{"url", url})
	}
	return multipartParts(fields, append(asParts(partFiles, "", files), more...)), nil
}

// Generate renders a PDF (POST /pdf/generate) and returns it.
func (c *Client) Generate(ctx context.Context, r GenerateRequest) (*Download, error) {
	return c.postForm(ctx, "/pdf/generate", r)
}

// GenerateHosted renders a PDF and stores it behind an expiring link
// (options host:true); it returns the link.
func (c *Client) GenerateHosted(ctx context.Context, r GenerateRequest) (*Hosted, error) {
	return c.postFormHosted(ctx, "/pdf/generate", r)
}

// form is a request of a generate or merge: multipart (GenerateRequest,
// MergeRequest) or a template render's JSON (TemplateRequest); host adds
// host:true to it.
type form interface {
	body(host bool) (func() (io.ReadCloser, string, error), error)
	idempotencyKey() string
}

// postForm sends f to path and returns the file it answers.
func (c *Client) postForm(ctx context.Context, path string, f form) (*Download, error) {
	body, err := f.body(false)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, &request{method: http.MethodPost, path: path, auth: authKey, repeat: safeToRepeat, body: body, idempotencyKey: f.idempotencyKey()})
	if err != nil {
		return nil, err
	}
	return newDownload(resp), nil
}

// postFormHosted sends f to path with host:true and returns the link.
func (c *Client) postFormHosted(ctx context.Context, path string, f form) (*Hosted, error) {
	body, err := f.body(true)
	if err != nil {
		return nil, err
	}
	var h Hosted
	return &h, c.doJSON(ctx, &request{method: http.MethodPost, path: path, auth: authKey, repeat: safeToRepeat, body: body, idempotencyKey: f.idempotencyKey()}, &h)
}

// MergeRequest is the PDFs to merge, in order, and the options.
type MergeRequest struct {
	Files   []Upload
	Options *MergeOptions
	// Attachments and EInvoiceXML: as GenerateRequest's, embedded in the
	// merged PDF.
	Attachments []Upload
	EInvoiceXML *Upload
	// IdempotencyKey: as GenerateRequest's.
	IdempotencyKey string
}

func (r MergeRequest) idempotencyKey() string { return r.IdempotencyKey }

func (r MergeRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	if len(r.Files) == 0 {
		return nil, errors.New("docrender: merge needs at least one PDF")
	}
	return filesBody(r.Files, r.Options, r.Options == nil, host, recordParts(r.Attachments, r.EInvoiceXML))
}

// filesBody is the form of a request of files to convert or edit (merge,
// office): the files under "files", the options (none: the caller set none)
// with host, more parts after the files.
func filesBody(files []Upload, options any, none, host bool, more []formFile) (func() (io.ReadCloser, string, error), error) {
	fields, err := optionsPart(options, none, host)
	if err != nil {
		return nil, err
	}
	return multipartParts(fields, append(asParts(partFiles, "", files), more...)), nil
}

// Merge merges PDFs (POST /pdf/merge) and returns the result.
func (c *Client) Merge(ctx context.Context, r MergeRequest) (*Download, error) {
	return c.postForm(ctx, "/pdf/merge", r)
}

// MergeHosted merges PDFs and stores the result behind an expiring link.
func (c *Client) MergeHosted(ctx context.Context, r MergeRequest) (*Hosted, error) {
	return c.postFormHosted(ctx, "/pdf/merge", r)
}

// QRRequest is a QR code to draw (spec 4.6, DESIGN §4.16).
type QRRequest struct {
	// Data is the text or URL to encode.
	Data string `json:"data"`
	// Size is the image's width and height in pixels, 32 to 2048 (default 200).
	Size int `json:"size,omitempty"`
	// Margin is the quiet zone in modules, 0 to 10 (default 1; use Int(0) for none).
	Margin *int `json:"margin,omitempty"`
	// ErrorCorrectionLevel is L, M (default), Q or H.
	ErrorCorrectionLevel string `json:"errorCorrectionLevel,omitempty"`
	// DarkColor and LightColor are #rgb or #rrggbb.
	DarkColor  string `json:"darkColor,omitempty"`
	LightColor string `json:"lightColor,omitempty"`
}

// Int returns a pointer to v.
func Int(v int) *int { return &v }

// QRCode draws a QR code and returns the PNG.
func (c *Client) QRCode(ctx context.Context, r QRRequest) ([]byte, error) {
	body, err := jsonBody(struct {
		QRRequest
		Format string `json:"format"`
	}{r, "png"})
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, &request{method: http.MethodPost, path: "/pdf/qrcode", auth: authKey, repeat: safeToRepeat, body: body})
	if err != nil {
		return nil, err
	}
	return newDownload(resp).Bytes()
}

// QRCodeDataURL draws a QR code and returns it as a data: URL of a PNG.
func (c *Client) QRCodeDataURL(ctx context.Context, r QRRequest) (string, error) {
	body, err := jsonBody(struct {
		QRRequest
		Format string `json:"format"`
	}{r, "dataUrl"})
	if err != nil {
		return "", err
	}
	var out struct {
		DataURL string `json:"dataUrl"`
	}
	err = c.doJSON(ctx, &request{method: http.MethodPost, path: "/pdf/qrcode", auth: authKey, repeat: safeToRepeat, body: body}, &out)
	return out.DataURL, err
}
