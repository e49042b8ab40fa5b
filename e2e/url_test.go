package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// site is a loopback web server that remembers what each request carried.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newSite(t *testing.T) *site {
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			// To an address the egress rules refuse.
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
			return
		}
		if r.URL.Path != "/invoice" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Clone())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>Invoice</title><h1>Invoice from the web</h1>`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) last(t *testing.T) http.Header {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		t.Fatal("the page was never fetched")
	}
	return s.seen[len(s.seen)-1]
}

// urlGenerate posts a generate with the url field (and files, when given).
func (c *client) urlGenerate(url string, options any, files ...file) *http.Response {
	c.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("url", url)
	if options != nil {
		b, _ := json.Marshal(options)
		_ = w.WriteField("options", string(b))
	}
	for _, f := range files {
		p, _ := w.CreateFormFile("files", f.Name)
		p.Write(f.Data)
	}
	w.Close()
	return c.withKey("POST", "/pdf/generate", body{&buf, w.FormDataContentType()})
}

// TestRenderURL (DESIGN §6): a page on an allow-listed loopback server is
// fetched with the client's headers, cookies and user agent, and none of
// them reach the next job's requests; a private address not allow-listed is
// refused like any other SSRF; url and files together are a 400.
func TestRenderURL(t *testing.T) {
	pages := newSite(t)
	allowed := strings.TrimPrefix(pages.URL, "http://")
	svc := startService(t, func(cfg *configT) {
		cfg.RenderAllowHosts = []string{allowed}
		cfg.Workers = 1 // every job on the same tab
	})
	c := newClient(t, svc)

	opts := map[string]any{
		"extraHttpHeaders": map[string]string{"X-Token": "abc123"},
		"cookies":          []map[string]string{{"name": "sid", "value": "s3cret"}},
		"userAgent":        "docrender-e2e/1.0",
	}
	resp := c.urlGenerate(pages.URL+"/invoice", opts)
	mustStatus(t, resp, http.StatusOK)
	if got := text(t, readAll(t, resp)); !strings.Contains(got, "Invoice from the web") {
		t.Fatalf("the PDF of the URL says %q", got)
	}
	h := pages.last(t)
	if h.Get("X-Token") != "abc123" || !strings.Contains(h.Get("Cookie"), "sid=s3cret") || h.Get("User-Agent") != "docrender-e2e/1.0" {
		t.Fatalf("the page's server saw %v", h)
	}

	// The next job on the same tab carries none of it.
	mustStatus(t, c.urlGenerate(pages.URL+"/invoice", nil), http.StatusOK)
	h = pages.last(t)
	if h.Get("X-Token") != "" || h.Get("Cookie") != "" || h.Get("User-Agent") == "docrender-e2e/1.0" || h.Get("User-Agent") == "" {
		t.Fatalf("the next job's request carried the last job's overrides: %v", h)
	}

	for _, tc := range []struct {
		name string
		resp *http.Response
	}{
		{"not allow-listed", c.urlGenerate("http://127.0.0.1:8/invoice", nil)},
		{"metadata address", c.urlGenerate("http://169.254.169.254/latest/meta-data/", nil)},
		{"both url and files", c.urlGenerate(pages.URL+"/invoice", nil, htmlFile("index.html", "<p>x</p>"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if e := expectError(t, tc.resp, http.StatusBadRequest, "BAD_REQUEST"); e.Field != "url" {
				t.Fatalf("field %q, want url", e.Field)
			}
		})
	}

	// The gateway checks the address it is given; the worker's egress checks
	// every request, redirects included.
	secret := newSite(t) // loopback, not allow-listed
	e := expectError(t, c.urlGenerate(pages.URL+"/redirect?to="+secret.URL+"/invoice", nil), http.StatusBadRequest, "BAD_REQUEST")
	if !strings.Contains(e.Message, secret.URL) || !strings.Contains(e.Message, "egress rules") {
		t.Errorf("a redirect to a refused address: %q", e.Message)
	}
	secret.mu.Lock()
	if len(secret.seen) != 0 {
		t.Errorf("the refused address was reached %d times", len(secret.seen))
	}
	secret.mu.Unlock()
	mustStatus(t, c.urlGenerate(pages.URL+"/invoice", nil), http.StatusOK) // and the service goes on

	// A batch document may be a URL too.
	id := c.startStream(map[string]any{"documents": []map[string]any{
		{"fileName": "web", "url": pages.URL + "/invoice"},
		{"fileName": "local", "htmlContent": "<p>local page</p>"},
	}})
	p, _ := c.waitBatch(id, 2, time.Minute)
	if p.Status != "completed" {
		t.Fatalf("batch with a URL document: %+v", p)
	}
	if got := c.usage(); got != 5 {
		t.Errorf("conversions used %d, want 5", got)
	}
}
