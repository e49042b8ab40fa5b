package e2e

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob"
)

// --- helpers shared by the batch, SSE and webhook tests ---

// progressRecord is spec 2.5.
type progressRecord struct {
	Total   int    `json:"total"`
	Current int    `json:"current"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// docHTML is a one-page document whose text identifies it.
func docHTML(marker string) string {
	return `<!doctype html><html><body><h1>` + marker + `</h1><p>batch document</p></body></html>`
}

// docs builds n documents named name-<i> carrying the text MARK-<i>.
func docs(n int, name string) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"fileName": fmt.Sprintf("%s-%d", name, i), "htmlContent": docHTML(fmt.Sprintf("MARK-%d", i))}
	}
	return out
}

func (c *client) batch(req map[string]any) *http.Response {
	c.t.Helper()
	return c.withKey("POST", "/pdf/generate-batch", jsonBody(req))
}

// baseURL is the base address the service puts into the URLs it returns.
func (s *service) baseURL() string {
	if s.App == nil {
		// A separate process (cluster tests) whose base URL is its address.
		return s.URL
	}
	return s.App.Server.Config.BaseURL
}

// local turns a URL the service returned into one on the test listener
// (the configured base address need not be where the test reaches it).
func (s *service) local(t testing.TB, u string) string {
	t.Helper()
	if !strings.HasPrefix(u, s.baseURL()) {
		t.Fatalf("URL %q does not start with the base URL %q", u, s.baseURL())
	}
	return strings.TrimPrefix(u, s.baseURL())
}

// startStream starts a stream batch and returns its ID, checking the
// exact response of spec 4.3 and DESIGN 4.11.
func (c *client) startStream(req map[string]any) string {
	c.t.Helper()
	req["stream"] = true
	resp := c.batch(req)
	mustStatus(c.t, resp, http.StatusOK)
	var raw map[string]any
	decode(c.t, resp, &raw)
	id, _ := raw["batchId"].(string)
	want := map[string]any{
		"batchId": id,
		"total":   float64(len(req["documents"].([]map[string]any))),
		"message": "Batch processing started. Track progress at " + c.svc.baseURL() + "/pdf/progress/" + id,
	}
	if id == "" || !mapsEqual(raw, want) {
		c.t.Fatalf("stream start = %v, want %v", raw, want)
	}
	return id
}

func mapsEqual(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// progress polls once.
func (c *client) progress(id string) (int, progressRecord) {
	c.t.Helper()
	resp := c.withKey("GET", "/pdf/progress/"+id, body{})
	var raw map[string]any
	decode(c.t, resp, &raw)
	if len(raw) != 4 {
		c.t.Fatalf("progress record has fields %v, want total, current, status, message", raw)
	}
	b, _ := json.Marshal(raw)
	var p progressRecord
	_ = json.Unmarshal(b, &p)
	return resp.StatusCode, p
}

var generatedRe = regexp.MustCompile(`^Generated (\d+)/(\d+) PDFs$`)

// waitBatch polls every 100 ms until the batch ends, checking on every
// poll that current never decreases, never exceeds total, and that the
// processing message says so; it returns the last record and every
// distinct current seen.
func (c *client) waitBatch(id string, total int, limit time.Duration) (progressRecord, []int) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	last := -1
	var seen []int
	for time.Now().Before(deadline) {
		status, p := c.progress(id)
		if status != http.StatusOK {
			c.t.Fatalf("progress status %d: %+v", status, p)
		}
		if p.Total != total || p.Current < last || p.Current > p.Total {
			c.t.Fatalf("progress %+v after current %d (total %d)", p, last, total)
		}
		if p.Current != last {
			seen = append(seen, p.Current)
			last = p.Current
		}
		switch p.Status {
		case "processing":
			if m := generatedRe.FindStringSubmatch(p.Message); m == nil || m[1] != fmt.Sprint(p.Current) || m[2] != fmt.Sprint(total) {
				c.t.Fatalf("processing message %q with current %d", p.Message, p.Current)
			}
		case "completed", "error":
			return p, seen
		default:
			c.t.Fatalf("status %q", p.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("batch %s not finished after %s", id, limit)
	return progressRecord{}, nil
}

// unzip opens a ZIP and returns its entries in order.
func unzip(t testing.TB, data []byte) ([]string, map[string][]byte) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("not a ZIP (%d bytes): %v", len(data), err)
	}
	var names []string
	entries := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("entry %s: %v", f.Name, err)
		}
		names = append(names, f.Name)
		entries[f.Name] = b
	}
	return names, entries
}

// checkZip checks that the ZIP holds exactly the wanted entries, in order,
// each a one-page PDF whose text carries its marker.
func checkZip(t testing.TB, data []byte, want []string, markers []string) {
	t.Helper()
	names, entries := unzip(t, data)
	if !slices.Equal(names, want) {
		t.Fatalf("ZIP entries %q, want %q", names, want)
	}
	for i, n := range names {
		if pi := info(t, entries[n]); pi.Pages != 1 {
			t.Errorf("%s: %d pages", n, pi.Pages)
		}
		if txt := text(t, entries[n]); !strings.Contains(txt, markers[i]) {
			t.Errorf("%s does not contain %q: %q", n, markers[i], txt)
		}
	}
}

func markers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("MARK-%d", i)
	}
	return out
}

func entryNames(n int, name string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d.pdf", name, i)
	}
	return out
}

// --- the four stream × host combinations (spec 4.3) ---

func TestBatchZipBinary(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	ds := []map[string]any{
		{"fileName": "invoice", "htmlContent": docHTML("MARK-0")},
		{"fileName": "report.pdf", "htmlContent": docHTML("MARK-1")},
		{"fileName": "invoice", "htmlContent": docHTML("MARK-2")},
		{"fileName": "Invoice", "htmlContent": docHTML("MARK-3")},
	}
	opts := map[string]any{"format": "A5", "watermark": map[string]any{"text": "DRAFTMARK", "rotation": 0}}
	resp := c.batch(map[string]any{"documents": ds, "batchName": "quarterly", "options": opts})
	mustStatus(t, resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != "application/zip" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="quarterly.zip"`) {
		t.Errorf("Content-Disposition %q", cd)
	}
	data := readAll(t, resp)
	checkZip(t, data, []string{"invoice.pdf", "report.pdf", "invoice (2).pdf", "Invoice (3).pdf"}, markers(4))
	// Options apply to every document: A5 is 419.53 x 595.28 pt, and the watermark.
	_, entries := unzip(t, data)
	for n, pdf := range entries {
		if pi := info(t, pdf); !near(pi.Width, 419.53, 1.5) {
			t.Errorf("%s: width %.2f, want A5", n, pi.Width)
		}
		if !strings.Contains(text(t, pdf), "DRAFTMARK") {
			t.Errorf("%s: no watermark", n)
		}
	}
	if got := c.usage(); got != 4 {
		t.Errorf("conversions used %d, want 4", got)
	}
}

func TestBatchDefaultName(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	before := time.Now().UnixMilli()
	resp := c.batch(map[string]any{"documents": docs(1, "only")})
	mustStatus(t, resp, http.StatusOK)
	after := time.Now().UnixMilli()
	m := regexp.MustCompile(`filename="batch-(\d+)\.zip"`).FindStringSubmatch(resp.Header.Get("Content-Disposition"))
	if m == nil {
		t.Fatalf("Content-Disposition %q, want batch-<timestamp>.zip", resp.Header.Get("Content-Disposition"))
	}
	var ts int64
	fmt.Sscan(m[1], &ts)
	if ts < before || ts > after {
		t.Errorf("timestamp %d not within %d..%d", ts, before, after)
	}
	checkZip(t, readAll(t, resp), entryNames(1, "only"), markers(1))
}

func TestBatchStreamWithoutHost(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	const n = 6
	id := c.startStream(map[string]any{"documents": docs(n, "doc"), "batchName": "streamed"})
	p, seen := c.waitBatch(id, n, 3*time.Minute)
	want := progressRecord{Total: n, Current: n, Status: "completed", Message: "Download URL: " + svc.baseURL() + "/pdf/download/" + id}
	if p != want {
		t.Fatalf("final %+v, want %+v", p, want)
	}
	t.Logf("current values seen while polling: %v", seen)
	// The ZIP is private to its owner (DESIGN 4.4) and kept for the retention.
	path := svc.local(t, strings.TrimPrefix(p.Message, "Download URL: "))
	resp := c.withKey("GET", path, body{})
	mustStatus(t, resp, http.StatusOK)
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, "streamed.zip") {
		t.Errorf("Content-Disposition %q", cd)
	}
	checkZip(t, readAll(t, resp), entryNames(n, "doc"), markers(n))
	anon, err := http.Get(svc.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, anon, http.StatusUnauthorized, apierr.Unauthorized)
	other := newClient(t, svc)
	expectError(t, other.withKey("GET", path, body{}), http.StatusForbidden, apierr.Forbidden)
	// Polling after completion keeps answering the same.
	if status, again := c.progress(id); status != http.StatusOK || again != want {
		t.Errorf("poll after completion: %d %+v", status, again)
	}
	if !svc.batchFilesGone(t, id, n) {
		t.Error("inputs or PDFs of the completed batch left behind")
	}
}

func TestBatchHostedWithoutStream(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	start := time.Now()
	resp := c.batch(map[string]any{"documents": docs(3, "hosted"), "batchName": "bundle", "host": true})
	mustStatus(t, resp, http.StatusOK)
	var raw map[string]any
	decode(t, resp, &raw)
	zipID, _ := raw["zipId"].(string)
	exp, err := time.Parse(time.RFC3339, fmt.Sprint(raw["expiresAt"]))
	if err != nil {
		t.Fatalf("expiresAt %v: %v", raw["expiresAt"], err)
	}
	// Hobby retention is 24 h.
	if d := exp.Sub(start); d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("expiresAt %s is %s away", exp, d)
	}
	want := map[string]any{
		"success": true, "message": "Batch completed: 3 PDFs generated and hosted.", "documentsGenerated": 3.0,
		"downloadUrl": svc.baseURL() + "/api/hosted-pdfs/" + zipID, "zipId": zipID, "expiresAt": raw["expiresAt"],
	}
	if zipID == "" || !mapsEqual(raw, want) {
		t.Fatalf("hosted result %v, want %v", raw, want)
	}
	// Public by default: anyone with the URL gets the ZIP.
	get, err := http.Get(svc.URL + svc.local(t, want["downloadUrl"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, get, http.StatusOK)
	checkZip(t, readAll(t, get), entryNames(3, "hosted"), markers(3))
}

func TestBatchStreamWithHost(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	id := c.startStream(map[string]any{"documents": docs(3, "sh"), "host": true})
	p, _ := c.waitBatch(id, 3, 3*time.Minute)
	if p.Status != "completed" || p.Current != 3 {
		t.Fatalf("final %+v", p)
	}
	// The message is a JSON string with the hosted information (spec 4.4).
	var msg map[string]any
	if err := json.Unmarshal([]byte(p.Message), &msg); err != nil {
		t.Fatalf("message %q is not JSON: %v", p.Message, err)
	}
	zipID, _ := msg["zipId"].(string)
	if len(msg) != 4 || zipID == "" || zipID == id || msg["documentsGenerated"] != 3.0 ||
		msg["downloadUrl"] != svc.baseURL()+"/api/hosted-pdfs/"+zipID {
		t.Fatalf("message %v", msg)
	}
	if _, err := time.Parse(time.RFC3339, fmt.Sprint(msg["expiresAt"])); err != nil {
		t.Errorf("expiresAt: %v", err)
	}
	get, err := http.Get(svc.URL + svc.local(t, msg["downloadUrl"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, get, http.StatusOK)
	checkZip(t, readAll(t, get), entryNames(3, "sh"), markers(3))
}

// --- progress access ---

func TestProgressNotFoundAndAccess(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	notFound := progressRecord{Status: "not_found", Message: "Batch not found. It may have expired or never existed."}
	for _, id := range []string{"AAAAAAAAAAAAAAAAAAAAAA", "not-an-id", url.PathEscape("../../etc")} {
		status, p := c.progress(id)
		if status != http.StatusNotFound || p != notFound {
			t.Errorf("%s: %d %+v, want 404 %+v", id, status, p, notFound)
		}
	}
	id := c.startStream(map[string]any{"documents": docs(1, "mine")})
	// Another account may not look; nobody without credentials either.
	expectError(t, newClient(t, svc).withKey("GET", "/pdf/progress/"+id, body{}), http.StatusForbidden, apierr.Forbidden)
	anon, err := http.Get(svc.URL + "/pdf/progress/" + id)
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, anon, http.StatusUnauthorized, apierr.Unauthorized)
	// The owner's session works as well as the key.
	resp := c.do("GET", "/pdf/progress/"+id, body{}, nil)
	mustStatus(t, resp, http.StatusOK)
	resp.Body.Close()
	c.waitBatch(id, 1, time.Minute)
}

// --- validation, plan limits, quota ---

func TestBatchBadRequests(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	one := docs(1, "x")
	tests := []struct {
		name  string
		body  body
		field string
	}{
		{"not JSON", body{strings.NewReader("documents=1"), "application/x-www-form-urlencoded"}, ""},
		{"broken JSON", body{strings.NewReader(`{"documents": [`), "application/json"}, ""},
		{"no documents", jsonBody(map[string]any{"batchName": "x"}), "documents"},
		{"empty documents", jsonBody(map[string]any{"documents": []any{}}), "documents"},
		{"documents not an array", jsonBody(map[string]any{"documents": "a"}), "documents"},
		{"missing fileName", jsonBody(map[string]any{"documents": []any{one[0], map[string]any{"htmlContent": "<p>x</p>"}}}), "documents[1].fileName"},
		{"empty fileName", jsonBody(map[string]any{"documents": []any{map[string]any{"fileName": " ", "htmlContent": "<p>x</p>"}}}), "documents[0].fileName"},
		{"missing htmlContent", jsonBody(map[string]any{"documents": []any{one[0], one[0], map[string]any{"fileName": "b"}}}), "documents[2].htmlContent"},
		{"empty htmlContent", jsonBody(map[string]any{"documents": []any{map[string]any{"fileName": "b", "htmlContent": ""}}}), "documents[0].htmlContent"},
		{"over the plan's batch size", jsonBody(map[string]any{"documents": docs(11, "many")}), "documents"},
		{"bad option", jsonBody(map[string]any{"documents": one, "options": map[string]any{"format": "B7"}}), "format"},
		{"landscape contradicts orientation", jsonBody(map[string]any{"documents": one, "options": map[string]any{"landscape": true, "orientation": "portrait"}}), "landscape"},
		{"webhook without url", jsonBody(map[string]any{"documents": one, "webhook": map[string]any{"secret": "s"}}), "webhook.url"},
		{"webhook not http", jsonBody(map[string]any{"documents": one, "webhook": map[string]any{"url": "ftp://example.com/x"}}), "webhook.url"},
		{"webhook to loopback", jsonBody(map[string]any{"documents": one, "webhook": map[string]any{"url": "http://127.0.0.1:9/hook"}}), "webhook.url"},
		{"webhook to metadata address", jsonBody(map[string]any{"documents": one, "webhook": map[string]any{"url": "http://169.254.169.254/latest"}}), "webhook.url"},
		{"webhook inside options", jsonBody(map[string]any{"documents": one, "options": map[string]any{"webhook": map[string]any{"url": "http://[::1]/x"}}}), "webhook.url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := expectError(t, c.withKey("POST", "/pdf/generate-batch", tc.body), http.StatusBadRequest, apierr.BadRequest)
			if tc.field != "" && e.Field != tc.field {
				t.Errorf("field %q, want %q (%s)", e.Field, tc.field, e.Message)
			}
			if tc.field != "" && !strings.Contains(e.Message, tc.field) {
				t.Errorf("message %q does not name %s", e.Message, tc.field)
			}
		})
	}
	if got := c.usage(); got != 0 {
		t.Errorf("refused batches used %d conversions", got)
	}
	// The plan's maximum itself is accepted.
	resp := c.batch(map[string]any{"documents": docs(10, "max"), "stream": true})
	mustStatus(t, resp, http.StatusOK)
	var started struct{ BatchID string }
	decode(t, resp, &started)
	c.waitBatch(started.BatchID, 10, 3*time.Minute)

	anon, err := http.Post(svc.URL+"/pdf/generate-batch", "application/json", strings.NewReader(`{"documents":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, anon, http.StatusUnauthorized, apierr.Unauthorized)
}

func TestBatchQuotaIsAllOrNothing(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	u, err := svc.App.Server.Accounts().User(t.Context(), c.UserID)
	if err != nil {
		t.Fatal(err)
	}
	// Hobby: 100 a month. Leave 3.
	if _, err := svc.App.Server.Accounts().ReserveConversions(t.Context(), u, "test-fill", 97, time.Hour, time.Hour); err != nil {
		t.Fatal(err)
	}
	e := expectError(t, c.batch(map[string]any{"documents": docs(4, "q")}), http.StatusTooManyRequests, apierr.QuotaExceeded)
	if !strings.Contains(e.Message, "4") {
		t.Errorf("message %q does not say what the batch needed", e.Message)
	}
	if got := c.usage(); got != 97 {
		t.Fatalf("a refused batch changed usage to %d", got)
	}
	id := c.startStream(map[string]any{"documents": docs(3, "q")})
	if got := c.usage(); got != 100 {
		t.Errorf("usage %d after reserving the batch, want 100", got)
	}
	expectError(t, c.batch(map[string]any{"documents": docs(1, "q")}), http.StatusTooManyRequests, apierr.QuotaExceeded)
	if p, _ := c.waitBatch(id, 3, 3*time.Minute); p.Status != "completed" {
		t.Fatalf("final %+v", p)
	}
	if got := c.usage(); got != 100 {
		t.Errorf("usage %d after the batch, want 100", got)
	}
}

// --- failure ---

// stuckHTML never finishes loading: its render times out.
const stuckHTML = `<script>while(true){}</script><p>never</p>`

var (
	slowOnce sync.Once
	slowSvc  *service
	slowErr  error
)

// slowService is a service with a 5 s render timeout (a stuck document
// fails soon, an ordinary one still renders on a busy machine) that may
// deliver webhooks to loopback receivers.
func slowService(t testing.TB) *service {
	t.Helper()
	slowOnce.Do(func() {
		dir, err := os.MkdirTemp("", "docrender-e2e-slow-")
		if err != nil {
			slowErr = err
			return
		}
		var stop func()
		slowSvc, stop, slowErr = launch(dir, func(cfg *configT) {
			cfg.RenderTimeout = 5 * time.Second
			cfg.WebhookAllowHosts = []string{"127.0.0.1"}
		})
		if slowErr == nil {
			cleanups = append(cleanups, stop, func() { os.RemoveAll(dir) })
		}
	})
	if slowErr != nil {
		t.Fatal(slowErr)
	}
	return slowSvc
}

// eventually waits until f holds.
func eventually(t testing.TB, limit time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var failedDocRe = regexp.MustCompile(`^Document "stuck-([01])\.pdf" \(documents\[([01])\]\) failed: Rendering exceeded the time limit of 5s\.$`)

// TestBatchFailingDocumentStream: both render slots take a stuck document
// (the two first); the first to time out fails the batch naming it; the
// six documents behind them are skipped, and every conversion comes back.
// The progress stream ends with one error event carrying the same record.
func TestBatchFailingDocumentStream(t *testing.T) {
	svc := slowService(t)
	c := newClient(t, svc)
	ds := append([]map[string]any{
		{"fileName": "stuck-0", "htmlContent": stuckHTML},
		{"fileName": "stuck-1", "htmlContent": stuckHTML},
	}, docs(6, "fine")...)
	id := c.startStream(map[string]any{"documents": ds, "host": true})
	if got := svc.hostedCount(t, c); got != 1 {
		t.Errorf("hosted slots taken while running: %d, want 1", got)
	}
	events := readEvents(t, c.openStream(id))
	last := events[len(events)-1]
	m := failedDocRe.FindStringSubmatch(last.Data.Message)
	if last.Name != "error" || last.Data.Status != "error" || last.Data.Total != len(ds) || m == nil || m[1] != m[2] {
		t.Fatalf("last event %s %+v, want error naming a stuck document", last.Name, last.Data)
	}
	for _, e := range events[:len(events)-1] {
		if e.Name != "progress" {
			t.Fatalf("event %s before the error", e.Name)
		}
	}
	status, p := c.progress(id)
	if status != http.StatusOK || p != last.Data {
		t.Errorf("poll after the error: %d %+v, want %+v", status, p, last.Data)
	}
	eventually(t, 30*time.Second, "conversions given back", func() bool { return c.usage() == 0 })
	eventually(t, 10*time.Second, "hosted slot freed", func() bool { return svc.hostedCount(t, c) == 0 })
	eventually(t, 10*time.Second, "batch files removed", func() bool { return svc.batchFilesGone(t, id, len(ds)) })
}

// TestBatchFailingDocumentSync: a non-stream batch answers 500 naming the
// document; the failed one is given back (the other counts if it was
// rendered before the failure, and is given back if it was skipped or
// failed too, as on a very busy machine).
func TestBatchFailingDocumentSync(t *testing.T) {
	svc := slowService(t)
	c := newClient(t, svc)
	ds := []map[string]any{
		{"fileName": "fine", "htmlContent": docHTML("MARK-0")},
		{"fileName": "stuck-1", "htmlContent": stuckHTML},
	}
	e := expectError(t, c.batch(map[string]any{"documents": ds}), http.StatusInternalServerError, apierr.Internal)
	if !failedDocRe.MatchString(e.Message) {
		t.Errorf("message %q", e.Message)
	}
	eventually(t, 20*time.Second, "the failed conversion given back", func() bool { return c.usage() <= 1 })
	// The service goes on: the next batch completes.
	resp := c.batch(map[string]any{"documents": docs(2, "after")})
	mustStatus(t, resp, http.StatusOK)
	checkZip(t, readAll(t, resp), entryNames(2, "after"), markers(2))
}

func (s *service) hostedCount(t testing.TB, c *client) int64 {
	t.Helper()
	n, err := s.App.Server.Files().HostedCount(t.Context(), c.UserID)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// batchFilesGone reports whether a batch's inputs and PDFs were removed.
func (s *service) batchFilesGone(t testing.TB, id string, n int) bool {
	t.Helper()
	for i := range n {
		for _, key := range []string{blob.BatchInputs(id, i) + "index.html", blob.BatchPDF(id, i)} {
			if _, err := s.App.Server.Blobs.Stat(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
				return false
			}
		}
	}
	return true
}
