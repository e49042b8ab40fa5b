package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/limits/limitstest"
	"github.com/docrender/docrender/proto/jobspb"
)

// hostileCase is one malformed or malicious request and the answer it must
// get: a 4xx in the spec's shape (401 shape B, everything else shape A).
type hostileCase struct {
	name   string
	method string
	path   string
	// auth: "key" (X-API-Key), "bearer" (session token), "cookie" (session
	// cookie from the service's own origin), or "" (none).
	auth   string
	header map[string]string
	body   body
	status int
	code   string
	// field, when set, must appear in the message.
	field string
	// progress: the answer is the 404 progress record of an unknown batch
	// (DESIGN §4.10), not an error body.
	progress bool
}

func rawBody(ctype string, b []byte) body { return body{bytes.NewReader(b), ctype} }

func jsonText(s string) body { return rawBody("application/json", []byte(s)) }

// deepJSON nests n arrays.
func deepJSON(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// rawMultipart builds a multipart body by hand, so that part headers can
// carry bytes the standard writer would not write.
func rawMultipart(boundary string, parts ...string) body {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("--" + boundary + "\r\n" + p + "\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return rawBody("multipart/form-data; boundary="+boundary, []byte(b.String()))
}

func filePart(name, data string) string {
	return `Content-Disposition: form-data; name="files"; filename="` + name + "\"\r\nContent-Type: text/html\r\n\r\n" + data
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestHostileRequests sends malformed and malicious requests to every route
// (DESIGN §5, issue 10): each is answered with a clear 4xx in the spec's
// error shape, none costs a conversion, and afterwards the service is
// healthy, renders, and has no goroutine or temporary file left behind.
func TestHostileRequests(t *testing.T) {
	dir := t.TempDir()
	svc := startService(t, func(c *configT) { c.DataDir = dir })
	c := newClient(t, svc)
	idle(t, svc)
	goroutinesBefore := runtime.NumGoroutine()
	usedBefore := c.usage()

	index := htmlFile("index.html", simpleHTML)
	png := limitstest.BombPNG(10_000_000, 10_000_000)
	bombWM := fmt.Sprintf(`{"watermark":{"image":%q}}`, b64(png))
	pdf := c.generatePDF(simpleHTML, nil) // a real PDF for merge cases
	usedBefore++
	stored := c.host(simpleHTML, map[string]any{"userType": "registered"})
	usedBefore++
	longID := strings.Repeat("A", 4096)

	cases := []hostileCase{
		// --- bombs and huge dimensions ---
		{name: "watermark PNG bomb on generate", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, bombWM), status: 400, code: apierr.BadRequest, field: "watermark.image"},
		{name: "watermark PNG bomb on merge", method: "POST", path: "/pdf/merge", auth: "key",
			body: multipartBody([]file{{Name: "a.pdf", Type: "application/pdf", Data: pdf}}, bombWM), status: 400, code: apierr.BadRequest, field: "watermark.image"},
		{name: "watermark PNG bomb on batch", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: jsonText(`{"documents":[{"fileName":"a","htmlContent":"<p>a</p>"}],"options":` + bombWM + `}`), status: 400, code: apierr.BadRequest, field: "watermark.image"},
		{name: "watermark PNG over the pixel bound", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, fmt.Sprintf(`{"watermark":{"image":%q}}`, b64(limitstest.BombPNG(5000, 5000)))), status: 400, code: apierr.BadRequest, field: "watermark.image"},
		{name: "watermark image of 700 KiB", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, fmt.Sprintf(`{"watermark":{"image":%q}}`, b64(append(limitstest.BombPNG(8, 8), make([]byte, 700<<10)...)))), status: 400, code: apierr.BadRequest, field: "watermark.image"},
		{name: "watermark image not base64", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, `{"watermark":{"image":"%%%not base64"}}`), status: 400, code: apierr.BadRequest, field: "watermark.image"},
		{name: "uploaded PNG bomb", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index, {Name: "logo.png", Type: "image/png", Data: png}}, nil), status: 400, code: apierr.BadRequest, field: "logo.png"},
		{name: "uploaded PNG bomb under a harmless name", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index, {Name: "notes.txt", Data: png}}, nil), status: 400, code: apierr.BadRequest, field: "notes.txt"},
		{name: "uploaded JPEG bomb", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index, {Name: "a.jpg", Type: "image/jpeg", Data: limitstest.BombJPEG(65535, 65535)}}, nil), status: 400, code: apierr.BadRequest, field: "a.jpg"},
		{name: "uploaded GIF bomb", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index, {Name: "a.gif", Type: "image/gif", Data: limitstest.BombGIF(65535, 65535)}}, nil), status: 400, code: apierr.BadRequest, field: "a.gif"},
		{name: "uploaded WebP bomb", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index, {Name: "a.webp", Type: "image/webp", Data: limitstest.BombWebP(16000, 16000)}}, nil), status: 400, code: apierr.BadRequest, field: "a.webp"},
		{name: "gzip body not decoded", method: "POST", path: "/pdf/qrcode", auth: "key", header: map[string]string{"Content-Encoding": "gzip"},
			body: rawBody("application/json", gzipped([]byte(`{"data":"x"}`))), status: 400, code: apierr.BadRequest},
		{name: "page width of a mile", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, `{"width":"63360in"}`), status: 400, code: apierr.BadRequest, field: "width"},
		{name: "page height 1e308", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, `{"height":"1e308mm"}`), status: 400, code: apierr.BadRequest, field: "height"},
		{name: "number that overflows", method: "POST", path: "/pdf/qrcode", auth: "key",
			body: jsonText(`{"data":"x","size":1e400}`), status: 400, code: apierr.BadRequest},
		{name: "QR size a billion", method: "POST", path: "/pdf/qrcode", auth: "key",
			body: jsonText(`{"data":"x","size":1000000000}`), status: 400, code: apierr.BadRequest, field: "size"},
		{name: "QR size negative", method: "POST", path: "/pdf/qrcode", auth: "key",
			body: jsonText(`{"data":"x","size":-5}`), status: 400, code: apierr.BadRequest, field: "size"},
		{name: "QR margin 1000", method: "POST", path: "/pdf/qrcode", auth: "key",
			body: jsonText(`{"data":"x","margin":1000}`), status: 400, code: apierr.BadRequest, field: "margin"},
		{name: "QR data beyond capacity", method: "POST", path: "/pdf/qrcode", auth: "key",
			body: jsonText(`{"data":"` + strings.Repeat("x", 8000) + `"}`), status: 400, code: apierr.BadRequest, field: "data"},
		{name: "QR body of 1 MiB", method: "POST", path: "/pdf/qrcode", auth: "key",
			body: jsonText(`{"data":"` + strings.Repeat("x", 1<<20) + `"}`), status: 413, code: apierr.PayloadTooLarge},
		{name: "data-qr of 5000 pixels", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{htmlFile("index.html", `<img data-qr="x" data-qr-size="5000">`)}, nil), status: 400, code: apierr.BadRequest},
		{name: "batch over the plan's maximum", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: jsonBody(map[string]any{"documents": manyDocs(11)}), status: 400, code: apierr.BadRequest, field: "documents"},

		// --- deep and odd JSON ---
		{name: "options nested 100k deep", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, deepJSON(100_000)), status: 400, code: apierr.BadRequest},
		{name: "batch nested 100k deep", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: jsonText(`{"documents":` + deepJSON(100_000) + `}`), status: 400, code: apierr.BadRequest},
		{name: "QR request nested deep", method: "POST", path: "/pdf/qrcode", auth: "key",
			body: jsonText(`{"data":` + deepJSON(10_000) + `}`), status: 400, code: apierr.BadRequest},
		{name: "login nested deep", method: "POST", path: "/api/auth/login",
			body: jsonText(`{"email":` + deepJSON(5000) + `}`), status: 400, code: apierr.BadRequest},
		{name: "options as UTF-16", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, "\xff\xfe{\x00}\x00"), status: 400, code: apierr.BadRequest},
		{name: "options with a NUL", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, "{\"format\":\"A4\x00\"}"), status: 400, code: apierr.BadRequest},
		{name: "options NaN", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, `{"width":NaN}`), status: 400, code: apierr.BadRequest},
		{name: "options of 2 MiB", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, `{"fileName":"`+strings.Repeat("a", 2<<20)+`"}`), status: 400, code: apierr.BadRequest, field: "options"},
		{name: "fileName of 10k characters", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody([]file{index}, `{"fileName":"`+strings.Repeat("a", 10_000)+`"}`), status: 400, code: apierr.BadRequest, field: "fileName"},
		{name: "batch documents not an array", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: jsonText(`{"documents":{"0":{}}}`), status: 400, code: apierr.BadRequest, field: "documents"},
		{name: "batch htmlContent a number", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: jsonText(`{"documents":[{"fileName":"a","htmlContent":5}]}`), status: 400, code: apierr.BadRequest, field: "htmlContent"},
		{name: "batch empty", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: jsonText(`{"documents":[]}`), status: 400, code: apierr.BadRequest, field: "documents"},
		{name: "batch trailing garbage", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: jsonText(`{"documents":[{"fileName":"a","htmlContent":"x"}]} {}`), status: 400, code: apierr.BadRequest},
		{name: "batch webhook to zoned loopback", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: jsonText(`{"documents":[{"fileName":"a","htmlContent":"x"}],"stream":true,"webhook":{"url":"http://[::1%25lo]:9/"}}`), status: 400, code: apierr.BadRequest, field: "webhook.url"},
		{name: "batch webhook to metadata", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: jsonText(`{"documents":[{"fileName":"a","htmlContent":"x"}],"stream":true,"webhook":{"url":"http://169.254.169.254/"}}`), status: 400, code: apierr.BadRequest, field: "webhook.url"},
		{name: "register body of 50 MiB", method: "POST", path: "/api/auth/register",
			body: jsonText(`{"email":"` + strings.Repeat("a", 50<<20) + `"}`), status: 413, code: apierr.PayloadTooLarge},
		{name: "key creation body of 2 MiB", method: "POST", path: "/api/keys", auth: "bearer",
			body: jsonText(`{"name":"` + strings.Repeat("a", 2<<20) + `"}`), status: 413, code: apierr.PayloadTooLarge},
		{name: "register with an array", method: "POST", path: "/api/auth/register",
			body: jsonText(`[1,2,3]`), status: 400, code: apierr.BadRequest},
		{name: "change-plan to a made-up plan", method: "POST", path: "/api/billing/subscription/change-plan", auth: "bearer",
			body: jsonText(`{"plan":"platinum"}`), status: 400, code: apierr.BadRequest, field: "plan"},
		{name: "key expiry in a made-up format", method: "POST", path: "/api/keys", auth: "bearer",
			body: jsonText(`{"name":"k","expiresAt":"tomorrow"}`), status: 400, code: apierr.BadRequest, field: "expiresAt"},

		// --- bad multipart ---
		{name: "multipart without boundary", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawBody("multipart/form-data", []byte("--x\r\n\r\n--x--")), status: 400, code: apierr.BadRequest},
		{name: "multipart boundary of 5000 characters", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawMultipart(strings.Repeat("b", 5000), filePart("index.html", simpleHTML)), status: 400, code: apierr.BadRequest},
		{name: "multipart never closed", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawBody("multipart/form-data; boundary=zz", []byte("--zz\r\n"+filePart("index.html", simpleHTML))), status: 400, code: apierr.BadRequest},
		{name: "multipart part with 20k headers", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawMultipart("zz", strings.Repeat("X-A: b\r\n", 20_000)+filePart("index.html", simpleHTML)), status: 400, code: apierr.BadRequest},
		{name: "file name with a NUL", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawMultipart("zz", filePart("index\x00.html", simpleHTML)), status: 400, code: apierr.BadRequest},
		{name: "file name absolute", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawMultipart("zz", filePart("/etc/passwd.html", simpleHTML)), status: 400, code: apierr.BadRequest},
		{name: "file name with backslashes up", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawMultipart("zz", filePart(`..\..\index.html`, simpleHTML)), status: 400, code: apierr.BadRequest},
		{name: "file name not UTF-8", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawMultipart("zz", filePart("ind\xffex.html", simpleHTML)), status: 400, code: apierr.BadRequest, field: "files"},
		{name: "merge file name not UTF-8", method: "POST", path: "/pdf/merge", auth: "key",
			body: rawMultipart("zz", "Content-Disposition: form-data; name=\"files\"; filename=\"a\xfe.pdf\"\r\nContent-Type: application/pdf\r\n\r\n"+string(pdf)), status: 400, code: apierr.BadRequest, field: "files"},
		{name: "file name of 1000 characters", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawMultipart("zz", filePart(strings.Repeat("a", 1000)+".html", simpleHTML)), status: 400, code: apierr.BadRequest},
		{name: "1001 files", method: "POST", path: "/pdf/generate", auth: "key",
			body: multipartBody(manyFiles(1001), nil), status: 400, code: apierr.BadRequest},
		{name: "merge of a PDF that is only a header", method: "POST", path: "/pdf/merge", auth: "key",
			body: multipartBody([]file{{Name: "a.pdf", Type: "application/pdf", Data: []byte("%PDF-1.7\n%%EOF")}}, nil), status: 400, code: apierr.BadRequest, field: "a.pdf"},
		{name: "merge of a truncated PDF", method: "POST", path: "/pdf/merge", auth: "key",
			body: multipartBody([]file{{Name: "cut.pdf", Type: "application/pdf", Data: pdf[:len(pdf)/2]}}, nil), status: 400, code: apierr.BadRequest, field: "cut.pdf"},
		{name: "merge of a PNG named .pdf", method: "POST", path: "/pdf/merge", auth: "key",
			body: multipartBody([]file{{Name: "x.pdf", Type: "application/pdf", Data: png}}, nil), status: 400, code: apierr.BadRequest},

		// --- path tricks ---
		{name: "view with a dotted path", method: "GET", path: "/pdf/view/..%2f..%2fetc%2fpasswd", status: 404, code: apierr.NotFound},
		{name: "download with a NUL", method: "GET", path: "/pdf/download/%00", status: 404, code: apierr.NotFound},
		{name: "hosted ID of 4096 characters", method: "GET", path: "/api/hosted-pdfs/" + longID, status: 404, code: apierr.NotFound},
		{name: "metadata of a unicode ID", method: "GET", path: "/pdf/metadata/%E2%80%AE" + stored.PdfID, status: 404, code: apierr.NotFound},
		{name: "progress of a traversal", method: "GET", path: "/pdf/progress/..%2F..%2Fstate.db", auth: "key", status: 404, progress: true},
		{name: "progress of an ID of 4096 characters", method: "GET", path: "/pdf/progress/" + longID, auth: "key", status: 404, progress: true},
		{name: "hosted file of another path case", method: "GET", path: "/API/HOSTED-PDFS/" + stored.PdfID, status: 404, code: apierr.NotFound},
		{name: "delete of a traversal", method: "DELETE", path: "/api/hosted-pdfs/..%2Fx", auth: "bearer", status: 404, code: apierr.NotFound},
		{name: "revoke of a key ID of 4096 characters", method: "DELETE", path: "/api/keys/" + longID, auth: "bearer", status: 404, code: apierr.NotFound},
		{name: "double-encoded route", method: "GET", path: "/pdf/%2576iew/" + stored.PdfID, status: 404, code: apierr.NotFound},
		{name: "private file without credentials", method: "GET", path: "/pdf/download/" + stored.PdfID, status: 401},
		{name: "TRACE on a route", method: "TRACE", path: "/pdf/generate", status: 405, code: apierr.MethodNotAllowed},

		// --- header tricks ---
		{name: "API key of 10 KiB", method: "POST", path: "/pdf/qrcode", header: map[string]string{"X-API-Key": strings.Repeat("k", 10<<10)},
			body: jsonText(`{"data":"x"}`), status: 401},
		{name: "empty bearer", method: "POST", path: "/pdf/qrcode", header: map[string]string{"Authorization": "Bearer "},
			body: jsonText(`{"data":"x"}`), status: 401},
		{name: "key with a non-ASCII byte", method: "POST", path: "/pdf/qrcode", header: map[string]string{"X-API-Key": "drk_\xc3\xa9" + strings.Repeat("a", 39)},
			body: jsonText(`{"data":"x"}`), status: 401},
		{name: "basic auth instead of a key", method: "POST", path: "/pdf/generate", header: map[string]string{"Authorization": "Basic YTpi"},
			body: multipartBody([]file{index}, nil), status: 401},
		{name: "session token as an API key", method: "POST", path: "/pdf/qrcode", header: map[string]string{"X-API-Key": c.Token},
			body: jsonText(`{"data":"x"}`), status: 401},
		{name: "cookie session from another site", method: "POST", path: "/api/keys", auth: "cookie",
			header: map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
			body:   jsonText(`{"name":"stolen"}`), status: 403, code: apierr.Forbidden},
		{name: "cookie render from another site", method: "POST", path: "/pdf/generate", auth: "cookie",
			header: map[string]string{"Origin": "https://evil.example"},
			body:   multipartBody([]file{index}, nil), status: 403, code: apierr.Forbidden},
		{name: "content type with 10k parameters", method: "POST", path: "/pdf/generate", auth: "key",
			body: rawBody("multipart/form-data; boundary=x"+strings.Repeat("; a=b", 10_000), []byte("--x--")), status: 400, code: apierr.BadRequest},
		{name: "JSON route given form data", method: "POST", path: "/pdf/generate-batch", auth: "key",
			body: multipartBody([]file{index}, nil), status: 400, code: apierr.BadRequest},
		{name: "request ID with control characters", method: "POST", path: "/pdf/qrcode", auth: "key",
			header: map[string]string{"X-Request-ID": "r\xc3\xa9q<script>" + strings.Repeat("x", 300)}, body: jsonText(`{"data":`), status: 400, code: apierr.BadRequest},
		{name: "admin API while it is off", method: "GET", path: "/api/admin/accounts",
			header: map[string]string{"Authorization": "Bearer " + strings.Repeat("x", 32)}, status: 404, code: apierr.NotFound},
		// Last: were it let through, the account would be gone.
		{name: "cookie account deletion from a sibling site", method: "DELETE", path: "/api/auth/account", auth: "cookie",
			header: map[string]string{"Sec-Fetch-Site": "same-site"}, status: 403, code: apierr.Forbidden},
	}
	if len(cases) < 60 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.hostile(tc)
			if tc.progress {
				var p progressRecord
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
				}
				decode(t, resp, &p)
				if p.Status != "not_found" {
					t.Fatalf("progress %+v", p)
				}
				return
			}
			e := expectError(t, resp, tc.status, tc.code)
			if tc.field != "" && !strings.Contains(e.Message, tc.field) {
				t.Errorf("message %q does not name %s", e.Message, tc.field)
			}
			if id := resp.Header.Get("X-Request-ID"); strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
				t.Errorf("response request ID %q carries control characters", id)
			}
		})
	}

	// Healthy afterwards: ready, renders, nothing charged, nothing left.
	resp, err := http.Get(svc.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, resp, http.StatusOK)
	resp.Body.Close()
	c.generatePDF(simpleHTML, nil)
	if used := c.usage(); used != usedBefore+1 {
		t.Errorf("conversions used %d, want %d: a refused request was charged", used, usedBefore+1)
	}
	http.DefaultClient.CloseIdleConnections()
	c.http.CloseIdleConnections()
	idle(t, svc)
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= goroutinesBefore+5 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines %d, before %d:\n%s", n, goroutinesBefore, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if left := jobFilesSettled(t, dir); len(left) != 0 {
		t.Errorf("temporary job files left behind: %v", left)
	}
}

// jobFilesSettled is jobFiles once the last answer's cleanup ran: a
// request deletes its job's files right after its answer went out (the
// answer is flushed first), so they may outlive the answer by a moment.
func jobFilesSettled(t *testing.T, dataDir string) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := jobFiles(t, dataDir)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hostile sends tc with the credentials it names.
func (c *client) hostile(tc hostileCase) *http.Response {
	c.t.Helper()
	var r io.Reader
	if tc.body.r != nil {
		r = tc.body.r
	}
	req, err := http.NewRequest(tc.method, c.svc.URL+tc.path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if strings.Contains(tc.path, "%") {
		req.URL.RawPath = tc.path
	}
	if tc.body.ctype != "" {
		req.Header.Set("Content-Type", tc.body.ctype)
	}
	switch tc.auth {
	case "key":
		req.Header.Set("X-API-Key", c.Key)
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+c.Token)
	case "cookie":
		req.AddCookie(&http.Cookie{Name: "docrender_session", Value: c.Token})
	}
	for k, v := range tc.header {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func manyDocs(n int) []map[string]any {
	docs := make([]map[string]any, n)
	for i := range docs {
		docs[i] = map[string]any{"fileName": fmt.Sprintf("d%d", i), "htmlContent": "<p>x</p>"}
	}
	return docs
}

func manyFiles(n int) []file {
	fs := []file{htmlFile("index.html", simpleHTML)}
	for i := 1; i < n; i++ {
		fs = append(fs, file{Name: fmt.Sprintf("f%d.css", i), Type: "text/css", Data: []byte("p{}")})
	}
	return fs
}

// idle waits until the service has no job in its queue.
func idle(t *testing.T, svc *service) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		n, err := svc.App.Queue().Depth(ctx)
		cancel()
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue not idle: %d jobs, %v", n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jobFiles lists what is left under the blob store's temporary prefixes.
func jobFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	var out []string
	for _, prefix := range []string{"jobs", "batches"} {
		root := filepath.Join(dataDir, "blobs", prefix)
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, strings.TrimPrefix(p, dataDir))
			}
			return nil
		})
	}
	return out
}

// A restart on the same data directory after hostile requests comes up
// healthy: nothing they left in the job stream or the stores keeps the
// service down (issue 10: a poisoned job used to crash every restart).
func TestRestartAfterHostileRequestsIsHealthy(t *testing.T) {
	dir := t.TempDir()
	svc, stop, err := launch(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, svc)
	bomb := fmt.Sprintf(`{"watermark":{"image":%q}}`, b64(limitstest.BombPNG(10_000_000, 10_000_000)))
	expectError(t, c.generate([]file{htmlFile("index.html", simpleHTML)}, bomb), 400, apierr.BadRequest)

	// The same image in a job that never passed the gateway's checks (an
	// older gateway, a hand-made message): the worker refuses it too. It
	// used to panic in png.Decode and take the whole process down.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, blobs := svc.App.Queue(), svc.App.Server.Blobs
	if err := blobs.Put(ctx, "jobs/poison/in/index.html", strings.NewReader(simpleHTML), -1); err != nil {
		t.Fatal(err)
	}
	p, err := q.Submit(ctx, &jobspb.Job{Id: "poison", OutputKey: "jobs/poison/out.pdf", Kind: &jobspb.Job_Render{Render: &jobspb.RenderJob{
		BundlePrefix: "jobs/poison/in/", Files: []string{"index.html"}, Entry: "index.html",
		Page:      &jobspb.Page{WidthIn: 8.27, HeightIn: 11.69},
		Watermark: &jobspb.Watermark{ImagePng: limitstest.BombPNG(10_000_000, 10_000_000), Opacity: 0.3, Position: "center", Pages: "all", Color: "#888888"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorKind == jobspb.ErrorKind_ERROR_KIND_NONE {
		t.Fatalf("a bomb watermark was stamped: %v", res)
	}
	c.generatePDF(simpleHTML, nil)
	stop()

	svc2, stop2, err := launch(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	resp, err := http.Get(svc2.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, resp, http.StatusOK)
	resp.Body.Close()
	c2 := newClient(t, svc2)
	if pdf := c2.generatePDF(simpleHTML, nil); info(t, pdf).Pages != 1 {
		t.Fatal("no one-page PDF after the restart")
	}
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Fatalf("the restart did not reuse the data directory: %v", err)
	}
}
