// Package benchapi is the HTTP client the benchmark commands drive a
// running docrender with: a fresh account with an API key, and the calls
// the benchmarks time.
package benchapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"os"
	"time"

	"github.com/docrender/docrender/e2e/harness"
	"github.com/docrender/docrender/pkg/config"
)

// EmbeddedConfig is an embedded service under dir on a free loopback port
// with an allowance no benchmark exhausts; extra overrides variables, and
// the environment fills in the rest (DOCRENDER_WORKERS, say).
func EmbeddedConfig(dir string, extra map[string]string) (config.Config, error) {
	return config.Load(func(k string) string {
		switch k {
		case "DOCRENDER_DATA_DIR":
			return dir
		case "DOCRENDER_ADDR":
			return "127.0.0.1:0"
		case "DOCRENDER_PLAN_HOBBY_CONVERSIONS":
			return "100000000"
		case "DOCRENDER_PLAN_HOBBY_CONCURRENCY", "DOCRENDER_PLAN_HOBBY_RATE":
			return "100000"
		}
		if v, ok := extra[k]; ok {
			return v
		}
		return os.Getenv(k)
	})
}

// Client is a signed-in user of a running service.
type Client struct {
	Base, Key string
	HTTP      *http.Client
}

// New registers a fresh user on the service at base and creates its API key.
func New(base string) (*Client, error) {
	a := &Client{Base: base, HTTP: &http.Client{Timeout: 30 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var reg struct {
		Data struct {
			Token string `json:"token"`
		} `json:"data"`
	}
	email := fmt.Sprintf("bench-%d@example.com", time.Now().UnixNano())
	if err := a.PostJSON("/api/auth/register", "", map[string]string{"email": email, "password": "benchmark-pass"}, &reg); err != nil {
		return nil, err
	}
	var key struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
	}
	if err := a.PostJSON("/api/keys", reg.Data.Token, map[string]string{"name": "bench"}, &key); err != nil {
		return nil, err
	}
	a.Key = key.Data.Key
	return a, nil
}

// PostJSON posts body as JSON (bearer token, else the API key) and decodes a 2xx answer into out.
func (a *Client) PostJSON(path, token string, body, out any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", a.Base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	} else if a.Key != "" {
		req.Header.Set("X-API-Key", a.Key)
	}
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %d %.300s", path, resp.StatusCode, data)
	}
	return json.Unmarshal(data, out)
}

// Get fetches path with the API key; anything but 200 is an error.
func (a *Client) Get(path string) ([]byte, error) {
	return a.Send("GET", path, "", nil)
}

// Send makes one request with the API key and returns the body of a 200
// answer; anything else is an error quoting the body.
func (a *Client) Send(method, path, contentType string, body io.Reader) ([]byte, error) {
	return a.send(method, path, contentType, body, "X-API-Key", a.Key)
}

// SendAuth is Send with an Authorization header instead of the API key
// (an admin's bearer token) and a JSON body (nil: none).
func (a *Client) SendAuth(method, path, authorization string, body []byte) ([]byte, error) {
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return a.send(method, path, contentType, bytes.NewReader(body), "Authorization", authorization)
}

// send makes one request with the credential header given.
func (a *Client) send(method, path, contentType string, body io.Reader, authHeader, auth string) ([]byte, error) {
	req, err := http.NewRequest(method, a.Base+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set(authHeader, auth)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %.300s", method, path, resp.StatusCode, data)
	}
	return data, nil
}

// Generate renders one document through /pdf/generate.
func (a *Client) Generate(html string) error {
	_, err := a.GenerateWith(html, "")
	return err
}

// GenerateWith renders one document with options (JSON, "" for none) and
// returns the PDF.
func (a *Client) GenerateWith(html, options string) ([]byte, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	p, _ := w.CreateFormFile("files", "index.html")
	p.Write([]byte(html))
	if options != "" {
		_ = w.WriteField("options", options)
	}
	w.Close()
	body, err := a.Send("POST", "/pdf/generate", w.FormDataContentType(), &buf)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(body, []byte("%PDF")) {
		return nil, fmt.Errorf("generate: not a PDF: %.200s", body)
	}
	return body, nil
}

// Logger discards the service's log unless DOCRENDER_BENCH_LOG names a file
// to write it to (JSON, debug level: every render's step timings), for
// looking into a slow run.
func Logger() *slog.Logger {
	if p := os.Getenv("DOCRENDER_BENCH_LOG"); p != "" {
		if f, err := os.Create(p); err == nil {
			return slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	return slog.New(slog.DiscardHandler)
}

// Embedded starts an embedded service (EmbeddedConfig) in a temporary
// directory; stop ends it and removes the directory.
func Embedded(extra map[string]string) (svc *harness.Service, cfg config.Config, stop func(), err error) {
	dir, err := os.MkdirTemp("", "docrender-bench-")
	if err != nil {
		return nil, cfg, nil, err
	}
	if cfg, err = EmbeddedConfig(dir, extra); err != nil {
		os.RemoveAll(dir)
		return nil, cfg, nil, err
	}
	ctx := context.Background()
	if svc, err = harness.Start(ctx, cfg, Logger()); err != nil {
		os.RemoveAll(dir)
		return nil, cfg, nil, err
	}
	return svc, cfg, func() { svc.App.Close(ctx); os.RemoveAll(dir) }, nil
}

// PostMultipart posts a multipart body with the API key; any 2xx answer
// (201 Created, say) is success.
func (a *Client) PostMultipart(path, contentType string, body io.Reader) error {
	req, err := http.NewRequest("POST", a.Base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-API-Key", a.Key)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %d %.300s", path, resp.StatusCode, data)
	}
	return nil
}
