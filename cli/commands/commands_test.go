package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// runCLI runs the command line against the service at url with env (and
// DOCRENDER_URL set), and returns its exit code and output.
func runCLI(ctx context.Context, url string, env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	e := Env{
		Getenv: func(k string) string {
			if k == "DOCRENDER_URL" {
				return url
			}
			return env[k]
		},
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
	}
	code = Run(ctx, args, e)
	return code, out.String(), errOut.String()
}

var withKey = map[string]string{"DOCRENDER_API_KEY": "drk_" + strings.Repeat("k", 40), "DOCRENDER_SESSION": "sess"}

// login answers a sign-in with token and a new key with key.
func loginServer(t *testing.T, token, key string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/auth/login":
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{
				"token": token, "user": map[string]any{"id": "u1", "email": "me@example.com\x1b]0;owned\x07", "plan": "hobby"}}})
		case "/api/keys":
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{"id": "k1", "key": key}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// login prints credentials for eval only in the form the gateway issues
// them, single-quoted: an answer carrying shell never reaches the shell.
func TestLoginPrintsOnlyWellFormedCredentials(t *testing.T) {
	good := "Qm9vdHN0cmFwLXNlc3Npb24tdG9rZW4tZm9yLXRlc3Q"
	goodKey := "drk_" + strings.Repeat("aB3", 13) + "x"
	for _, tt := range []struct {
		name, token, key string
		code             int
		stdout           string
	}{
		{"well formed", good, goodKey, ExitOK,
			"export DOCRENDER_SESSION='" + good + "'\nexport DOCRENDER_API_KEY='" + goodKey + "'\n"},
		{"token with a command", "x; touch pwned", goodKey, ExitServer, ""},
		{"token with a substitution", "$(touch pwned)", goodKey, ExitServer, ""},
		{"token with a quote", "abcdefghijklmnopqrst'; touch pwned; '", goodKey, ExitServer, ""},
		{"token with a newline", good + "\ntouch pwned", goodKey, ExitServer, ""},
		{"key with a command", good, "drk_`touch pwned`", ExitServer, "export DOCRENDER_SESSION='" + good + "'\n"},
		{"key too long", good, goodKey + "x", ExitServer, "export DOCRENDER_SESSION='" + good + "'\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := loginServer(t, tt.token, tt.key)
			code, out, errOut := runCLI(context.Background(), srv.URL, map[string]string{"DOCRENDER_PASSWORD": "pw"},
				"login", "me@example.com", "--key", "laptop")
			if code != tt.code || out != tt.stdout {
				t.Fatalf("exit %d, stdout %q (stderr %q); want %d, %q", code, out, errOut, tt.code, tt.stdout)
			}
			if strings.ContainsAny(errOut, "\x1b\x07") {
				t.Errorf("stderr carries the answer's escapes: %q", errOut)
			}
			if code != ExitOK {
				return
			}
			// What a shell makes of it.
			if _, err := exec.LookPath("sh"); err != nil {
				return
			}
			got, err := exec.Command("sh", "-c", out+`printf '%s %s' "$DOCRENDER_SESSION" "$DOCRENDER_API_KEY"`).Output()
			if err != nil || string(got) != good+" "+goodKey {
				t.Errorf("sh read %q, %v", got, err)
			}
		})
	}
}

// hasControl reports a control character other than tab and newline.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r != '\t' && r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0))
	})
}

// Text of the service's answers reaches the terminal without control
// characters: no escape sequence can repaint or retitle it.
func TestServerTextIsMadeSafe(t *testing.T) {
	const evil = "\x1b]0;owned\x07\x1b[2J\r\u009b31m"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/pdf/generate":
			w.WriteHeader(http.StatusUnprocessableEntity)
			json.NewEncoder(w).Encode(map[string]any{"statusCode": 422, "code": "RENDER_CHECK_FAILED" + evil,
				"message": "checks failed" + evil, "hint": "fix" + evil, "field": "f" + evil,
				"details":       []map[string]any{{"kind": "resource" + evil, "url": "http://x/" + evil, "message": "404" + evil}, {"kind": "console", "message": "boom" + evil}},
				"receivedFiles": []map[string]any{{"name": "a.txt" + evil, "mimetype": "text/plain" + evil}}})
		case "/api/hosted-pdfs/list":
			json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"pdfs": []map[string]any{{"pdfId": "id" + evil, "originalName": "name" + evil}},
				"total": 1}, "pagination": map[string]any{"page": 1, "totalPages": 1}})
		case "/api/billing/usage":
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{"plan": "hobby" + evil, "period": "2030-01" + evil}})
		default:
			json.NewEncoder(w).Encode(map[string]any{"url": "http://x/" + evil, "pdfId": "p" + evil, "expiresAt": time.Now()})
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	page := filepath.Join(dir, "index.html")
	os.WriteFile(page, []byte("<h1>x</h1>"), 0o644)
	for _, args := range [][]string{
		{"render", page, "-o", filepath.Join(dir, "out.pdf")},
		{"files", "ls"},
		{"usage"},
		{"merge", page, "--host"},
	} {
		code, out, errOut := runCLI(context.Background(), srv.URL, withKey, args...)
		if hasControl(out) || hasControl(errOut) {
			t.Errorf("%v (exit %d) printed control characters:\nstdout %q\nstderr %q", args, code, out, errOut)
		}
		if !strings.Contains(out+errOut, `\x1b]0;owned\x07`) {
			t.Errorf("%v: the text should show, escaped:\nstdout %q\nstderr %q", args, out, errOut)
		}
	}
}

// Ctrl-C while waiting to retry is an interrupt (130), not the answer
// that was to be retried.
func TestInterruptDuringRetryWait(t *testing.T) {
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var mu sync.Mutex
			requests := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				requests++
				mu.Unlock()
				w.Header().Set("Retry-After", "20")
				w.WriteHeader(status)
				w.Write([]byte(`{"statusCode":503,"code":"SERVICE_UNAVAILABLE","message":"busy"}`))
			}))
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			start := time.Now()
			code, _, errOut := runCLI(ctx, srv.URL, withKey, "qr", "x", "-o", filepath.Join(t.TempDir(), "qr.png"))
			if code != ExitInterrupted || !strings.Contains(errOut, "interrupted") {
				t.Errorf("exit %d, stderr %q; want %d", code, errOut, ExitInterrupted)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("took %v: the wait did not end with the interrupt", el)
			}
			mu.Lock()
			defer mu.Unlock()
			if requests != 1 {
				t.Errorf("%d requests: the interrupt came during the wait", requests)
			}
		})
	}
}

// A local file that cannot be read while it is uploaded is bad input
// (2), named, not a service out of reach (6).
func TestUploadReadErrorIsBadInput(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc/self/mem, a file whose reads fail")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := r.MultipartReader()
		if err == nil {
			r.ParseMultipartForm(1 << 20)
		}
		w.Write([]byte("%PDF"))
	}))
	defer srv.Close()
	// /proc/self/mem is a regular file that opens, and whose first read
	// fails (EIO: page 0 is not mapped).
	code, _, errOut := runCLI(context.Background(), srv.URL, withKey, "render", "/proc/self/mem", "-o", filepath.Join(t.TempDir(), "x.pdf"))
	if code != ExitInput || !strings.Contains(errOut, "cannot read mem") || strings.Contains(errOut, "cannot reach") {
		t.Errorf("exit %d, stderr %q; want %d naming the file", code, errOut, ExitInput)
	}
}

// batchServer is a service for merge, render and batch, whose answers
// name their files as a hostile service would.
type batchServer struct {
	id string
	// stream is the progress stream; polls the records polls get, in turn.
	stream string
	polls  []string
	polled int
	mu     sync.Mutex
}

func (s *batchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/pdf/generate-batch":
		json.NewEncoder(w).Encode(map[string]any{"batchId": s.id, "total": 1})
	case strings.HasSuffix(p, "/stream"):
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(s.stream))
	case strings.HasPrefix(p, "/pdf/progress/"):
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(s.polls[min(s.polled, len(s.polls)-1)]))
		s.polled++
	case strings.HasPrefix(p, "/pdf/download/"):
		w.Header().Set("Content-Disposition", `attachment; filename=".bashrc"`)
		w.Write([]byte("PK zip"))
	default: // generate, merge
		w.Header().Set("Content-Disposition", `attachment; filename="../../.profile"`)
		w.Write([]byte("%PDF new"))
	}
}

const completed = `{"total":1,"current":1,"status":"completed","message":"Download URL: http://x/pdf/download/b"}`

func progressEvent(name, record string) string {
	return "event: " + name + "\ndata: " + record + "\n\n"
}

// Without -o a file gets a fixed name, never the service's, and replaces
// nothing; -o may name an existing file, which it replaces.
func TestDefaultOutputNames(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("a.pdf", []byte("%PDF a"), 0o644)
	os.MkdirAll("docs", 0o755)
	os.WriteFile("docs/one.html", []byte("<h1>1</h1>"), 0o644)
	s := &batchServer{id: "Bx_9-abcdefghijklmnopq", stream: progressEvent("complete", completed), polls: []string{completed}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	run := func(args ...string) (int, string) {
		if args[0] == "batch" {
			args = append(args, "--progress", "none")
		}
		code, _, errOut := runCLI(context.Background(), srv.URL, withKey, args...)
		return code, errOut
	}
	files := func() string {
		var names []string
		entries, _ := os.ReadDir(".")
		for _, e := range entries {
			if !e.IsDir() {
				names = append(names, e.Name())
			}
		}
		return strings.Join(names, " ")
	}
	steps := []struct {
		args  []string
		code  int
		files string
		file  string // and its content
		want  string
	}{
		{[]string{"merge", "a.pdf"}, ExitOK, "a.pdf merged.pdf", "merged.pdf", "%PDF new"},
		{[]string{"merge", "a.pdf"}, ExitInput, "a.pdf merged.pdf", "", ""},
		{[]string{"merge", "a.pdf", "-o", "a.pdf"}, ExitOK, "a.pdf merged.pdf", "a.pdf", "%PDF new"},
		{[]string{"render", "https://example.com/"}, ExitOK, "a.pdf document.pdf merged.pdf", "document.pdf", "%PDF new"},
		{[]string{"render", "https://example.com/"}, ExitInput, "a.pdf document.pdf merged.pdf", "", ""},
		{[]string{"batch", "docs"}, ExitOK, "Bx_9-abcdefghijklmnopq.zip a.pdf document.pdf merged.pdf", "Bx_9-abcdefghijklmnopq.zip", "PK zip"},
		{[]string{"batch", "docs"}, ExitInput, "Bx_9-abcdefghijklmnopq.zip a.pdf document.pdf merged.pdf", "", ""},
	}
	for i, st := range steps {
		code, errOut := run(st.args...)
		if code != st.code {
			t.Fatalf("step %d %v: exit %d, want %d\n%s", i, st.args, code, st.code, errOut)
		}
		if got := files(); got != st.files {
			t.Errorf("step %d %v: files %q, want %q", i, st.args, got, st.files)
		}
		if st.file != "" {
			if b, _ := os.ReadFile(st.file); string(b) != st.want {
				t.Errorf("step %d: %s holds %q", i, st.file, b)
			}
		}
		if st.code == ExitInput && !strings.Contains(errOut, "exists") {
			t.Errorf("step %d: refusal says %q", i, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "..", ".profile")); err == nil {
		t.Error("wrote the service's ../../.profile")
	}
	// An ID that is no plain name gives batch.zip.
	for _, id := range []string{".bashrc", "a/b", "-rf", "..", ""} {
		if got := zipName(id); got != "batch.zip" {
			t.Errorf("zipName(%q) = %q", id, got)
		}
	}
}

// An error event sent because progress is unavailable for a while is not
// the batch failing: the batch is polled to its end, and its ZIP saved.
func TestBatchOutlivesAnErrorEvent(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "one.html"), []byte("<h1>1</h1>"), 0o644)
	unavailable := progressEvent("error", `{"total":1,"current":0,"status":"error","message":"Progress is unavailable right now. Poll http://x/pdf/progress/b1 to follow the batch."}`)
	for _, tt := range []struct {
		name  string
		polls []string
		code  int
	}{
		{"batch goes on", []string{`{"total":1,"current":0,"status":"processing"}`, completed}, ExitOK},
		{"batch failed", []string{`{"total":1,"current":0,"status":"error","message":"render failed"}`}, ExitServer},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &batchServer{id: "b1", stream: progressEvent("progress", `{"total":1,"current":0,"status":"processing"}`) + unavailable, polls: tt.polls}
			srv := httptest.NewServer(s)
			defer srv.Close()
			out := filepath.Join(t.TempDir(), "out.zip")
			code, _, errOut := runCLI(context.Background(), srv.URL, withKey, "batch", dir, "-o", out, "--progress", "plain")
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, errOut)
			}
			_, err := os.Stat(out)
			if (err == nil) != (tt.code == ExitOK) {
				t.Errorf("zip written: %v", err == nil)
			}
			if tt.code != ExitOK && (!strings.Contains(errOut, "render failed") || strings.Contains(errOut, "goes on")) {
				t.Errorf("stderr %q", errOut)
			}
		})
	}
}

// The PDF tools send their flags as the options and write to fixed names:
// images by the type of the answer, text to standard output.
func TestToolCommands(t *testing.T) {
	t.Chdir(t.TempDir())
	os.WriteFile("in.pdf", []byte("%PDF in"), 0o644)
	var options []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		options = append(options, r.URL.Path+" "+r.FormValue("options"))
		w.Header().Set("Content-Disposition", `attachment; filename="../.profile"`)
		switch r.URL.Path {
		case "/pdf/images":
			w.Header().Set("Content-Type", "image/webp")
		case "/pdf/text":
			w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		case "/pdf/optimize":
			w.Header().Set("X-Bytes-Before", "10")
			w.Header().Set("X-Bytes-After", "4")
		}
		w.Write([]byte("out " + r.URL.Path))
	}))
	defer srv.Close()
	steps := []struct {
		args          []string
		file, options string
	}{
		{[]string{"split", "in.pdf", "--every", "2"}, "in-split.zip", `/pdf/split {"every":2}`},
		{[]string{"pages", "in.pdf", "--select", "2,1", "--rotate", "1=90"}, "in-pages.pdf", `/pdf/pages {"select":"2,1","rotate":{"1":90}}`},
		{[]string{"flatten", "in.pdf", "--name", "flat"}, "in-flat.pdf", `/pdf/flatten {"fileName":"flat"}`},
		{[]string{"optimize", "in.pdf", "--max-image-dpi", "0"}, "in-optimized.pdf", `/pdf/optimize {"maxImageDpi":0}`},
		{[]string{"images", "in.pdf", "--format", "webp", "--pages", "1"}, "in-images.webp", `/pdf/images {"format":"webp","pages":"1"}`},
		{[]string{"text", "in.pdf", "--markdown"}, "", `/pdf/text {"format":"markdown"}`},
	}
	for i, st := range steps {
		code, out, errOut := runCLI(context.Background(), srv.URL, withKey, st.args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", st.args, code, errOut)
		}
		if options[i] != st.options {
			t.Errorf("%v: sent %s, want %s", st.args, options[i], st.options)
		}
		if st.file == "" {
			if out != "out /pdf/text" {
				t.Errorf("text wrote %q to standard output", out)
			}
			continue
		}
		if b, err := os.ReadFile(st.file); err != nil || !strings.HasPrefix(string(b), "out ") {
			t.Errorf("%v: %s: %q %v", st.args, st.file, b, err)
		}
	}
	if _, err := os.Stat("../.profile"); err == nil {
		t.Error("wrote the service's name")
	}
	if code, _, _ := runCLI(context.Background(), srv.URL, withKey, "split", "in.pdf"); code != ExitUsage {
		t.Errorf("split without --ranges or --every: exit %d", code)
	}
}
