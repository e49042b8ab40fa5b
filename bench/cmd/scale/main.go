// Command benchscale drives a running, scaled-out docrender (scripts/cluster-up)
// and prints its throughput: synchronous /pdf/generate requests from c
// concurrent clients, spread over every gateway, and one n-document batch
// from submission to completion. scripts/bench-scale runs it against 1, 2
// and 3 workers.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/docrender/docrender/bench/internal/benchapi"
)

func main() {
	urls := flag.String("gateways", os.Getenv("GATEWAY_URLS"), "gateway base URLs, space-separated")
	label := flag.String("label", "", "first column of the output line (e.g. the number of workers)")
	c := flag.Int("c", 8, "concurrent generate clients")
	d := flag.Duration("d", 20*time.Second, "how long to measure generate")
	n := flag.Int("batch", 100, "documents in the batch (0: no batch)")
	flag.Parse()
	if err := run(strings.Fields(*urls), *label, *c, *d, *n); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

func run(gateways []string, label string, c int, d time.Duration, n int) error {
	if len(gateways) == 0 {
		return errors.New("no gateways (set GATEWAY_URLS or -gateways)")
	}
	u, err := signUp(gateways[0])
	if err != nil {
		return err
	}
	gen, err := measureGenerate(u, gateways, c, d)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("%-8s | %6.1f PDFs/s  p50 %5.0f ms  p95 %5.0f ms", label, gen.Rate(), benchapi.Ms(gen.P50()), benchapi.Ms(gen.P95()))
	if n > 0 {
		took, err := runBatch(u, gateways[0], n)
		if err != nil {
			return err
		}
		line += fmt.Sprintf(" | batch of %d: %5.1f s, %5.1f docs/s", n, took.Seconds(), float64(n)/took.Seconds())
	}
	fmt.Println(line)
	return nil
}

// user is a signed-up account on the enterprise plan (no quota in the way).
type user struct {
	key, token string
	http       *http.Client
}

func signUp(base string) (*user, error) {
	u := &user{http: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var reg struct {
		Data struct {
			Token string `json:"token"`
		} `json:"data"`
	}
	email := fmt.Sprintf("scale-%d@example.com", time.Now().UnixNano())
	if err := u.postJSON(base+"/api/auth/register", map[string]string{"email": email, "password": "benchmark-pass"}, &reg); err != nil {
		return nil, err
	}
	u.token = reg.Data.Token
	var key struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
	}
	if err := u.postJSON(base+"/api/keys", map[string]string{"name": "bench"}, &key); err != nil {
		return nil, err
	}
	u.key = key.Data.Key
	if err := u.postJSON(base+"/api/billing/subscription/change-plan", map[string]string{"plan": "enterprise"}, nil); err != nil {
		return nil, err
	}
	return u, nil
}

func (u *user) postJSON(url string, body, out any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+u.token)
	if u.key != "" && strings.Contains(url, "/pdf/") {
		req.Header.Set("X-API-Key", u.key)
	}
	return u.do(req, out)
}

func (u *user) do(req *http.Request, out any) error {
	resp, err := u.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %.300s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// page is a one-page invoice-like document (a table, a web font, no script).
func page(i int) string {
	var rows strings.Builder
	for r := 1; r <= 20; r++ {
		fmt.Fprintf(&rows, "<tr><td>%d</td><td>Item %d</td><td>%d.00</td></tr>", r, r, r*7)
	}
	return fmt.Sprintf(`<!doctype html><html><head><meta charset="utf-8"><style>body{font-family:'Liberation Sans',sans-serif}
table{width:100%%;border-collapse:collapse}td{border-bottom:1px solid #ddd;padding:4px}</style></head>
<body><h1>INVOICE %05d</h1><table>%s</table></body></html>`, i, rows.String())
}

func (u *user) generate(base string, i int) error {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	p, _ := w.CreateFormFile("files", "index.html")
	_, _ = p.Write([]byte(page(i)))
	w.Close()
	req, err := http.NewRequest("POST", base+"/pdf/generate", &buf)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-API-Key", u.key)
	return u.do(req, nil)
}

// measureGenerate runs c clients for d; the clients take the gateways in turn.
func measureGenerate(u *user, gateways []string, c int, d time.Duration) (benchapi.Result, error) {
	return benchapi.Measure(c, d, func(i, n int) error { return u.generate(gateways[(i+n)%len(gateways)], n) })
}

// runBatch submits an n-document stream batch and polls until it completes.
func runBatch(u *user, base string, n int) (time.Duration, error) {
	docs := make([]map[string]string, n)
	for i := range docs {
		docs[i] = map[string]string{"fileName": fmt.Sprintf("doc-%d", i), "htmlContent": page(i)}
	}
	start := time.Now()
	var started struct {
		BatchID string `json:"batchId"`
	}
	if err := u.postJSON(base+"/pdf/generate-batch", map[string]any{"documents": docs, "stream": true}, &started); err != nil {
		return 0, err
	}
	for time.Since(start) < 30*time.Minute {
		req, _ := http.NewRequest("GET", base+"/pdf/progress/"+started.BatchID, nil)
		req.Header.Set("X-API-Key", u.key)
		var p struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		}
		if err := u.do(req, &p); err != nil {
			return 0, err
		}
		switch p.Status {
		case "completed":
			return time.Since(start), nil
		case "error":
			return 0, fmt.Errorf("batch failed: %s", p.Message)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, errors.New("batch did not finish in 30 minutes")
}
