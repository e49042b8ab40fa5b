package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/proto/jobspb"
)

// The handlers against real fast stores (bbolt, local disk) and a fake
// queue that answers each job at once: every route's answers, in seconds,
// without NATS or Chromium. The end-to-end tests (e2e) are the
// proof of the real path; these are the quick loop.

// fakePDF is what the fake worker writes as a job's result.
const fakePDF = "%PDF-1.7 fake\n%%EOF\n"

// fakeQueue runs jobs the moment they are submitted.
type fakeQueue struct {
	blobs blob.Store

	mu        sync.Mutex
	submitted []*jobspb.Job
	published []*jobspb.Job
	cancelled []string
	// refuse, when set, is what Submit and Publish fail with.
	refuse error
	// fail, when set, is the error kind every job ends with; failField
	// the field its result blames.
	fail      jobspb.ErrorKind
	failField string
	// hold, when set, keeps every result until it is closed.
	hold chan struct{}
}

type result struct {
	res  *jobspb.Result
	hold chan struct{}
}

func (r result) Wait(ctx context.Context) (*jobspb.Result, error) {
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.res, nil
}

func (q *fakeQueue) Submit(ctx context.Context, job *jobspb.Job) (Waiter, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.refuse != nil {
		return nil, q.refuse
	}
	q.submitted = append(q.submitted, job)
	if q.fail != jobspb.ErrorKind_ERROR_KIND_NONE {
		return result{&jobspb.Result{JobId: job.Id, ErrorKind: q.fail, ErrorMessage: "The fake worker says no.", ErrorField: q.failField}, q.hold}, nil
	}
	if err := q.blobs.Put(ctx, job.OutputKey, strings.NewReader(fakePDF), int64(len(fakePDF))); err != nil {
		return nil, err
	}
	return result{&jobspb.Result{JobId: job.Id, OutputKey: job.OutputKey, Size: int64(len(fakePDF)), Pages: 2}, q.hold}, nil
}

func (q *fakeQueue) Publish(_ context.Context, job *jobspb.Job) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.refuse != nil {
		return q.refuse
	}
	q.published = append(q.published, job)
	return nil
}

func (q *fakeQueue) Admit(context.Context, string, int) error { return nil }

func (q *fakeQueue) Takers(context.Context, string) (int, error) { return 1, nil }

func (q *fakeQueue) PublishWebhook(context.Context, *jobspb.WebhookDelivery) error { return nil }

func (q *fakeQueue) CancelJob(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cancelled = append(q.cancelled, id)
	return nil
}

func (q *fakeQueue) Ready(context.Context) error { return nil }

// testGateway is a server with a signed-up user and their key.
type testGateway struct {
	t     *testing.T
	srv   *Server
	url   string
	queue *fakeQueue
	user  *account.User
	key   string
}

const adminToken = "test-admin-token-0123456789"

func newGateway(t *testing.T, env map[string]string) *testGateway {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{"DOCRENDER_AUTH_ATTEMPTS_PER_MINUTE": "100000", "DOCRENDER_ADMIN_TOKEN": adminToken,
		"DOCRENDER_PLAN_HOBBY_CONCURRENCY": "100000", "DOCRENDER_PLAN_HOBBY_RATE": "100000",
		"DOCRENDER_DATA_DIR": dir}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load(func(k string) string { return base[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstate.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	blobs, err := localblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	q := &fakeQueue{blobs: blobs}
	s := New(Deps{Config: cfg, Queue: q, State: st, Blobs: blobs, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	g := &testGateway{t: t, srv: s, url: hs.URL, queue: q}
	g.user, g.key = g.signUp("owner@example.com")
	return g
}

// signUp makes an account and an API key for it.
func (g *testGateway) signUp(email string) (*account.User, string) {
	g.t.Helper()
	ctx := context.Background()
	u, err := g.srv.Accounts().Register(ctx, email, "correct horse battery")
	if err != nil {
		g.t.Fatal(err)
	}
	_, key, err := g.srv.Accounts().CreateKey(ctx, u, "test", nil)
	if err != nil {
		g.t.Fatal(err)
	}
	return u, key
}

// req is one request: body is JSON (any), a *multipart body, or nil.
type req struct {
	method, path string
	body         any
	key          string            // X-API-Key; "-" for none
	header       map[string]string // more headers
}

// reply is a response read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

func (g *testGateway) do(r req) reply {
	g.t.Helper()
	var body io.Reader
	ctype := ""
	switch b := r.body.(type) {
	case nil:
	case *form2:
		body, ctype = bytes.NewReader(b.buf.Bytes()), b.w.FormDataContentType()
	case string:
		body, ctype = strings.NewReader(b), "application/json"
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			g.t.Fatal(err)
		}
		body, ctype = bytes.NewReader(raw), "application/json"
	}
	hr, err := http.NewRequest(r.method, g.url+r.path, body)
	if err != nil {
		g.t.Fatal(err)
	}
	if ctype != "" {
		hr.Header.Set("Content-Type", ctype)
	}
	switch r.key {
	case "":
		hr.Header.Set("X-API-Key", g.key)
	case "-":
	default:
		hr.Header.Set("X-API-Key", r.key)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	a := reply{status: resp.StatusCode, header: resp.Header}
	if a.body, err = io.ReadAll(resp.Body); err != nil {
		g.t.Fatal(err)
	}
	_ = json.Unmarshal(a.body, &a.json)
	return a
}

// form2 is a multipart body being built.
type form2 struct {
	buf bytes.Buffer
	w   *multipart.Writer
}

// multipartBody makes a body of files (name → content) under "files" and,
// if not empty, an options field.
func multipartBody(t *testing.T, options string, files ...[2]string) *form2 {
	t.Helper()
	var fields [][2]string
	if options != "" {
		fields = append(fields, [2]string{"options", options})
	}
	return multipartForm(t, fields, files...)
}

// multipartForm makes a body of form fields (name, value) and files.
func multipartForm(t *testing.T, fields [][2]string, files ...[2]string) *form2 {
	t.Helper()
	f := &form2{}
	f.w = multipart.NewWriter(&f.buf)
	for _, file := range files {
		w, err := f.w.CreateFormFile("files", file[0])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(file[1]))
	}
	for _, field := range fields {
		_ = f.w.WriteField(field[0], field[1])
	}
	if err := f.w.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

var page = [2]string{"index.html", "<h1>Hello</h1>"}

// expect checks an answer's status and, for an error, its code, message
// fragment and field.
type expect struct {
	status int
	code   string // shape A code; "" for success or shape B
	msg    string // a fragment of the message
	field  string
	header map[string]string
}

func (a reply) check(t *testing.T, want expect) {
	t.Helper()
	if a.status != want.status {
		t.Fatalf("status %d, want %d: %s", a.status, want.status, a.body)
	}
	if want.code != "" && a.json["code"] != want.code {
		t.Fatalf("code %v, want %s: %s", a.json["code"], want.code, a.body)
	}
	if want.msg != "" {
		if msg, _ := a.json["message"].(string); !strings.Contains(msg, want.msg) {
			t.Fatalf("message %q does not say %q", msg, want.msg)
		}
	}
	if want.field != "" && a.json["field"] != want.field {
		t.Fatalf("field %v, want %s: %s", a.json["field"], want.field, a.body)
	}
	if want.status == http.StatusUnauthorized && (a.json["success"] != false || a.json["statusCode"] != nil) {
		t.Fatalf("401 not in shape B: %s", a.body)
	}
	for k, v := range want.header {
		if got := a.header.Get(k); got != v {
			t.Fatalf("header %s = %q, want %q", k, got, v)
		}
	}
}

func (g *testGateway) used() float64 {
	g.t.Helper()
	a := g.do(req{method: "GET", path: "/api/billing/usage", key: "-", header: map[string]string{"Authorization": "Bearer " + g.session()}})
	a.check(g.t, expect{status: 200})
	data, _ := a.json["data"].(map[string]any)
	n, ok := data["conversionsUsed"].(float64)
	if !ok {
		g.t.Fatalf("usage answer %s", a.body)
	}
	return n
}

// session is a session token of the test user.
func (g *testGateway) session() string {
	g.t.Helper()
	tok, err := g.srv.Accounts().NewSession(context.Background(), g.user)
	if err != nil {
		g.t.Fatal(err)
	}
	return tok
}

func TestGenerateHandler(t *testing.T) {
	tests := []struct {
		name      string
		req       func(t *testing.T) req
		refuse    error
		fail      jobspb.ErrorKind
		want      expect
		wantUsed  float64
		wantRuns  int
		wantBytes string
	}{
		{name: "renders", req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page)}
		}, want: expect{status: 200, header: map[string]string{"Content-Type": "application/pdf"}}, wantUsed: 1, wantRuns: 1, wantBytes: fakePDF},
		{name: "no key", req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page), key: "-"}
		}, want: expect{status: 401, msg: "API key required"}},
		{name: "malformed key", req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page), key: "nope"}
		}, want: expect{status: 401, msg: "Malformed API key."}},
		{name: "unknown key", req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page), key: "drk_" + strings.Repeat("a", 40)}
		}, want: expect{status: 401, msg: "Invalid or expired API key."}},
		{name: "no files", req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"format":"A4"}`)}
		}, want: expect{status: 400, code: "BAD_REQUEST", msg: "No files uploaded"}},
		{name: "not multipart", req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: map[string]any{"html": "x"}}
		}, want: expect{status: 400, code: "BAD_REQUEST", msg: "Expected multipart/form-data"}},
		{name: "bad format names the field", req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"format":"B9"}`, page)}
		}, want: expect{status: 400, code: "BAD_REQUEST", field: "format"}},
		{name: "bad userType names the field", req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"userType":"admin"}`, page)}
		}, want: expect{status: 400, code: "BAD_REQUEST", field: "userType"}},
		{name: "path in a file name", req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", [2]string{"../x.html", "x"})}
		}, want: expect{status: 400, code: "BAD_REQUEST", msg: "not a plain relative path"}},
		{name: "queue full", refuse: queue.ErrQueueFull, req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page)}
		}, want: expect{status: 429, code: "RATE_LIMITED", header: map[string]string{"Retry-After": "5"}}},
		{name: "queue unavailable", refuse: fmt.Errorf("x: %w", queue.ErrUnavailable), req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page)}
		}, want: expect{status: 503, code: "SERVICE_UNAVAILABLE", header: map[string]string{"Retry-After": "2"}}},
		{name: "worker fails: conversion given back", fail: jobspb.ErrorKind_ERROR_KIND_INTERNAL, req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page)}
		}, want: expect{status: 500, code: "INTERNAL_SERVER_ERROR", msg: "The fake worker says no."}, wantRuns: 1},
		{name: "bad input is the client's", fail: jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, req: func(t *testing.T) req {
			return req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page)}
		}, want: expect{status: 400, code: "BAD_REQUEST"}, wantRuns: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, nil)
			g.queue.refuse, g.queue.fail = tc.refuse, tc.fail
			a := g.do(tc.req(t))
			a.check(t, tc.want)
			if tc.wantBytes != "" && string(a.body) != tc.wantBytes {
				t.Fatalf("body %q, want the worker's PDF", a.body)
			}
			if len(g.queue.submitted) != tc.wantRuns {
				t.Fatalf("%d jobs ran, want %d", len(g.queue.submitted), tc.wantRuns)
			}
			if got := g.used(); got != tc.wantUsed {
				t.Fatalf("conversions used %v, want %v", got, tc.wantUsed)
			}
		})
	}
}

// The month's allowance is all or nothing; a refused request runs nothing.
func TestQuota(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_PLAN_HOBBY_CONVERSIONS": "2"})
	for range 2 {
		g.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page)}).check(t, expect{status: 200})
	}
	g.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, "", page)}).
		check(t, expect{status: 429, code: "QUOTA_EXCEEDED", msg: "Monthly conversion limit of the hobby plan reached (2 of 2 used"})
	g.do(req{method: "POST", path: "/pdf/generate-batch", body: map[string]any{"documents": []map[string]string{{"fileName": "a", "htmlContent": "x"}}}}).
		check(t, expect{status: 429, code: "QUOTA_EXCEEDED"})
	if len(g.queue.submitted) != 2 || len(g.queue.published) != 0 {
		t.Fatalf("%d ran and %d queued after the limit", len(g.queue.submitted), len(g.queue.published))
	}
}

func TestMergeHandler(t *testing.T) {
	pdf := [2]string{"a.pdf", "%PDF-1.7\n..."}
	tests := []struct {
		name  string
		body  func(t *testing.T) *form2
		want  expect
		runs  int
		pages string
	}{
		{"merges", func(t *testing.T) *form2 { return multipartBody(t, "", pdf, pdf) }, expect{status: 200}, 1, "2"},
		{"no PDFs", func(t *testing.T) *form2 { return multipartBody(t, "") }, expect{status: 400, code: "BAD_REQUEST", msg: "No PDF files were provided for merging."}, 0, ""},
		{"not a PDF", func(t *testing.T) *form2 { return multipartBody(t, "", pdf, [2]string{"b.txt", "hello"}) },
			expect{status: 400, code: "BAD_REQUEST", msg: `Invalid PDF file "b.txt"`}, 0, ""},
		{"bad userType", func(t *testing.T) *form2 { return multipartBody(t, `{"userType":"x"}`, pdf) }, expect{status: 400, field: "userType"}, 0, ""},
		{"options too large", func(t *testing.T) *form2 { return multipartBody(t, strings.Repeat(" ", maxOptionsBytes+1), pdf) }, expect{status: 400, field: "options"}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, nil)
			a := g.do(req{method: "POST", path: "/pdf/merge", body: tc.body(t)})
			a.check(t, tc.want)
			if len(g.queue.submitted) != tc.runs {
				t.Fatalf("%d jobs ran, want %d", len(g.queue.submitted), tc.runs)
			}
			if tc.runs > 0 && (g.queue.submitted[0].GetMerge() == nil || len(g.queue.submitted[0].GetMerge().InputKeys) != 2) {
				t.Fatalf("merge job %v", g.queue.submitted[0])
			}
			if got := a.header.Get("X-PDF-Pages"); got != tc.pages {
				t.Fatalf("X-PDF-Pages %q, want %q", got, tc.pages)
			}
		})
	}
}

// A batch is one job per document, queued at once; its progress belongs to
// its owner.
func TestBatchHandler(t *testing.T) {
	g := newGateway(t, nil)
	docs := []map[string]string{{"fileName": "a", "htmlContent": "<p>a"}, {"fileName": "a", "htmlContent": "<p>b"}, {"fileName": "c", "htmlContent": "<p>c"}}
	a := g.do(req{method: "POST", path: "/pdf/generate-batch", body: map[string]any{"documents": docs, "stream": true, "options": map[string]any{"format": "A5"}}})
	a.check(t, expect{status: 200})
	id, _ := a.json["batchId"].(string)
	if id == "" || a.json["total"] != float64(3) {
		t.Fatalf("answer %s", a.body)
	}
	if len(g.queue.published) != 3 {
		t.Fatalf("%d documents queued, want 3", len(g.queue.published))
	}
	for i, job := range g.queue.published {
		doc := job.GetBatchDocument()
		if doc == nil || doc.BatchId != id || int(doc.Index) != i || doc.Render.Page.WidthIn < 5.8 || doc.Render.Page.WidthIn > 5.9 {
			t.Fatalf("document job %d: %v", i, job)
		}
	}
	if got := g.used(); got != 3 {
		t.Fatalf("conversions used %v, want 3", got)
	}
	p := g.do(req{method: "GET", path: "/pdf/progress/" + id})
	p.check(t, expect{status: 200})
	if p.json["status"] != "processing" || p.json["current"] != float64(0) || p.json["total"] != float64(3) {
		t.Fatalf("progress %s", p.body)
	}
	_, other := g.signUp("other@example.com")
	g.do(req{method: "GET", path: "/pdf/progress/" + id, key: other}).check(t, expect{status: 403, code: "FORBIDDEN"})
	unknown := g.do(req{method: "GET", path: "/pdf/progress/AAAAAAAAAAAAAAAAAAAAAA"})
	if unknown.status != 404 || unknown.json["status"] != "not_found" {
		t.Fatalf("unknown batch: %d %s", unknown.status, unknown.body)
	}
	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{"documents": []any{}}, "documents"},
		{map[string]any{"documents": []map[string]string{{"fileName": "", "htmlContent": "x"}}}, "documents[0].fileName"},
		{map[string]any{"documents": []map[string]string{{"fileName": "a"}}}, "documents[0].htmlContent"},
		{map[string]any{"documents": docs, "webhook": map[string]string{"url": "http://127.0.0.1/hook"}}, "webhook.url"},
	} {
		g.do(req{method: "POST", path: "/pdf/generate-batch", body: bad.body}).check(t, expect{status: 400, field: bad.field})
	}
	// The queue refuses part-way: the batch fails and what was not queued is given back.
	g.queue.refuse = queue.ErrQueueFull
	g.do(req{method: "POST", path: "/pdf/generate-batch", body: map[string]any{"documents": docs, "stream": true}}).
		check(t, expect{status: 429, code: "RATE_LIMITED", header: map[string]string{"Retry-After": "5"}})
	if got := g.used(); got != 3 {
		t.Fatalf("conversions used %v after a refused batch, want 3", got)
	}
}

// Hosted results: stored, listed, read, deleted, gone.
func TestHostedHandlers(t *testing.T) {
	g := newGateway(t, nil)
	a := g.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"host":true,"fileName":"invoice"}`, page)})
	a.check(t, expect{status: 200})
	id, _ := a.json["pdfId"].(string)
	if id == "" || !strings.HasSuffix(fmt.Sprint(a.json["url"]), "/api/hosted-pdfs/"+id) {
		t.Fatalf("hosted answer %s", a.body)
	}
	bearer := map[string]string{"Authorization": "Bearer " + g.session()}
	list := g.do(req{method: "GET", path: "/api/hosted-pdfs/list", key: "-", header: bearer})
	list.check(t, expect{status: 200})
	if !strings.Contains(string(list.body), id) {
		t.Fatalf("list %s lacks %s", list.body, id)
	}
	got := g.do(req{method: "GET", path: "/api/hosted-pdfs/" + id, key: "-"})
	got.check(t, expect{status: 200, header: map[string]string{"Content-Type": "application/pdf"}})
	if string(got.body) != fakePDF {
		t.Fatalf("hosted bytes %q", got.body)
	}
	g.do(req{method: "GET", path: "/api/hosted-pdfs/list", key: "-"}).check(t, expect{status: 401, msg: "Sign in required"})
	g.do(req{method: "DELETE", path: "/api/hosted-pdfs/" + id, key: "-", header: bearer}).check(t, expect{status: 200})
	g.do(req{method: "GET", path: "/api/hosted-pdfs/" + id, key: "-"}).check(t, expect{status: 404, code: "NOT_FOUND", msg: "PDF not found."})
	g.do(req{method: "GET", path: "/pdf/view/not-an-id", key: "-"}).check(t, expect{status: 404, code: "NOT_FOUND"})
	// The hosted limit refuses before anything runs.
	h := newGateway(t, map[string]string{"DOCRENDER_PLAN_HOBBY_HOSTED": "1"})
	h.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"host":true}`, page)}).check(t, expect{status: 200})
	h.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"host":true}`, page)}).
		check(t, expect{status: 429, code: "HOSTED_PDF_LIMIT_REACHED", msg: "maximum of 1 hosted files"})
	if len(h.queue.submitted) != 1 {
		t.Fatalf("%d jobs ran, want 1", len(h.queue.submitted))
	}
}

func TestQRCodeHandler(t *testing.T) {
	g := newGateway(t, nil)
	a := g.do(req{method: "POST", path: "/pdf/qrcode", body: map[string]any{"data": "https://example.com"}})
	a.check(t, expect{status: 200, header: map[string]string{"Content-Type": "image/png"}})
	if !bytes.HasPrefix(a.body, []byte("\x89PNG")) {
		t.Fatal("not a PNG")
	}
	g.do(req{method: "POST", path: "/pdf/qrcode", body: map[string]any{"data": "x", "size": 5}}).check(t, expect{status: 400, field: "size"})
	g.do(req{method: "POST", path: "/pdf/qrcode", body: map[string]any{}}).check(t, expect{status: 400, field: "data"})
}

// Sign up, sign in, keys made, listed and revoked: every refusal in its words.
func TestAccountHandlers(t *testing.T) {
	g := newGateway(t, nil)
	creds := map[string]string{"email": "new@example.com", "password": "correct horse battery"}
	reg := g.do(req{method: "POST", path: "/api/auth/register", body: creds, key: "-"})
	reg.check(t, expect{status: 201})
	g.do(req{method: "POST", path: "/api/auth/register", body: creds, key: "-"}).check(t, expect{status: 409, code: "CONFLICT", msg: "already exists"})
	g.do(req{method: "POST", path: "/api/auth/register", body: map[string]string{"email": "x", "password": "correct horse"}, key: "-"}).
		check(t, expect{status: 400, field: "email"})
	g.do(req{method: "POST", path: "/api/auth/login", body: map[string]string{"email": "new@example.com", "password": "wrong horse battery"}, key: "-"}).
		check(t, expect{status: 401, msg: "Invalid email or password."})
	login := g.do(req{method: "POST", path: "/api/auth/login", body: creds, key: "-"})
	login.check(t, expect{status: 200})
	tok, _ := login.json["data"].(map[string]any)["token"].(string)
	if tok == "" {
		t.Fatalf("login answer %s", login.body)
	}
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	me := g.do(req{method: "GET", path: "/api/auth/me", key: "-", header: bearer})
	me.check(t, expect{status: 200})
	made := g.do(req{method: "POST", path: "/api/keys", body: map[string]string{"name": "ci"}, key: "-", header: bearer})
	made.check(t, expect{status: 201})
	data, _ := made.json["data"].(map[string]any)
	secret, _ := data["key"].(string)
	keyID, _ := data["id"].(string)
	if secret == "" || keyID == "" {
		t.Fatalf("key answer %s", made.body)
	}
	g.do(req{method: "POST", path: "/pdf/qrcode", body: map[string]any{"data": "x"}, key: secret}).check(t, expect{status: 200})
	g.do(req{method: "DELETE", path: "/api/keys/" + keyID, key: "-", header: bearer}).check(t, expect{status: 200})
	g.do(req{method: "POST", path: "/pdf/qrcode", body: map[string]any{"data": "x"}, key: secret}).check(t, expect{status: 401, msg: "API key has been revoked."})
	g.do(req{method: "DELETE", path: "/api/keys/" + keyID, key: "-", header: bearer}).check(t, expect{status: 404, code: "NOT_FOUND", msg: "API key not found."})
	g.do(req{method: "POST", path: "/api/billing/subscription/change-plan", body: map[string]string{"plan": "platinum"}, key: "-", header: bearer}).
		check(t, expect{status: 400, field: "plan"})
}

// The operator's routes exist only with a token, and disabling an account
// shuts its keys out in their own words.
func TestAdminHandlers(t *testing.T) {
	g := newGateway(t, nil)
	admin := map[string]string{"Authorization": "Bearer " + adminToken}
	list := g.do(req{method: "GET", path: "/api/admin/accounts", key: "-", header: admin})
	list.check(t, expect{status: 200})
	g.do(req{method: "GET", path: "/api/admin/accounts", key: "-", header: map[string]string{"Authorization": "Bearer wrong"}}).
		check(t, expect{status: 401, msg: "Admin token required"})
	g.do(req{method: "PATCH", path: "/api/admin/accounts/" + g.user.ID, body: map[string]any{"disabled": true}, key: "-", header: admin}).check(t, expect{status: 200})
	g.do(req{method: "POST", path: "/pdf/qrcode", body: map[string]any{"data": "x"}}).check(t, expect{status: 401, msg: "This account is disabled."})

	off := newGateway(t, map[string]string{"DOCRENDER_ADMIN_TOKEN": ""})
	off.do(req{method: "GET", path: "/api/admin/accounts", key: "-", header: admin}).check(t, expect{status: 404, code: "NOT_FOUND"})
}

// Every route of the table is served with the auth it declares: without
// credentials an API-key route says so, a session route asks for a
// sign-in, a public one does not refuse.
func TestRouteTableAuth(t *testing.T) {
	g := newGateway(t, nil)
	for _, r := range g.srv.routeTable() {
		for _, m := range r.methods {
			path := strings.NewReplacer(":batchId", "AAAAAAAAAAAAAAAAAAAAAA", ":pdfId", "AAAAAAAAAAAAAAAAAAAAAA", ":id", "AAAAAAAAAAAAAAAAAAAAAA").Replace(r.path)
			a := g.do(req{method: m, path: path, key: "-", body: "{}"})
			msg, _ := a.json["message"].(string)
			switch r.auth {
			case apiKey, keyOrSession:
				if a.status != 401 || !strings.Contains(msg, "API key required") {
					t.Errorf("%s %s without a key: %d %s", m, r.path, a.status, a.body)
				}
			case session:
				if a.status != 401 || !strings.Contains(msg, "Sign in required") {
					t.Errorf("%s %s without a session: %d %s", m, r.path, a.status, a.body)
				}
			case admin:
				if a.status != 401 || !strings.Contains(msg, "Admin token required") {
					t.Errorf("%s %s without the token: %d %s", m, r.path, a.status, a.body)
				}
			case public:
				if strings.Contains(msg, " required") {
					t.Errorf("%s %s is public but asks for credentials: %s", m, r.path, a.body)
				}
			}
		}
	}
}
