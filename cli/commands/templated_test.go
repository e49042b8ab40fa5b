package commands

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// renderServer records each request (method, URI, Idempotency-Key, JSON
// body) and answers as the gateway does: a PDF for a render or a preview,
// a 422 naming the template's line and the data's path for data with
// "bad", and a batch's start, stream and ZIP.
type renderServer struct {
	mu     sync.Mutex
	seen   []string
	bodies []string
}

func (s *renderServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := io.ReadAll(r.Body)
	s.seen = append(s.seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Idempotency-Key"))
	s.bodies = append(s.bodies, string(b))
	p := r.URL.Path
	switch {
	case strings.Contains(string(b), `"bad"`):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(422)
		w.Write([]byte(`{"statusCode":422,"code":"RENDER_CHECK_FAILED","message":"The template could not be filled with the data.","details":[{"kind":"template","line":5,"path":"items[1].price","message":"formatCurrency: not a number \u001b[31m"}]}`))
	case p == "/pdf/generate-batch":
		json.NewEncoder(w).Encode(map[string]any{"batchId": "b1", "total": 2})
	case strings.HasSuffix(p, "/stream"):
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(progressEvent("complete", completed)))
	case strings.HasPrefix(p, "/pdf/download/"):
		w.Write([]byte("PK zip"))
	default:
		w.Header().Set("Content-Type", "application/pdf")
		w.Write([]byte("%PDF " + p))
	}
}

// runCLIStdin is runCLI with stdin.
func runCLIStdin(ctx context.Context, url string, env map[string]string, stdin string, args ...string) (int, string, string) {
	var out, errOut strings.Builder
	e := Env{Getenv: func(k string) string {
		if k == "DOCRENDER_URL" {
			return url
		}
		return env[k]
	}, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut}
	code := Run(ctx, args, e)
	return code, out.String(), errOut.String()
}

func TestRenderTemplate(t *testing.T) {
	fake := &renderServer{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("inv-42.json", []byte("{\n  \"number\": \"2026-042\"\n}\n"), 0o644)
	os.WriteFile("note.txt", []byte("n"), 0o644)

	// A data file: its name with .pdf; options and record flags in the
	// JSON body, --attach inline.
	code, _, errOut := runCLI(ctx, srv.URL, withKey, "render", "--template", "invoice", "--data", "inv-42.json",
		"--option", "format=A5", "--pdfa", "3b", "--attach", "note.txt", "--idempotency-key", "k1")
	if code != ExitOK || !strings.Contains(errOut, "wrote inv-42.pdf") {
		t.Fatalf("render: %d %q", code, errOut)
	}
	if b, _ := os.ReadFile("inv-42.pdf"); string(b) != "%PDF /pdf/generate" {
		t.Fatalf("inv-42.pdf holds %q", b)
	}
	want := `{"template":"invoice","data":{"number":"2026-042"},"options":{"attachments":[{"content":"bg==","fileName":"note.txt"}],"format":"A5","pdfa":"3b"}}`
	if fake.seen[0] != "POST /pdf/generate k1" || fake.bodies[0] != want {
		t.Fatalf("sent %q %s\nwant %s", fake.seen[0], fake.bodies[0], want)
	}
	// Again: the data file's PDF is replaced, as a rendered file's is.
	if code, _, errOut = runCLI(ctx, srv.URL, withKey, "render", "--template", "invoice", "--data", "inv-42.json"); code != ExitOK {
		t.Fatalf("again: %d %q", code, errOut)
	}

	// Data on standard input, a version: NAME.pdf, never replaced.
	fake.seen, fake.bodies = nil, nil
	for i, wantCode := range []int{ExitOK, ExitInput} {
		code, _, errOut = runCLIStdin(ctx, srv.URL, withKey, `{"n": [1, 2]}`, "render", "--template", "invoice@2", "--data", "-")
		if code != wantCode {
			t.Fatalf("stdin %d: %d %q", i, code, errOut)
		}
	}
	if len(fake.bodies) != 1 || fake.bodies[0] != `{"template":{"name":"invoice","version":2},"data":{"n":[1,2]}}` {
		t.Fatalf("stdin sent %q", fake.bodies)
	}
	if _, err := os.Stat("invoice.pdf"); err != nil {
		t.Fatal(err)
	}
	// No data: {}; -o - to standard output.
	fake.bodies = nil
	code, out, _ := runCLI(ctx, srv.URL, withKey, "render", "--template", "cover", "-o", "-")
	if code != ExitOK || out != "%PDF /pdf/generate" || fake.bodies[0] != `{"template":"cover","data":{}}` {
		t.Fatalf("no data: %d %q %q", code, out, fake.bodies)
	}

	// A template error: the line and the data's path, exit 2, made safe.
	os.WriteFile("bad.json", []byte(`{"bad": 1}`), 0o644)
	code, _, errOut = runCLI(ctx, srv.URL, withKey, "render", "--template", "invoice", "--data", "bad.json", "-o", "x.pdf")
	if code != ExitInput || !strings.Contains(errOut, "template line 5, data items[1].price: formatCurrency: not a number") || strings.Contains(errOut, "\x1b") {
		t.Fatalf("422: %d %q", code, errOut)
	}

	// Refused before anything is sent.
	os.WriteFile("list.json", []byte(`[1]`), 0o644)
	os.WriteFile("broken.json", []byte("{\n  \"a\": 1,\n  \"b\": \n}"), 0o644)
	os.WriteFile("two.json", []byte("{}\n{}"), 0o644)
	fake.seen = nil
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"render", "--template", "invoice", "page.html"}, ExitUsage, "takes no FILE"},
		{[]string{"render", "page.html", "--data", "inv-42.json"}, ExitUsage, "--data needs --template"},
		{[]string{"render", "--template", "@2"}, ExitUsage, "NAME@VERSION"},
		{[]string{"render", "--template", "invoice@0"}, ExitUsage, "a number from 1"},
		{[]string{"render", "--template", "invoice", "--data", "none.json"}, ExitInput, "none.json"},
		{[]string{"render", "--template", "invoice", "--data", "list.json"}, ExitInput, "want a JSON object"},
		{[]string{"render", "--template", "invoice", "--data", "broken.json"}, ExitInput, "broken.json: line 4"},
		{[]string{"render", "--template", "invoice", "--data", "two.json"}, ExitInput, "line 2: more after the JSON object"},
		{[]string{"render", "--template", "invoice", "--data", "-"}, ExitInput, "standard input is empty"},
	} {
		code, _, errOut := runCLI(ctx, srv.URL, withKey, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%q: %d %q, want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
	if len(fake.seen) != 0 {
		t.Fatalf("refused command lines sent %q", fake.seen)
	}
	if code, out, _ := runCLI(ctx, srv.URL, nil, "help", "render"); code != ExitOK || !strings.Contains(out, "--template NAME[@VERSION]") {
		t.Fatalf("help: %d %q", code, out)
	}
}

func TestBatchTemplate(t *testing.T) {
	fake := &renderServer{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx := context.Background()
	dir := t.TempDir()
	rows := filepath.Join(dir, "rows.jsonl")
	os.WriteFile(rows, []byte(`{"data": {"number": "B-1"}, "fileName": "b1"}`+"\n\n"+
		`{"data": {"number": "B-2", "items": [{"price": 1}]}, "options": {"scale": 0.5, "waitDelay": "1s"}}`+"\n"), 0o644)
	out := filepath.Join(dir, "out.zip")
	code, _, errOut := runCLI(ctx, srv.URL, withKey, "batch", "--template", "invoice@3", rows, "-o", out, "--progress", "none", "--option", "format=A5")
	if code != ExitOK {
		t.Fatalf("batch: %d %q", code, errOut)
	}
	if b, _ := os.ReadFile(out); string(b) != "PK zip" {
		t.Fatalf("zip holds %q", b)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(fake.bodies[0]), &sent); err != nil {
		t.Fatal(err)
	}
	delete(sent, "stream")
	b, _ := json.Marshal(sent)
	want := `{"documents":[{"data":{"number":"B-1"},"fileName":"b1"},{"data":{"items":[{"price":1}],"number":"B-2"},"scale":0.5,"waitDelay":"1s"}],"options":{"format":"A5"},"template":{"name":"invoice","version":3}}`
	if string(b) != want || !strings.HasPrefix(fake.seen[0], "POST /pdf/generate-batch docrender-cli-") {
		t.Fatalf("sent %q %s\nwant %s", fake.seen[0], b, want)
	}
	// From standard input.
	fake.bodies = nil
	code, _, errOut = runCLIStdin(ctx, srv.URL, withKey, `{"data":{}}`, "batch", "--template", "invoice", "-", "-o", out, "--progress", "none")
	if code != ExitOK || !strings.Contains(fake.bodies[0], `"documents":[{"data":{}}]`) {
		t.Fatalf("stdin: %d %q %q", code, errOut, fake.bodies)
	}

	// A bad line is a local error naming it.
	fake.seen = nil
	for _, tc := range []struct {
		rows string
		msg  string
	}{
		{`{"number": "B-1"}`, `line 1: unknown key "number"`},
		{"{\"data\": {}}\n{\"data\": {}, \"fileName\": \"x\"}\n{\"data\": ", "line 3: not valid JSON"},
		{`{"data": [1]}`, `line 1: "data" is not a JSON object`},
		{`{"fileName": "a"}`, `line 1: no "data"`},
		{"\n[1]", "line 2: not a JSON object"},
		{`{"data": {}} {"data": {}}`, "line 1: more after the JSON object"},
		{`{"data": {}, "fileName": " "}`, `line 1: "fileName" is empty`},
		{`{"data": {}, "options": {"scael": 1}}`, `line 1: "options": unknown field "scael"`},
		{`{"data": {}, "options": 3}`, `line 1: "options" is not a JSON object`},
		{"\n\n", "holds no documents"},
		{"{\"data\": {\"x\": \"" + strings.Repeat("a", maxRowLine) + "\"}}", "line 1: longer than 6 MiB"},
	} {
		p := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(p, []byte(tc.rows), 0o644)
		code, _, errOut := runCLI(ctx, srv.URL, withKey, "batch", "--template", "invoice", p, "--progress", "none")
		if code != ExitInput || !strings.Contains(errOut, tc.msg) {
			t.Errorf("rows %.60q: %d %q, want %q", tc.rows, code, errOut, tc.msg)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"batch", "--template", "invoice"}, ExitUsage, "one rows file"},
		{[]string{"batch", "--template", "invoice", dir}, ExitInput, "is a folder"},
		{[]string{"batch", "--template", "invoice", filepath.Join(dir, "none.jsonl")}, ExitInput, "none.jsonl"},
	} {
		code, _, errOut := runCLI(ctx, srv.URL, withKey, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%q: %d %q, want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
	if len(fake.seen) != 0 {
		t.Fatalf("refused batches sent %q", fake.seen)
	}
	if code, out, _ := runCLI(ctx, srv.URL, nil, "help", "batch"); code != ExitOK || !strings.Contains(out, `{"data": {...}, "fileName"`) {
		t.Fatalf("help: %d %q", code, out)
	}
}

func TestTemplatePreview(t *testing.T) {
	fake := &renderServer{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx := context.Background()
	t.Chdir(t.TempDir())
	if code, _, errOut := runCLI(ctx, srv.URL, map[string]string{"DOCRENDER_SESSION": "sess"}, "template", "preview", "tpl1"); code != ExitOK ||
		!strings.Contains(errOut, "wrote tpl1-preview.pdf") {
		t.Fatalf("preview: %d %q", code, errOut)
	}
	// Not replaced without -o; -o names it.
	if code, _, _ := runCLI(ctx, srv.URL, withKey, "template", "preview", "tpl1"); code != ExitInput {
		t.Fatalf("replaced tpl1-preview.pdf: %d", code)
	}
	if code, _, errOut := runCLI(ctx, srv.URL, withKey, "template", "preview", "tpl1", "--version", "2", "-o", "p.pdf"); code != ExitOK {
		t.Fatalf("preview v2: %d %q", code, errOut)
	}
	if b, _ := os.ReadFile("p.pdf"); string(b) != "%PDF /api/templates/tpl1/preview" {
		t.Fatalf("p.pdf holds %q", b)
	}
	if code, _, _ := runCLI(ctx, srv.URL, withKey, "template", "preview", "../x"); code != ExitOK {
		t.Fatal("an ID that is no plain name")
	}
	if _, err := os.Stat("preview.pdf"); err != nil {
		t.Fatal(err)
	}
	wantSeen := []string{"GET /api/templates/tpl1/preview ", "GET /api/templates/tpl1/preview?version=2 ", "GET /api/templates/..%2Fx/preview "}
	if !slices.Equal(fake.seen, wantSeen) {
		t.Fatalf("sent %q, want %q", fake.seen, wantSeen)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"template", "preview"}, ExitUsage, "one template ID"},
		{[]string{"template", "preview", "a", "b"}, ExitUsage, "one template ID"},
		{[]string{"template", "preview", "a", "--version", "-1"}, ExitUsage, "from 1"},
	} {
		code, _, errOut := runCLI(ctx, srv.URL, withKey, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%q: %d %q, want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}
