package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/testenv/minio"
)

// limitedEnv are the plan limits of the stored-file tests, set through the
// DOCRENDER_PLAN_* variables as an operator would, small enough to reach:
// hobby runs out after 10 conversions or 2 hosted files, enterprise keeps
// files for 3 seconds. Pro keeps its defaults.
var limitedEnv = map[string]string{
	"DOCRENDER_PLAN_HOBBY_CONVERSIONS":    "10",
	"DOCRENDER_PLAN_HOBBY_HOSTED":         "2",
	"DOCRENDER_PLAN_ENTERPRISE_RETENTION": "3s",
	"DOCRENDER_PLAN_HOBBY_CONCURRENCY":    "100000",
	"DOCRENDER_PLAN_HOBBY_RATE":           "100000",
}

func limitedPlans() (map[string]config.Plan, error) {
	cfg, err := config.Load(func(k string) string { return limitedEnv[k] })
	return cfg.Plans, err
}

// backend is a running service over one pair of stores.
type backend struct {
	name string
	svc  *service
}

// storage holds the two services every stored-file test runs against:
// embedded (bbolt + local disk) and Redis + MinIO, both with limitedEnv.
// They start once per test binary and stop when the tests end.
var storage struct {
	once sync.Once
	list []backend
	err  error
}

func storageBackends(t *testing.T) []backend {
	t.Helper()
	storage.once.Do(func() { storage.list, storage.err = startBackends(t) })
	if storage.err != nil {
		t.Fatal(storage.err)
	}
	return storage.list
}

// eachBackend runs fn as a subtest per storage backend.
func eachBackend(t *testing.T, fn func(t *testing.T, svc *service)) {
	for _, b := range storageBackends(t) {
		t.Run(b.name, func(t *testing.T) { fn(t, b.svc) })
	}
}

func startBackends(t *testing.T) (_ []backend, err error) {
	plans, err := limitedPlans()
	if err != nil {
		return nil, err
	}
	var stops []func()
	// Stop in reverse order of start: the services before MinIO.
	cleanups = append(cleanups, func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	})
	tempDir := func() (string, error) {
		d, err := os.MkdirTemp("", "docrender-e2e-")
		if err == nil {
			stops = append(stops, func() { os.RemoveAll(d) })
		}
		return d, err
	}
	dir, err := tempDir()
	if err != nil {
		return nil, err
	}
	embedded, stop, err := launch(dir, func(cfg *configT) { cfg.Plans = plans })
	if err != nil {
		return nil, fmt.Errorf("embedded service: %w", err)
	}
	stops = append(stops, stop)

	s3, err := startMinio(t, &stops)
	if err != nil {
		return nil, err
	}
	if dir, err = tempDir(); err != nil {
		return nil, err
	}
	scaled, stop, err := launch(dir, func(cfg *configT) {
		cfg.Plans = plans
		cfg.RedisURL = "redis://127.0.0.1:6379/0"
		// Keys of its own: other services on this Redis sweep their own files only.
		cfg.QueueNamespace = "e2e" + strings.ToLower(rand.Text()[:8])
		cfg.S3Endpoint, cfg.S3AccessKey, cfg.S3SecretKey, cfg.S3Bucket = s3.Endpoint, s3.AccessKey, s3.SecretKey, s3.Bucket
	})
	if err != nil {
		return nil, fmt.Errorf("redis+minio service: %w", err)
	}
	stops = append(stops, stop)
	return []backend{{"embedded", embedded}, {"redis+minio", scaled}}, nil
}

// packageTB lends minio.Start a test whose cleanups run when the whole
// package ends rather than with the test that happened to start the server.
type packageTB struct {
	testing.TB
	stops *[]func()
}

type tbFailure struct{ msg string }

func (p packageTB) Helper()             {}
func (p packageTB) Cleanup(f func())    { *p.stops = append(*p.stops, f) }
func (p packageTB) Failed() bool        { return false }
func (p packageTB) Logf(string, ...any) {}
func (p packageTB) Fatalf(format string, args ...any) {
	panic(tbFailure{fmt.Sprintf(format, args...)})
}
func (p packageTB) Skipf(format string, args ...any) {
	panic(tbFailure{"skipped: " + fmt.Sprintf(format, args...)})
}
func (p packageTB) TempDir() string {
	d, err := os.MkdirTemp("", "docrender-minio-")
	if err != nil {
		panic(tbFailure{err.Error()})
	}
	*p.stops = append(*p.stops, func() { os.RemoveAll(d) })
	return d
}

func startMinio(t *testing.T, stops *[]func()) (cfg struct{ Endpoint, AccessKey, SecretKey, Bucket string }, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(tbFailure)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("minio: %s", f.msg)
		}
	}()
	c := minio.Start(packageTB{TB: t, stops: stops})
	cfg.Endpoint, cfg.AccessKey, cfg.SecretKey, cfg.Bucket = c.Endpoint, c.AccessKey, c.SecretKey, c.Bucket
	return cfg, nil
}

// --- helpers over the stored-file API ---

// hosted is spec 2.2.
type hosted struct {
	URL       string `json:"url"`
	PdfID     string `json:"pdfId"`
	ExpiresAt string `json:"expiresAt"`
}

// host renders html with host:true (plus opts) and returns spec 2.2.
func (c *client) host(html string, opts map[string]any) hosted {
	c.t.Helper()
	o := map[string]any{"host": true}
	for k, v := range opts {
		o[k] = v
	}
	resp := c.generate([]file{htmlFile("index.html", html)}, o)
	mustStatus(c.t, resp, http.StatusOK)
	var h hosted
	// A file rendered for the answer carries its render report (DESIGN §6).
	raw := exactKeys(c.t, resp, "url", "pdfId", "expiresAt", "report")
	if err := json.Unmarshal(raw, &h); err != nil {
		c.t.Fatal(err)
	}
	if h.URL != c.svc.URL+"/api/hosted-pdfs/"+h.PdfID || !ids.Valid(h.PdfID) {
		c.t.Fatalf("hosted result %+v: url must be {base_url}/api/hosted-pdfs/<22-char pdfId>", h)
	}
	return h
}

// exactKeys reads a JSON object and fails unless its keys are exactly want.
func exactKeys(t testing.TB, resp *http.Response, want ...string) []byte {
	t.Helper()
	b := readAll(t, resp)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %s", b)
	}
	checkKeys(t, m, want...)
	return b
}

func checkKeys(t testing.TB, m map[string]json.RawMessage, want ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("fields %v, want exactly %v", got, want)
	}
}

// anon sends a request with no credentials at all.
func anon(t testing.TB, method, url string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// bearer sends a request with the session token as Authorization: Bearer.
func (c *client) bearer(method, path string, b body) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.svc.URL+path, b.r)
	if err != nil {
		c.t.Fatal(err)
	}
	if b.ctype != "" {
		req.Header.Set("Content-Type", b.ctype)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// metadata is spec 2.3.
type metadata struct {
	ID           string `json:"id"`
	PdfID        string `json:"pdfId"`
	OriginalName string `json:"originalName"`
	FileSize     int64  `json:"fileSize"`
	URL          string `json:"url"`
	ExpiresAt    string `json:"expiresAt"`
	IsPublic     bool   `json:"isPublic"`
	Downloads    int64  `json:"downloads"`
	CreatedAt    string `json:"createdAt"`
}

var metadataKeys = []string{"id", "pdfId", "originalName", "fileSize", "url", "expiresAt", "isPublic", "downloads", "createdAt"}

// metadata reads spec 2.3 of a file the client may read.
func (c *client) metadata(id string) metadata {
	c.t.Helper()
	resp := c.withKey("GET", "/api/hosted-pdfs/"+id+"/metadata", body{})
	mustStatus(c.t, resp, http.StatusOK)
	var m metadata
	if err := json.Unmarshal(exactKeys(c.t, resp, metadataKeys...), &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// changePlan moves the client's account to plan.
func (c *client) changePlan(plan string) {
	c.t.Helper()
	resp := c.bearer("POST", "/api/billing/subscription/change-plan", jsonBody(map[string]string{"plan": plan}))
	mustStatus(c.t, resp, http.StatusOK)
	resp.Body.Close()
}

// usageData is the data of GET /api/billing/usage.
type usageData struct {
	Plan             string `json:"plan"`
	Period           string `json:"period"`
	ConversionsUsed  int64  `json:"conversionsUsed"`
	ConversionsLimit int64  `json:"conversionsLimit"`
	HostedCount      int64  `json:"hostedCount"`
	HostedLimit      int64  `json:"hostedLimit"`
}

func (c *client) billingUsage() usageData {
	c.t.Helper()
	resp := c.bearer("GET", "/api/billing/usage", body{})
	mustStatus(c.t, resp, http.StatusOK)
	var u struct {
		Success bool      `json:"success"`
		Data    usageData `json:"data"`
	}
	decode(c.t, resp, &u)
	if !u.Success {
		c.t.Fatalf("usage: success false")
	}
	return u.Data
}

func parseISO(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("%q is not ISO 8601: %v", s, err)
	}
	return tm
}

// blobGone reports whether the stored file's bytes are deleted.
func blobGone(t testing.TB, svc *service, id string) bool {
	t.Helper()
	_, err := svc.App.Server.Blobs.Stat(context.Background(), blob.FileKey(id))
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		t.Fatal(err)
	}
	return errors.Is(err, blob.ErrNotFound)
}

// get fetches a path anonymously and returns status, headers and body.
func get(t testing.TB, url string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	resp := anon(t, "GET", url, header)
	return resp.StatusCode, resp.Header, readAll(t, resp)
}

// readPaths are every path that serves a stored file's bytes.
func readPaths(id string) []string {
	return []string{"/api/hosted-pdfs/" + id, "/pdf/view/" + id, "/pdf/download/" + id}
}

// --- tests ---

const hostedHTML = `<!doctype html><p>Hosted docrender</p>`

func TestHostedPDFLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, svc *service) {
		owner, other := newClient(t, svc), newClient(t, svc)
		owner.changePlan("pro")
		before := time.Now()
		h := owner.host(hostedHTML, map[string]any{"fileName": "report"})

		// expiresAt is creation + the pro plan's 7 days.
		exp := parseISO(t, h.ExpiresAt)
		if want := before.Add(168 * time.Hour); exp.Before(want.Add(-time.Second)) || exp.After(time.Now().Add(168*time.Hour+time.Second)) {
			t.Fatalf("expiresAt %s, want about %s", exp, want)
		}
		if u := owner.billingUsage(); u.ConversionsUsed != 1 || u.HostedCount != 1 {
			t.Fatalf("usage %+v, want 1 conversion and 1 hosted", u)
		}

		// Public: anyone with the URL reads it, no credentials.
		status, hdr, pdf := get(t, h.URL, nil)
		if status != http.StatusOK || hdr.Get("Content-Type") != "application/pdf" ||
			!strings.HasPrefix(hdr.Get("Content-Disposition"), `inline; filename="report.pdf"`) {
			t.Fatalf("GET hosted: %d %v", status, hdr)
		}
		if pi := info(t, pdf); pi.Pages != 1 || !strings.Contains(text(t, pdf), "Hosted docrender") {
			t.Fatalf("hosted PDF: %+v", pi)
		}

		// Not downloads: HEAD, metadata, a range further into the file.
		resp := anon(t, "HEAD", h.URL, nil)
		if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(pdf)) {
			t.Fatalf("HEAD: %d, length %d", resp.StatusCode, resp.ContentLength)
		}
		resp.Body.Close()
		status, _, part := get(t, h.URL, map[string]string{"Range": "bytes=10-19"})
		if status != http.StatusPartialContent || string(part) != string(pdf[10:20]) {
			t.Fatalf("range: %d %q", status, part)
		}

		// The same ID under view (inline) and download (attachment).
		for path, disp := range map[string]string{"/pdf/view/": "inline", "/pdf/download/": "attachment"} {
			status, hdr, b := get(t, svc.URL+path+h.PdfID, nil)
			if status != http.StatusOK || string(b) != string(pdf) || !strings.HasPrefix(hdr.Get("Content-Disposition"), disp+`; filename="report.pdf"`) {
				t.Fatalf("%s: %d %s", path, status, hdr.Get("Content-Disposition"))
			}
		}

		m := owner.metadata(h.PdfID)
		if m.PdfID != h.PdfID || m.ID == "" || m.ID == m.PdfID || m.OriginalName != "report.pdf" || m.FileSize != int64(len(pdf)) ||
			m.URL != h.URL || m.ExpiresAt != h.ExpiresAt || !m.IsPublic || m.Downloads != 3 {
			t.Fatalf("metadata %+v, want 3 downloads of the %d-byte public report.pdf", m, len(pdf))
		}
		if created := parseISO(t, m.CreatedAt); created.Before(before.Add(-time.Second)) || created.After(time.Now()) {
			t.Fatalf("createdAt %s", m.CreatedAt)
		}

		// 20 concurrent downloads count 20.
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				resp, err := http.Get(h.URL)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || string(b) != string(pdf) {
					t.Errorf("concurrent download: %d, %d bytes", resp.StatusCode, len(b))
				}
			})
		}
		wg.Wait()
		if m := owner.metadata(h.PdfID); m.Downloads != 3+20 {
			t.Fatalf("downloads %d after 20 concurrent downloads, want %d", m.Downloads, 3+20)
		}

		// Shared metadata (spec 2.4), open to anyone.
		resp = anon(t, "GET", svc.URL+"/pdf/metadata/"+h.PdfID, nil)
		mustStatus(t, resp, http.StatusOK)
		var sm map[string]any
		if err := json.Unmarshal(exactKeys(t, resp, "userType", "expires", "fileName", "originalName", "requiresAuth", "isShared"), &sm); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"userType": "guest", "expires": h.ExpiresAt, "fileName": h.PdfID + ".pdf",
			"originalName": "report.pdf", "requiresAuth": false, "isShared": true}
		if fmt.Sprint(sm) != fmt.Sprint(want) {
			t.Fatalf("shared metadata %v, want %v", sm, want)
		}

		// Only the owner deletes; anonymous is 401, another account 403.
		expectError(t, anon(t, "DELETE", h.URL, nil), http.StatusUnauthorized, "")
		expectError(t, other.bearer("DELETE", "/api/hosted-pdfs/"+h.PdfID, body{}), http.StatusForbidden, apierr.Forbidden)
		if status, _, _ := get(t, h.URL, nil); status != http.StatusOK {
			t.Fatalf("file gone after a refused delete: %d", status)
		}
		resp = owner.bearer("DELETE", "/api/hosted-pdfs/"+h.PdfID, body{})
		mustStatus(t, resp, http.StatusOK)
		var del struct {
			Success bool   `json:"success"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(exactKeys(t, resp, "success", "message"), &del); err != nil || !del.Success || del.Message == "" {
			t.Fatalf("delete answer %+v, %v", del, err)
		}

		// Then 404 everywhere, the slot is free and the bytes are gone.
		for _, p := range append(readPaths(h.PdfID), "/api/hosted-pdfs/"+h.PdfID+"/metadata", "/pdf/metadata/"+h.PdfID) {
			expectError(t, owner.withKey("GET", p, body{}), http.StatusNotFound, apierr.NotFound)
		}
		expectError(t, owner.bearer("DELETE", "/api/hosted-pdfs/"+h.PdfID, body{}), http.StatusNotFound, apierr.NotFound)
		if u := owner.billingUsage(); u.HostedCount != 0 || u.ConversionsUsed != 1 {
			t.Fatalf("usage after delete %+v", u)
		}
		if !blobGone(t, svc, h.PdfID) {
			t.Fatal("bytes survived the delete")
		}
	})
}

func TestPrivateHostedPDF(t *testing.T) {
	eachBackend(t, func(t *testing.T, svc *service) {
		owner, other := newClient(t, svc), newClient(t, svc)
		h := owner.host(hostedHTML, map[string]any{"userType": "registered", "fileName": "secret"})
		paths := append(readPaths(h.PdfID), "/api/hosted-pdfs/"+h.PdfID+"/metadata")
		for _, p := range paths {
			// Anonymous, or with credentials that prove nothing: 401 shape B.
			for name, hdr := range map[string]map[string]string{
				"anonymous":     nil,
				"unknown key":   {"X-API-Key": "drk_" + strings.Repeat("A", 40)},
				"bad session":   {"Authorization": "Bearer not-a-session"},
				"stale cookie":  {"Cookie": "docrender_session=expired"},
				"malformed key": {"X-API-Key": "nope"},
			} {
				resp := anon(t, "GET", svc.URL+p, hdr)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("%s %s: %d, want 401", name, p, resp.StatusCode)
				}
				expectError(t, resp, http.StatusUnauthorized, "")
			}
			// Another account, by key or by session: 403.
			expectError(t, other.withKey("GET", p, body{}), http.StatusForbidden, apierr.Forbidden)
			expectError(t, other.bearer("GET", p, body{}), http.StatusForbidden, apierr.Forbidden)
			// The owner, by key, bearer session or cookie.
			for name, resp := range map[string]*http.Response{
				"key": owner.withKey("GET", p, body{}), "bearer": owner.bearer("GET", p, body{}), "cookie": owner.do("GET", p, body{}, nil),
			} {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("owner by %s on %s: %d", name, p, resp.StatusCode)
				}
				resp.Body.Close()
			}
		}
		// Only the owner's 3 x 3 retrievals of the bytes counted.
		m := owner.metadata(h.PdfID)
		if m.IsPublic || m.Downloads != 9 {
			t.Fatalf("metadata %+v, want private with 9 downloads", m)
		}
		// A shared link's page may learn that it must ask for a sign-in.
		resp := anon(t, "GET", svc.URL+"/pdf/metadata/"+h.PdfID, nil)
		mustStatus(t, resp, http.StatusOK)
		var sm map[string]any
		decode(t, resp, &sm)
		if sm["userType"] != "registered" || sm["requiresAuth"] != true || sm["isShared"] != false || sm["originalName"] != "secret.pdf" {
			t.Fatalf("shared metadata of a private file: %v", sm)
		}
		// A stale cookie does not lock anyone out of a public file.
		pub := owner.host(hostedHTML, nil)
		if status, _, _ := get(t, pub.URL, map[string]string{"Cookie": "docrender_session=expired"}); status != http.StatusOK {
			t.Fatalf("public file with a stale cookie: %d", status)
		}
	})
}

func TestHostedPDFLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, svc *service) {
		c := newClient(t, svc) // hobby: 2 hosted files
		// Five at once: exactly two get a slot; the others are refused
		// before rendering and cost no conversion.
		type result struct {
			status int
			h      hosted
			body   []byte
		}
		results := make([]result, 5)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				resp := c.generate([]file{htmlFile("index.html", hostedHTML)}, map[string]any{"host": true})
				b := readAll(t, resp)
				results[i] = result{status: resp.StatusCode, body: b}
				_ = json.Unmarshal(b, &results[i].h)
			})
		}
		wg.Wait()
		var ok []hosted
		for _, r := range results {
			switch r.status {
			case http.StatusOK:
				ok = append(ok, r.h)
			case http.StatusTooManyRequests:
				var e errorBody
				if json.Unmarshal(r.body, &e) != nil || e.Code != apierr.HostedLimit || e.StatusCode != 429 {
					t.Fatalf("429 body %s", r.body)
				}
			default:
				t.Fatalf("status %d: %s", r.status, r.body)
			}
		}
		if len(ok) != 2 {
			t.Fatalf("%d hosted under a limit of 2", len(ok))
		}
		if u := c.billingUsage(); u.ConversionsUsed != 2 || u.HostedCount != 2 || u.HostedLimit != 2 {
			t.Fatalf("usage %+v, want 2 conversions, 2 of 2 hosted", u)
		}
		// A plain (unhosted) render is not limited by hosting.
		c.generatePDF(hostedHTML, nil)

		// Deleting frees a slot.
		resp := c.bearer("DELETE", "/api/hosted-pdfs/"+ok[0].PdfID, body{})
		mustStatus(t, resp, http.StatusOK)
		resp.Body.Close()
		c.host(hostedHTML, nil)
		expectError(t, c.generate([]file{htmlFile("index.html", hostedHTML)}, map[string]any{"host": true}),
			http.StatusTooManyRequests, apierr.HostedLimit)

		// So does a plan with a higher limit, at once.
		c.changePlan("pro")
		c.host(hostedHTML, nil)
		if u := c.billingUsage(); u.HostedCount != 3 || u.HostedLimit != 500 || u.ConversionsUsed != 5 {
			t.Fatalf("usage after upgrade %+v", u)
		}
	})
}

func TestHostedPDFExpiry(t *testing.T) {
	eachBackend(t, func(t *testing.T, svc *service) {
		c := newClient(t, svc)
		c.changePlan("enterprise") // keeps files 3 s in these tests
		before := time.Now()
		h := c.host(hostedHTML, nil)
		exp := parseISO(t, h.ExpiresAt)
		if d := exp.Sub(before); d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("expiresAt %s is %s after the request, want the plan's 3 s", h.ExpiresAt, d)
		}
		if status, _, _ := get(t, h.URL, nil); status != http.StatusOK {
			t.Fatalf("before expiry: %d", status)
		}
		time.Sleep(time.Until(exp) + 100*time.Millisecond)

		// 404 at once, before any sweep.
		for _, p := range append(readPaths(h.PdfID), "/api/hosted-pdfs/"+h.PdfID+"/metadata", "/pdf/metadata/"+h.PdfID) {
			expectError(t, anon(t, "GET", svc.URL+p, nil), http.StatusNotFound, apierr.NotFound)
		}
		if u := c.billingUsage(); u.HostedCount != 0 {
			t.Fatalf("expired file still counts: %+v", u)
		}
		resp := c.bearer("GET", "/api/hosted-pdfs/list", body{})
		mustStatus(t, resp, http.StatusOK)
		var l listAnswer
		decode(t, resp, &l)
		if l.Data.Total != 0 || len(l.Data.Pdfs) != 0 {
			t.Fatalf("expired file listed: %+v", l)
		}

		// The sweeper (every minute in the service; run once here) deletes the bytes.
		if blobGone(t, svc, h.PdfID) {
			t.Fatal("bytes gone before the sweep: the test proves nothing")
		}
		if _, err := svc.App.Server.Files().Sweep(context.Background(), 10000); err != nil {
			t.Fatal(err)
		}
		if !blobGone(t, svc, h.PdfID) {
			t.Fatal("the sweep left the bytes of an expired file")
		}
	})
}

// TestHostedPDFLifecycleRule checks the S3 backstop installed at start: the
// longest plan retention (pro's 7 days here) for stored files, one day for
// temporary job files, a day past the longest retention for the files of
// a batch that never ended.
func TestHostedPDFLifecycleRule(t *testing.T) {
	svc := storageBackends(t)[1].svc
	type rules interface {
		ExpiryRule(ctx context.Context, prefix string) (int, bool, error)
	}
	r, ok := svc.App.Server.Blobs.(rules)
	if !ok {
		t.Fatalf("%T has no lifecycle rules", svc.App.Server.Blobs)
	}
	for prefix, want := range map[string]int{"files/": 7, "jobs/": 1, "batches/": 8} {
		days, ok, err := r.ExpiryRule(context.Background(), prefix)
		if err != nil || !ok || days != want {
			t.Errorf("rule for %s: %d days (installed %v, %v), want %d", prefix, days, ok, err, want)
		}
	}
}

func TestHostedPDFNotFound(t *testing.T) {
	svc := storageBackends(t)[0].svc
	c := newClient(t, svc)
	for _, id := range []string{ids.New(), "short", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "..%2F..%2Fstate.db", "%00"} {
		for _, p := range append(readPaths(id), "/api/hosted-pdfs/"+id+"/metadata", "/pdf/metadata/"+id) {
			expectError(t, c.withKey("GET", p, body{}), http.StatusNotFound, apierr.NotFound)
		}
		expectError(t, c.bearer("DELETE", "/api/hosted-pdfs/"+id, body{}), http.StatusNotFound, apierr.NotFound)
	}
}

// listAnswer is GET /api/hosted-pdfs/list.
type listAnswer struct {
	Success bool `json:"success"`
	Data    struct {
		Pdfs  []json.RawMessage `json:"pdfs"`
		Total int64             `json:"total"`
	} `json:"data"`
	Pagination struct {
		Page, Limit, Total, TotalPages int64
	} `json:"pagination"`
}

func TestHostedPDFListAndStats(t *testing.T) {
	svc := storageBackends(t)[0].svc
	c, other := newClient(t, svc), newClient(t, svc)
	c.changePlan("pro")
	var ids []string
	for i := range 3 {
		ids = append(ids, c.host(hostedHTML, map[string]any{"fileName": fmt.Sprint("doc", i)}).PdfID)
	}
	other.host(hostedHTML, nil) // someone else's: never listed
	// Not hosted: a cached document (no host) is a stored file but not listed.
	resp := c.generate([]file{htmlFile("index.html", hostedHTML)}, map[string]any{"documentId": "not-listed"})
	mustStatus(t, resp, http.StatusOK)
	resp.Body.Close()
	for range 2 {
		if status, _, _ := get(t, svc.URL+"/api/hosted-pdfs/"+ids[1], nil); status != http.StatusOK {
			t.Fatal(status)
		}
	}

	tests := []struct {
		query              string
		page, limit, pages int64
		want               []string
	}{
		{"", 1, 20, 1, []string{ids[2], ids[1], ids[0]}},
		{"?limit=2", 1, 2, 2, []string{ids[2], ids[1]}},
		{"?limit=2&page=2", 2, 2, 2, []string{ids[0]}},
		{"?page=3&limit=2", 3, 2, 2, nil},
		{"?limit=100", 1, 100, 1, []string{ids[2], ids[1], ids[0]}},
	}
	for _, tc := range tests {
		t.Run("query "+tc.query, func(t *testing.T) {
			resp := c.bearer("GET", "/api/hosted-pdfs/list"+tc.query, body{})
			mustStatus(t, resp, http.StatusOK)
			b := readAll(t, resp)
			var l listAnswer
			if err := json.Unmarshal(b, &l); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, raw := range l.Data.Pdfs {
				var m map[string]json.RawMessage
				_ = json.Unmarshal(raw, &m)
				checkKeys(t, m, metadataKeys...)
				var md metadata
				_ = json.Unmarshal(raw, &md)
				got = append(got, md.PdfID)
			}
			p := l.Pagination
			if !l.Success || l.Data.Total != 3 || p.Total != 3 || p.Page != tc.page || p.Limit != tc.limit || p.TotalPages != tc.pages ||
				strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("list %s, want pdfs %v page %d limit %d of 3 in %d pages", b, tc.want, tc.page, tc.limit, tc.pages)
			}
		})
	}
	for _, tc := range []struct{ query, field string }{
		{"?page=0", "page"}, {"?page=-1", "page"}, {"?page=abc", "page"}, {"?page=1.5", "page"},
		{"?limit=0", "limit"}, {"?limit=101", "limit"}, {"?limit=x", "limit"},
	} {
		e := expectError(t, c.bearer("GET", "/api/hosted-pdfs/list"+tc.query, body{}), http.StatusBadRequest, apierr.BadRequest)
		if e.Field != tc.field || !strings.Contains(e.Message, tc.field) {
			t.Errorf("%s: %+v, want the field %s named", tc.query, e, tc.field)
		}
	}

	// Stats (spec 2.6) of the caller's live hosted files.
	resp = c.do("GET", "/api/hosted-pdfs/stats", body{}, nil) // by cookie
	mustStatus(t, resp, http.StatusOK)
	var st struct {
		Success bool                       `json:"success"`
		Data    map[string]json.RawMessage `json:"data"`
	}
	decode(t, resp, &st)
	checkKeys(t, st.Data, "totalHosted", "totalDownloads", "totalSize")
	var size int64
	for _, id := range ids {
		size += c.metadata(id).FileSize
	}
	if got := fmt.Sprintf("%s %s %s", st.Data["totalHosted"], st.Data["totalDownloads"], st.Data["totalSize"]); !st.Success || got != fmt.Sprintf("3 2 %d", size) {
		t.Fatalf("stats %s, want 3 files, 2 downloads, %d bytes", got, size)
	}

	// A session is required: list and stats are static routes, never read as a pdfId.
	for _, p := range []string{"/api/hosted-pdfs/list", "/api/hosted-pdfs/stats"} {
		expectError(t, anon(t, "GET", svc.URL+p, nil), http.StatusUnauthorized, "")
		expectError(t, c.withKey("GET", p, body{}), http.StatusUnauthorized, "") // an API key is not a session
	}
}
