package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	drclient "github.com/docrender/docrender/client"
)

// TestClientMatrix drives the service with the HTTP stacks people use
// (DESIGN §4.20): Python's urllib and requests (both over http.client,
// which takes any 1xx but 100 as the final answer), Node's fetch, curl and
// Go's net/http through the project's client. Each does what a person
// would, by the scripts in testdata/clients, and must read what a person
// expects: a PDF, a whole batch ZIP, a stream batch followed over SSE to its
// hosted ZIP, a hosted download, an error body, and a retried request with
// an Idempotency-Key answered again with the same bytes.
func TestClientMatrix(t *testing.T) {
	svc := sharedService(t)
	scripts, err := filepath.Abs("testdata/clients")
	if err != nil {
		t.Fatal(err)
	}
	stacks := []struct {
		name string
		// cmd drives the stack; nil means the Go client in process.
		cmd func() (*exec.Cmd, error)
	}{
		{"python-urllib", script(debianPython, filepath.Join(scripts, "urllib_client.py"))},
		{"python-requests", script(debianPython, filepath.Join(scripts, "requests_client.py"))},
		{"node-fetch", script(func() (string, error) { return exec.LookPath("node") }, filepath.Join(scripts, "fetch_client.mjs"))},
		{"curl", script(func() (string, error) { return exec.LookPath("bash") }, filepath.Join(scripts, "curl_client.sh"))},
		{"go-client", nil},
	}
	for _, st := range stacks {
		t.Run(st.name, func(t *testing.T) {
			c := newClient(t, svc)
			out, run := t.TempDir(), fmt.Sprintf("r%d", time.Now().UnixNano())
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if st.cmd == nil {
				if err := goClientMatrix(ctx, svc.URL, c.Key, out, run); err != nil {
					t.Fatalf("go client: %v", err)
				}
			} else {
				cmd, err := st.cmd()
				if err != nil {
					t.Fatalf("%s is needed (scripts/setup --test installs it): %v", st.name, err)
				}
				cmd.Env = append(os.Environ(), "DOCRENDER_URL="+svc.URL, "DOCRENDER_API_KEY="+c.Key, "OUT="+out, "RUN="+run)
				cmd.Dir = out
				if b, err := runIn(ctx, cmd); err != nil {
					t.Fatalf("%s: %v\n%s", st.name, err, b)
				}
			}
			checkMatrix(t, out, run)
		})
	}
}

// runIn runs cmd under ctx and returns its combined output.
func runIn(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env, c.Dir = cmd.Env, cmd.Dir
	return c.CombinedOutput()
}

// debianPython is Debian's python3 (with python3-requests), not whichever
// python3 a version manager put first on PATH.
func debianPython() (string, error) {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3", nil
	}
	return exec.LookPath("python3")
}

func script(interpreter func() (string, error), path string) func() (*exec.Cmd, error) {
	return func() (*exec.Cmd, error) {
		bin, err := interpreter()
		if err != nil {
			return nil, err
		}
		return exec.Command(bin, path), nil
	}
}

// checkMatrix reads what one stack wrote (testdata/clients/README.md).
func checkMatrix(t *testing.T, out, run string) {
	t.Helper()
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("the client wrote no %s: %v", name, err)
		}
		return b
	}
	status := func(name string, want int) {
		t.Helper()
		if got := strings.TrimSpace(string(read(name + ".status"))); got != fmt.Sprint(want) {
			t.Errorf("%s: HTTP %s, want %d", name, got, want)
		}
	}
	pdfSays := func(name, words string) {
		t.Helper()
		b := read(name)
		if pi := info(t, b); pi.Pages != 1 {
			t.Errorf("%s: %d pages, want 1", name, pi.Pages)
		}
		if got := text(t, b); !strings.Contains(got, words) {
			t.Errorf("%s says %q, want %q", name, got, words)
		}
	}
	zipHas := func(name string) {
		t.Helper()
		b := read(name)
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s is not a ZIP (%d bytes: %.80q): %v", name, len(b), b, err)
		}
		var names []string
		for _, f := range zr.File {
			names = append(names, f.Name)
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			pdf, _ := io.ReadAll(rc)
			rc.Close()
			doc := strings.TrimSuffix(f.Name, ".pdf")
			if got := text(t, pdf); !strings.Contains(got, "MATRIX "+doc+" "+run) {
				t.Errorf("%s/%s says %q", name, f.Name, got)
			}
		}
		if strings.Join(names, ",") != "one.pdf,two.pdf" {
			t.Errorf("%s holds %v, want one.pdf and two.pdf", name, names)
		}
	}

	status("generate", 200)
	pdfSays("generate.pdf", "MATRIX generate "+run)

	status("batch", 200)
	zipHas("batch.zip")

	status("stream", 200)
	status("stream-events", 200)
	events := strings.Fields(string(read("stream-events.txt")))
	if len(events) == 0 || events[len(events)-1] != "complete" {
		t.Errorf("stream events %v, want progress then complete", events)
	}
	for _, e := range events[:max(len(events)-1, 0)] {
		if e != "progress" {
			t.Errorf("stream events %v: %q before the end", events, e)
		}
	}
	status("stream-zip", 200)
	zipHas("stream.zip")

	status("hosted", 200)
	status("hosted-download", 200)
	pdfSays("hosted.pdf", "MATRIX hosted "+run)

	status("error", 400)
	var e struct {
		StatusCode int    `json:"statusCode"`
		Code       string `json:"code"`
		Message    string `json:"message"`
	}
	if err := json.Unmarshal(read("error.json"), &e); err != nil || e.StatusCode != 400 || e.Code != "BAD_REQUEST" || e.Message == "" {
		t.Errorf("error body %q (%v): want shape A, 400 BAD_REQUEST", read("error.json"), err)
	}

	status("idem", 200)
	pdfSays("idem-1.pdf", "MATRIX idem "+run)
	if !bytes.Equal(read("idem-1.pdf"), read("idem-2.pdf")) {
		t.Error("the retried request with an Idempotency-Key got other bytes")
	}
	if got := strings.TrimSpace(string(read("idem-2.replayed"))); got != "true" {
		t.Errorf("Idempotent-Replayed %q on the retry, want true", got)
	}
}

// goClientMatrix is the matrix through the project's Go client.
func goClientMatrix(ctx context.Context, base, key, out, run string) error {
	c, err := drclient.New(base, drclient.WithAPIKey(key))
	if err != nil {
		return err
	}
	save := func(name string, data []byte) error { return os.WriteFile(filepath.Join(out, name), data, 0o644) }
	ok := func(name string) error { return save(name+".status", []byte("200")) }
	page := func(name string) []drclient.Upload {
		return []drclient.Upload{drclient.UploadBytes("index.html", []byte("<h1>MATRIX "+name+" "+run+"</h1>"))}
	}
	download := func(name string, d *drclient.Download, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		b, err := d.Bytes()
		if err != nil {
			return err
		}
		if err := ok(strings.SplitN(name, ".", 2)[0]); err != nil {
			return err
		}
		return save(name, b)
	}
	get := func(url, name string) error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if err := save(strings.TrimSuffix(strings.TrimSuffix(name, ".pdf"), ".zip")+"-download.status", []byte(fmt.Sprint(resp.StatusCode))); err != nil {
			return err
		}
		return save(name, b)
	}

	d, err := c.Generate(ctx, drclient.GenerateRequest{Files: page("generate")})
	if err := download("generate.pdf", d, err); err != nil {
		return err
	}
	docs := []drclient.BatchDocument{
		{FileName: "one", HTMLContent: "<h1>MATRIX one " + run + "</h1>"},
		{FileName: "two", HTMLContent: "<h1>MATRIX two " + run + "</h1>"},
	}
	d, err = c.GenerateBatch(ctx, drclient.BatchRequest{Documents: docs})
	if err := download("batch.zip", d, err); err != nil {
		return err
	}

	started, err := c.StartBatch(ctx, drclient.BatchRequest{Documents: docs, Host: true})
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	var events []string
	final, err := c.FollowBatch(ctx, started.BatchID, func(p drclient.Progress) {
		events = append(events, map[bool]string{true: "complete", false: "progress"}[p.Status == drclient.StatusCompleted])
	})
	if err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	done, err := final.Completion()
	if err != nil {
		return err
	}
	for _, f := range []func() error{
		func() error { return ok("stream") }, func() error { return ok("stream-events") },
		func() error { return save("stream-events.txt", []byte(strings.Join(events, "\n"))) },
		func() error { return get(done.DownloadURL, "stream.zip") },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	if err := os.Rename(filepath.Join(out, "stream-download.status"), filepath.Join(out, "stream-zip.status")); err != nil {
		return err
	}

	h, err := c.GenerateHosted(ctx, drclient.GenerateRequest{Files: page("hosted")})
	if err != nil {
		return fmt.Errorf("hosted: %w", err)
	}
	if err := ok("hosted"); err != nil {
		return err
	}
	if err := get(h.URL, "hosted.pdf"); err != nil {
		return err
	}

	_, err = c.Generate(ctx, drclient.GenerateRequest{Files: []drclient.Upload{drclient.UploadBytes("style.css", []byte("p{}"))}})
	var apiErr *drclient.Error
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("error: got %v, want an API error", err)
	}
	body, _ := json.Marshal(map[string]any{"statusCode": apiErr.StatusCode, "code": apiErr.Code, "message": apiErr.Message})
	if err := save("error.status", []byte(fmt.Sprint(apiErr.StatusCode))); err != nil {
		return err
	}
	if err := save("error.json", body); err != nil {
		return err
	}

	req := drclient.GenerateRequest{Files: page("idem"), IdempotencyKey: "matrix-go-" + run}
	if err := ok("idem"); err != nil {
		return err
	}
	d, err = c.Generate(ctx, req)
	if err := download("idem-1.pdf", d, err); err != nil {
		return err
	}
	d, err = c.Generate(ctx, req)
	if err != nil {
		return err
	}
	if err := save("idem-2.replayed", []byte(fmt.Sprint(d.Replayed))); err != nil {
		return err
	}
	return download("idem-2.pdf", d, nil)
}
