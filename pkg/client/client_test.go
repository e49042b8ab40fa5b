package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	doc, _ := json.Marshal(BatchDocument{FileName: "a", HTMLContent: "<p>", PrintOptions: &PrintOptions{PageRanges: "1"}})
	if string(doc) != `{"fileName":"a","htmlContent":"\u003cp\u003e","pageRanges":"1"}` {
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
// nothing of this repository's other packages).
func TestStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) != 1 || deps[0] != "github.com/docrender/docrender/pkg/client" {
		t.Errorf("non-standard dependencies: %v", deps)
	}
}
