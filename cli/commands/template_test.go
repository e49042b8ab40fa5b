package commands

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// templateServer is a fake template service: it records each request
// (method, path, credentials, multipart parts by name) and answers as the
// gateway does.
type templateServer struct {
	mu   sync.Mutex
	seen []string
	// parts of the last upload: field or file name → content.
	parts map[string]string
	// status, when set, is every answer's (a refusal in shape A).
	status int
}

func (s *templateServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cred := "key"
	if r.Header.Get("X-API-Key") == "" {
		cred = r.Header.Get("Authorization")
	}
	s.seen = append(s.seen, r.Method+" "+r.URL.RequestURI()+" "+cred)
	w.Header().Set("Content-Type", "application/json")
	if s.status != 0 {
		w.WriteHeader(s.status)
		json.NewEncoder(w).Encode(map[string]any{"statusCode": s.status, "code": "FORBIDDEN",
			"message": "The plan's maximum of 5 templates is reached.", "hint": "Delete a template, or change plan."})
		return
	}
	switch {
	case r.Method == "POST":
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		s.parts = map[string]string{}
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			name := p.FormName()
			if p.FileName() != "" {
				_, dp, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
				name = "files:" + dp["filename"]
			}
			s.parts[name] = string(b)
		}
		w.WriteHeader(201)
		w.Write([]byte(`{"success":true,"data":{"id":"tplID","name":"invoice","version":2,"createdAt":"2030-01-02T03:04:05.000Z","size":2048}}`))
	case r.Method == "GET":
		w.Write([]byte(`{"success":true,"data":{"templates":[{"id":"tplID","name":"invoice\u001b[31m","latestVersion":2,"createdAt":"2030-01-02T03:04:05.000Z","updatedAt":"2030-01-03T03:04:05.000Z"}],"total":1},"pagination":{"page":1,"limit":20,"total":1,"totalPages":1}}`))
	default:
		w.Write([]byte(`{"success":true,"message":"Template deleted."}`))
	}
}

func TestTemplateCommands(t *testing.T) {
	fake := &templateServer{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx := context.Background()
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	os.MkdirAll(filepath.Join(site, "css"), 0o755)
	os.WriteFile(filepath.Join(site, "index.html"), []byte("<p>{{n}}</p>"), 0o644)
	os.WriteFile(filepath.Join(site, "css", "a.css"), []byte("p{}"), 0o644)
	logo := filepath.Join(dir, "logo.png")
	os.WriteFile(logo, []byte("PNG"), 0o644)
	sample := filepath.Join(dir, "sample.json")
	os.WriteFile(sample, []byte(`{"n":1}`), 0o644)

	code, out, errOut := runCLI(ctx, srv.URL, withKey, "template", "push", "invoice", site, logo, "--sample-data", sample)
	if code != ExitOK || out != "tplID\n" || !strings.Contains(errOut, "stored invoice version 2 (2.0 KiB)") {
		t.Fatalf("push: %d %q %q", code, out, errOut)
	}
	want := map[string]string{"name": "invoice", "sampleData": `{"n":1}`, "files:index.html": "<p>{{n}}</p>",
		"files:css/a.css": "p{}", "files:logo.png": "PNG"}
	if len(fake.parts) != len(want) {
		t.Fatalf("parts %v, want %v", fake.parts, want)
	}
	for k, v := range want {
		if fake.parts[k] != v {
			t.Errorf("part %s = %q, want %q", k, fake.parts[k], v)
		}
	}
	code, out, errOut = runCLI(ctx, srv.URL, withKey, "template", "ls", "--limit", "5")
	if code != ExitOK || !strings.Contains(out, "tplID") || !strings.Contains(out, "invoice") || strings.Contains(out, "\x1b") ||
		!strings.Contains(errOut, "1 templates; page 1 of 1") {
		t.Fatalf("ls: %d %q %q", code, out, errOut)
	}
	// The session alone will do.
	if code, _, errOut = runCLI(ctx, srv.URL, map[string]string{"DOCRENDER_SESSION": "sess"}, "template", "rm", "tplID", "other"); code != ExitOK ||
		!strings.Contains(errOut, "deleted tplID") || !strings.Contains(errOut, "deleted other") {
		t.Fatalf("rm: %d %q", code, errOut)
	}
	wantSeen := []string{"POST /api/templates key", "GET /api/templates?limit=5 key",
		"DELETE /api/templates/tplID Bearer sess", "DELETE /api/templates/other Bearer sess"}
	if !slices.Equal(fake.seen, wantSeen) {
		t.Fatalf("requests %q, want %q", fake.seen, wantSeen)
	}

	// Wrong command lines and inputs, each its exit code.
	fake.seen = nil
	for _, tc := range []struct {
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{withKey, []string{"template"}, ExitUsage, "template takes push"},
		{withKey, []string{"template", "show"}, ExitUsage, "want push, ls"},
		{withKey, []string{"template", "push", "invoice"}, ExitUsage, "NAME and its FILEs"},
		{withKey, []string{"template", "rm"}, ExitUsage, "IDs of the templates"},
		{withKey, []string{"template", "ls", "extra"}, ExitUsage, "no arguments"},
		{withKey, []string{"template", "push", "invoice", filepath.Join(dir, "missing.html")}, ExitInput, "missing.html"},
		{withKey, []string{"template", "push", "invoice", logo, "--sample-data", filepath.Join(dir, "none.json")}, ExitInput, "none.json"},
		{nil, []string{"template", "ls"}, ExitAuth, "DOCRENDER_API_KEY or DOCRENDER_SESSION"},
	} {
		code, _, errOut := runCLI(ctx, srv.URL, tc.env, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%q: %d %q, want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
	if len(fake.seen) != 0 {
		t.Fatalf("refused command lines sent %q", fake.seen)
	}
	// The plan's limit: the service's words and hint, exit code 3.
	fake.status = 403
	code, _, errOut = runCLI(ctx, srv.URL, withKey, "template", "push", "sixth", logo)
	if code != ExitAuth || !strings.Contains(errOut, "maximum of 5 templates") || !strings.Contains(errOut, "change plan") {
		t.Fatalf("over the plan: %d %q", code, errOut)
	}
	// help names the subcommands.
	if code, out, _ := runCLI(ctx, srv.URL, nil, "help", "template"); code != ExitOK || !strings.Contains(out, "--sample-data") {
		t.Fatalf("help: %d %q", code, out)
	}
}
