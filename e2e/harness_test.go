// Package e2e tests docrender through real HTTP against a real gateway with
// its embedded NATS, real Chromium workers and real stores; PDFs are checked
// with poppler, the independent reader.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/e2e/harness"
	"github.com/docrender/docrender/gateway/app"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/testenv/freeport"
	"github.com/docrender/docrender/worker"
	"github.com/docrender/docrender/worker/pdfium"
)

// configT is the configuration tests edit.
type configT = config.Config

// service is a running gateway for tests.
type service struct {
	URL string
	App *app.App
	// Worker is the in-process worker pool (nil in split mode).
	Worker *worker.Worker
}

var (
	sharedOnce sync.Once
	shared     *service
	sharedErr  error
	cleanups   []func()
)

func TestMain(m *testing.M) {
	// The in-process service's PDFium children are this test binary run
	// again (worker/pdfium).
	if pdfium.RunChildIfAsked() {
		return
	}
	code := m.Run()
	for _, f := range cleanups {
		f()
	}
	os.Exit(code)
}

// baseConfig is the embedded configuration the tests run with.
func baseConfig(dir string) config.Config {
	cfg, err := config.Load(func(k string) string {
		switch k {
		case "DOCRENDER_DATA_DIR":
			return dir
		case "DOCRENDER_ADDR":
			return "127.0.0.1:0"
		case "DOCRENDER_RENDER_TIMEOUT":
			return "8s"
		case "DOCRENDER_MAX_UPLOAD_BYTES":
			return strconv.Itoa(8 << 20)
		case "DOCRENDER_WORKERS":
			return "2"
		case "DOCRENDER_AUTH_ATTEMPTS_PER_MINUTE":
			// Every test user registers from 127.0.0.1; TestAuthThrottle
			// sets the default back.
			return "100000"
		case "DOCRENDER_PLAN_HOBBY_CONCURRENCY", "DOCRENDER_PLAN_HOBBY_RATE":
			// Tests drive one account hard; TestAccountLimits sets limits.
			return "100000"
		case "DOCRENDER_SWEEP_INTERVAL":
			// Tests that need a sweep run one; a periodic one would race them.
			return "1h"
		}
		return ""
	})
	if err != nil {
		panic(err)
	}
	return cfg
}

func testLogger() *slog.Logger {
	if os.Getenv("DOCRENDER_TEST_LOG") != "" {
		return slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewJSONHandler(io.Discard, nil))
}

// startService starts a gateway whose configuration edit adjusts; it stops
// with the test.
func startService(t testing.TB, edit func(*config.Config)) *service {
	t.Helper()
	s, stop, err := launch(t.TempDir(), edit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s
}

func launch(dir string, edit func(*config.Config)) (*service, func(), error) {
	cfg := baseConfig(dir)
	// The base URL goes into every URL the API returns, so the port is chosen
	// first, below the ephemeral range (a port-0 bind closed again may be
	// taken by any outgoing connection before the gateway binds it).
	addr, err := freeport.Addr()
	if err != nil {
		return nil, nil, err
	}
	cfg.Addr = addr
	cfg.BaseURL = "http://" + cfg.Addr
	if edit != nil {
		edit(&cfg)
	}
	hs, err := harness.Start(context.Background(), cfg, testLogger())
	if err != nil {
		return nil, nil, err
	}
	a := hs.App
	url := "http://" + a.Addr()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		a.Close(ctx)
	}
	return &service{URL: url, App: a, Worker: hs.Worker}, stop, nil
}

// sharedService is one embedded service for every test that needs no special
// configuration: Chromium starts once per test binary.
func sharedService(t testing.TB) *service {
	t.Helper()
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "docrender-e2e-")
		if err != nil {
			sharedErr = err
			return
		}
		var stop func()
		// The base URL must be known before start: pick it from the listener after.
		shared, stop, sharedErr = launch(dir, nil)
		if sharedErr == nil {
			cleanups = append(cleanups, stop, func() { os.RemoveAll(dir) })
		}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// client is a signed-in user with an API key.
type client struct {
	t      testing.TB
	svc    *service
	http   *http.Client
	Key    string
	Token  string
	Email  string
	UserID string
	KeyID  string
}

var userSeq struct {
	sync.Mutex
	n int
}

// newClient registers a fresh user on svc and creates an API key.
func newClient(t testing.TB, svc *service) *client {
	t.Helper()
	userSeq.Lock()
	userSeq.n++
	email := fmt.Sprintf("user%d-%d@example.com", userSeq.n, time.Now().UnixNano())
	userSeq.Unlock()
	jar, _ := cookiejar.New(nil)
	c := &client{t: t, svc: svc, http: &http.Client{Jar: jar, Timeout: 2 * time.Minute}, Email: email}
	resp := c.do("POST", "/api/auth/register", jsonBody(map[string]any{"email": email, "password": "correct horse"}), nil)
	mustStatus(t, resp, http.StatusCreated)
	var reg struct {
		Data struct {
			Token string `json:"token"`
			User  struct {
				ID string `json:"id"`
			} `json:"user"`
		} `json:"data"`
	}
	decode(t, resp, &reg)
	c.Token, c.UserID = reg.Data.Token, reg.Data.User.ID
	resp = c.do("POST", "/api/keys", jsonBody(map[string]any{"name": "test"}), nil)
	mustStatus(t, resp, http.StatusCreated)
	var key struct {
		Data struct {
			ID  string `json:"id"`
			Key string `json:"key"`
		} `json:"data"`
	}
	decode(t, resp, &key)
	c.Key, c.KeyID = key.Data.Key, key.Data.ID
	return c
}

type body struct {
	r     io.Reader
	ctype string
}

func jsonBody(v any) body {
	b, _ := json.Marshal(v)
	return body{bytes.NewReader(b), "application/json"}
}

// file is one multipart part.
type file struct {
	Field, Name, Type string
	Data              []byte
}

func htmlFile(name, html string) file {
	return file{Field: "files", Name: name, Type: "text/html", Data: []byte(html)}
}

// multipartBody builds a form with the files and, when options is not nil, an options field.
func multipartBody(files []file, options any) body {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if options != nil {
		var s string
		switch o := options.(type) {
		case string:
			s = o
		default:
			b, _ := json.Marshal(o)
			s = string(b)
		}
		_ = w.WriteField("options", s)
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		field := f.Field
		if field == "" {
			field = "files"
		}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, field, f.Name))
		if f.Type != "" {
			h.Set("Content-Type", f.Type)
		}
		p, _ := w.CreatePart(h)
		p.Write(f.Data)
	}
	w.Close()
	return body{&buf, w.FormDataContentType()}
}

// do sends a request with the session cookie (from the jar) and the given headers.
func (c *client) do(method, path string, b body, header map[string]string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.svc.URL+path, b.r)
	if err != nil {
		c.t.Fatal(err)
	}
	if b.ctype != "" {
		req.Header.Set("Content-Type", b.ctype)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// withKey sends a request authenticated by the API key only (no cookie).
func (c *client) withKey(method, path string, b body) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.svc.URL+path, b.r)
	if err != nil {
		c.t.Fatal(err)
	}
	if b.ctype != "" {
		req.Header.Set("Content-Type", b.ctype)
	}
	req.Header.Set("X-API-Key", c.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// generate posts files and options to /pdf/generate and returns the response.
func (c *client) generate(files []file, options any) *http.Response {
	c.t.Helper()
	return c.withKey("POST", "/pdf/generate", multipartBody(files, options))
}

// generatePDF renders html with options and returns the PDF bytes.
func (c *client) generatePDF(html string, options any) []byte {
	c.t.Helper()
	resp := c.generate([]file{htmlFile("index.html", html)}, options)
	mustStatus(c.t, resp, http.StatusOK)
	return readAll(c.t, resp)
}

func readAll(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t testing.TB, resp *http.Response, v any) {
	t.Helper()
	b := readAll(t, resp)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func mustStatus(t testing.TB, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want, b)
	}
}

// errorBody reads a shape A or B error body.
type errorBody struct {
	StatusCode int    `json:"statusCode"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Hint       string `json:"hint"`
	Success    *bool  `json:"success"`
	Field      string `json:"field"`
	Raw        map[string]any
}

func expectError(t testing.TB, resp *http.Response, status int, code string) errorBody {
	t.Helper()
	b := readAll(t, resp)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
	var e errorBody
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body is not JSON: %s", b)
	}
	_ = json.Unmarshal(b, &e.Raw)
	if status == http.StatusUnauthorized {
		if e.Success == nil || *e.Success || e.Message == "" || len(e.Raw) != 2 {
			t.Fatalf("401 body is not shape B: %s", b)
		}
		return e
	}
	if e.StatusCode != status || e.Code != code || e.Message == "" {
		t.Fatalf("body %s, want shape A with statusCode %d code %s", b, status, code)
	}
	if bytes.Contains(b, []byte("goroutine")) || bytes.Contains(b, []byte("/work/")) || bytes.Contains(b, []byte(".go:")) {
		t.Fatalf("error body leaks internals: %s", b)
	}
	return e
}

// --- poppler ---

func writeTemp(t testing.TB, data []byte, ext string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f"+ext)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

type pdfInfo struct {
	Pages         int
	Width, Height float64
}

var pageSizeRe = regexp.MustCompile(`Page size:\s+([\d.]+) x ([\d.]+) pts`)

func info(t testing.TB, pdf []byte) pdfInfo {
	t.Helper()
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) {
		t.Fatalf("not a PDF: %.200q", pdf)
	}
	out := run(t, "pdfinfo", writeTemp(t, pdf, ".pdf"))
	var pi pdfInfo
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Pages:") {
			pi.Pages, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Pages:")))
		}
	}
	if m := pageSizeRe.FindStringSubmatch(out); m != nil {
		pi.Width, _ = strconv.ParseFloat(m[1], 64)
		pi.Height, _ = strconv.ParseFloat(m[2], 64)
	}
	return pi
}

func text(t testing.TB, pdf []byte) string {
	t.Helper()
	return run(t, "pdftotext", "-layout", writeTemp(t, pdf, ".pdf"), "-")
}

// word is a word's box from pdftotext -bbox, in points from the top left.
type word struct {
	Text                   string
	XMin, YMin, XMax, YMax float64
}

var wordRe = regexp.MustCompile(`<word xMin="(-?[\d.]+)" yMin="(-?[\d.]+)" xMax="(-?[\d.]+)" yMax="(-?[\d.]+)">([^<]*)</word>`)

func words(t testing.TB, pdf []byte) []word {
	t.Helper()
	out := run(t, "pdftotext", "-bbox", writeTemp(t, pdf, ".pdf"), "-")
	var ws []word
	for _, m := range wordRe.FindAllStringSubmatch(out, -1) {
		f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
		ws = append(ws, word{Text: m[5], XMin: f(m[1]), YMin: f(m[2]), XMax: f(m[3]), YMax: f(m[4])})
	}
	return ws
}

func findWord(t testing.TB, ws []word, txt string) word {
	t.Helper()
	for _, w := range ws {
		if w.Text == txt {
			return w
		}
	}
	t.Fatalf("word %q not in PDF (words: %v)", txt, ws)
	return word{}
}

func near(a, b, tol float64) bool { return a-b <= tol && b-a <= tol }
