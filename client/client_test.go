package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// Each route gets the credential it takes, and only that one.
func TestCredentialsPerRoute(t *testing.T) {
	type seen struct{ method, path, key, auth string }
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("X-API-Key"), r.Header.Get("Authorization")})
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/auth/"):
			w.Write([]byte(`{"success":true,"data":{"user":{"id":"u1"},"token":"newsession"}}`))
		case r.URL.Path == "/pdf/qrcode":
			w.Write([]byte("png"))
		default:
			w.Write([]byte(`{"success":true,"data":{}}`))
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, WithAdminToken("admintok"))
	ctx := context.Background()
	steps := []struct {
		call       func() error
		want       seen
		keyOnly    bool
		sessionful bool
	}{
		{func() error { _, err := c.QRCode(ctx, QRRequest{Data: "x"}); return err }, seen{"POST", "/pdf/qrcode", "drk_test", ""}, true, false},
		{func() error { _, err := c.Usage(ctx); return err }, seen{"GET", "/api/billing/usage", "", "Bearer sess"}, false, true},
		{func() error { _, err := c.ListHosted(ctx, 2, 5); return err }, seen{"GET", "/api/hosted-pdfs/list", "", "Bearer sess"}, false, true},
		{func() error { return c.DeleteHosted(ctx, "a/b") }, seen{"DELETE", "/api/hosted-pdfs/a/b", "", "Bearer sess"}, false, true},
		{func() error { _, err := c.FileMetadata(ctx, "f1"); return err }, seen{"GET", "/api/hosted-pdfs/f1/metadata", "drk_test", ""}, false, false},
		{func() error { _, err := c.AdminListAccounts(ctx, 1, 10, "a@b.c"); return err }, seen{"GET", "/api/admin/accounts", "", "Bearer admintok"}, false, false},
		{func() error { _, err := c.Login(ctx, "a@b.c", "pw"); return err }, seen{"POST", "/api/auth/login", "", ""}, false, false},
		// Login replaced the session.
		{func() error { _, err := c.Me(ctx); return err }, seen{"GET", "/api/auth/me", "", "Bearer newsession"}, false, true},
	}
	for i, s := range steps {
		if err := s.call(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got[i] != s.want {
			t.Errorf("step %d: sent %+v, want %+v", i, got[i], s.want)
		}
	}
}

func TestOptionsJSON(t *testing.T) {
	o := &PDFOptions{
		Format: "Letter", Margin: &Margin{Top: "2cm"},
		PrintOptions: PrintOptions{
			WaitDelay: Duration(1500 * time.Millisecond), Scale: 0.5, PrintBackground: Bool(false),
			Metadata:   &Metadata{Title: "T", Keywords: []string{"a", "b"}},
			Encryption: &Encryption{OwnerPassword: "o", AllowCopying: Bool(false)},
			Cookies:    []Cookie{{Name: "n", Value: "v"}},
		},
		Extra: map[string]any{"futureOption": true, "format": "A5"},
	}
	b, err := withHost(o, true)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(b, &got)
	want := `{"cookies":[{"name":"n","value":"v"}],"encryption":{"allowCopying":false,"ownerPassword":"o"},"format":"A5","futureOption":true,` +
		`"host":true,"margin":{"top":"2cm"},"metadata":{"keywords":["a","b"],"title":"T"},"printBackground":false,"scale":0.5,"waitDelay":"1.5s"}`
	if again, _ := json.Marshal(got); string(again) != want {
		t.Errorf("options\n got %s\nwant %s", again, want)
	}

	// A batch document's own print options sit beside its fields.
	doc, _ := json.Marshal(BatchDocument{FileName: "a", HTMLContent: "<p>", PrintOptions: &PrintOptions{PageRanges: "1", TOC: true}})
	if string(doc) != `{"fileName":"a","htmlContent":"\u003cp\u003e","pageRanges":"1","toc":true}` {
		t.Errorf("document %s", doc)
	}
	body, _ := BatchRequest{Documents: []BatchDocument{{FileName: "a", URL: "https://e.x"}}, Host: true}.body(true, true)
	rc, _, _ := body()
	var br map[string]any
	json.NewDecoder(rc).Decode(&br)
	if br["stream"] != true || br["host"] != true || br["batchName"] != nil {
		t.Errorf("batch body %v", br)
	}
}

func TestUploadDirKeepsRelativePaths(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "img"), 0o755)
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<img src=img/a.png>"), 0o644)
	os.WriteFile(filepath.Join(dir, "img", "a.png"), []byte("PNG"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref"), 0o644)
	os.WriteFile(filepath.Join(dir, ".DS_Store"), []byte("x"), 0o644)
	ups, err := UploadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{answers: []answer{{200, ""}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	d, err := newTestClient(t, srv.URL).Generate(context.Background(), GenerateRequest{Files: ups})
	if err != nil {
		t.Fatal(err)
	}
	d.Body.Close()
	if got := parts(t, s.ctypes[0], s.bodies[0]); got != "img/a.png=PNG;index.html=<img src=img/a.png>;" {
		t.Errorf("sent %q", got)
	}
	if !strings.Contains(s.bodies[0], "Content-Type: image/png") {
		t.Errorf("no image/png part type in %q", s.bodies[0])
	}
}

func TestDownloadHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="r_sum_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf`)
		w.Header().Set("Docrender-Render-Report", "pages=3, renderMs=412, blocked=1, failed=0, consoleErrors=2")
		w.Header().Set("X-Cache", "HIT")
		w.Write([]byte("%PDF"))
	}))
	defer srv.Close()
	d, err := newTestClient(t, srv.URL).Generate(context.Background(), GenerateRequest{URL: "https://example.com"})
	if err != nil {
		t.Fatal(err)
	}
	d.Body.Close()
	if d.Name != "résumé.pdf" || !d.CacheHit || *d.Report != (ReportCounts{Pages: 3, RenderMs: 412, Blocked: 1, ConsoleErrors: 2}) {
		t.Errorf("download %+v report %+v", d, d.Report)
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, u := range []string{"localhost:8080", "ftp://x", "http://"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	c, err := New("")
	if err != nil || c.BaseURL() != DefaultBaseURL {
		t.Errorf("default base %v %v", c, err)
	}
}

// The client is for any Go program: the standard library only (and
// nothing of this repository's other packages), in a module of its own that
// requires nothing, so go get of it brings nothing of the server (DESIGN §1).
func TestStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) != 1 || deps[0] != "github.com/docrender/docrender/client" {
		t.Errorf("non-standard dependencies: %v", deps)
	}
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	if mods := strings.Fields(string(out)); len(mods) != 1 || mods[0] != "github.com/docrender/docrender/client" {
		t.Errorf("the client's module requires more than itself: %v", mods)
	}
}

// A redirect to another host never carries the API key or the session.
func TestRedirectDropsCredentials(t *testing.T) {
	type seen struct{ key, auth, cookie string }
	var other []seen
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other = append(other, seen{r.Header.Get("X-API-Key"), r.Header.Get("Authorization"), r.Header.Get("Cookie")})
		w.Write([]byte(`{"success":true,"data":{}}`))
	}))
	defer elsewhere.Close()
	var same []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("moved") != "" {
			same = append(same, seen{r.Header.Get("X-API-Key"), r.Header.Get("Authorization"), r.Header.Get("Cookie")})
			w.Write([]byte(`{"success":true,"data":{}}`))
			return
		}
		to := elsewhere.URL + r.URL.Path
		if strings.HasSuffix(r.URL.Path, "/same") {
			to = r.URL.Path + "?moved=1"
		}
		http.Redirect(w, r, to, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()

	var callerChecks int
	callers := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { callerChecks++; return nil }}
	for _, tt := range []struct {
		name string
		opts []Option
	}{
		{"default HTTP client", nil},
		{"caller's HTTP client", []Option{WithHTTPClient(callers)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			other, same = nil, nil
			c := newTestClient(t, srv.URL, tt.opts...)
			ctx := context.Background()
			d, err := c.DownloadFile(ctx, "f1") // X-API-Key
			if err != nil {
				t.Fatal(err)
			}
			d.Body.Close()
			if _, err := c.Usage(ctx); err != nil { // Authorization
				t.Fatal(err)
			}
			if _, err := c.Usage(ctx); err != nil {
				t.Fatal(err)
			}
			if len(other) != 3 {
				t.Fatalf("the other host saw %d requests", len(other))
			}
			for i, s := range other {
				if s != (seen{}) {
					t.Errorf("request %d reached the other host with credentials %+v", i, s)
				}
			}
			// Within the same host the credentials stay.
			d, err = c.DownloadFile(ctx, "same")
			if err != nil {
				t.Fatal(err)
			}
			d.Body.Close()
			if len(same) != 1 || same[0].key != "drk_test" {
				t.Errorf("same-host redirect sent %+v", same)
			}
		})
	}
	if callerChecks != 4 || callers.CheckRedirect == nil {
		t.Errorf("the caller's CheckRedirect ran %d times, want 4", callerChecks)
	}
}

func TestStripCredentialsOnRedirect(t *testing.T) {
	for _, tt := range []struct {
		from, to string
		strip    bool
	}{
		{"https://a.example/x", "https://a.example/y", false},
		{"https://a.example/x", "https://A.EXAMPLE/y", false},
		{"http://a.example/x", "https://a.example/y", false},
		{"https://a.example/x", "http://a.example/y", true},
		{"https://a.example/x", "https://a.example:8443/y", true},
		{"https://a.example/x", "https://b.a.example/y", true},
		{"https://a.example/x", "https://evil.example/y", true},
	} {
		first, _ := http.NewRequest("GET", tt.from, nil)
		req, _ := http.NewRequest("GET", tt.to, nil)
		req.Header.Set("X-API-Key", "drk_k")
		req.Header.Set("Authorization", "Bearer s")
		req.Header.Set("Cookie", "session=s")
		req.Header.Set("Accept", "text/event-stream")
		if err := StripCredentialsOnRedirect(req, []*http.Request{first}); err != nil {
			t.Fatal(err)
		}
		kept := req.Header.Get("X-API-Key") != "" || req.Header.Get("Authorization") != "" || req.Header.Get("Cookie") != ""
		gone := req.Header.Get("X-API-Key") == "" && req.Header.Get("Authorization") == "" && req.Header.Get("Cookie") == ""
		if tt.strip && !gone || !tt.strip && !kept || req.Header.Get("Accept") == "" {
			t.Errorf("%s -> %s: headers %v, want stripped=%v", tt.from, tt.to, req.Header, tt.strip)
		}
	}
	req, _ := http.NewRequest("GET", "https://a.example/", nil)
	if err := StripCredentialsOnRedirect(req, make([]*http.Request, 10)); err == nil {
		t.Error("no limit on redirects")
	}
}

// A local file that fails to read while it is uploaded is an
// *UploadError naming it, not a network failure.
func TestUploadReadErrorIsTyped(t *testing.T) {
	s := &scripted{answers: []answer{{200, ""}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<h1>x</h1>"), 0o644)
	for _, tt := range []struct {
		name string
		up   Upload
	}{
		{"missing file", UploadFile(filepath.Join(dir, "gone.png"), "img/gone.png")},
		{"a folder is no file", UploadFile(dir, "img/gone.png")},
		{"read fails midway", Upload{Name: "img/gone.png", Open: func() (io.ReadCloser, error) {
			return io.NopCloser(io.MultiReader(strings.NewReader("PNG"), iotest.ErrReader(errors.New("disk on fire")))), nil
		}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newTestClient(t, srv.URL).Generate(context.Background(), GenerateRequest{
				Files: []Upload{UploadFile(filepath.Join(dir, "index.html"), ""), tt.up}})
			var ue *UploadError
			if !errors.As(err, &ue) || ue.Name != "img/gone.png" {
				t.Fatalf("err %v (%T), want an *UploadError for img/gone.png", err, err)
			}
			var ue2 *url.Error
			if errors.As(err, &ue2) {
				t.Errorf("err %v is still wrapped in a *url.Error", err)
			}
		})
	}
}

// A batch document's office file travels as {fileName, content} with its
// bytes in base64, instead of htmlContent (DESIGN §11).
func TestBatchDocumentOffice(t *testing.T) {
	doc, err := json.Marshal(BatchDocument{Office: &OfficeFile{FileName: "report.docx", Content: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"office":{"fileName":"report.docx","content":"eA=="}}`; string(doc) != want {
		t.Fatalf("document %s, want %s", doc, want)
	}
}

// A batch document's PDF travels as {fileName, content, tool} with its
// bytes in base64 and the tool's options inline (DESIGN §11).
func TestBatchDocumentPDF(t *testing.T) {
	doc, err := json.Marshal(BatchDocument{PDF: &PDFFile{Content: []byte("x"), Tool: NewTool("optimize", map[string]any{"imageQuality": 60})}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"pdf":{"content":"eA==","tool":{"imageQuality":60,"op":"optimize"}}}`; string(doc) != want {
		t.Fatalf("document %s, want %s", doc, want)
	}
}
