package e2e

import (
	"bytes"
	"crypto/rand"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/server/apierr"
)

func TestGenerateBadRequests(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	index := htmlFile("index.html", simpleHTML)
	tests := []struct {
		name   string
		body   body
		status int
		code   string
		field  string
		check  func(t *testing.T, e errorBody)
	}{
		{name: "no files part", body: multipartBody(nil, map[string]any{"format": "A4"}), status: 400, code: apierr.BadRequest,
			check: func(t *testing.T, e errorBody) {
				if !strings.Contains(e.Message, "files") {
					t.Errorf("message %q does not name the files key", e.Message)
				}
			}},
		{name: "files under another key", body: multipartBody([]file{{Field: "file", Name: "index.html", Data: []byte(simpleHTML)}}, nil), status: 400, code: apierr.BadRequest,
			check: func(t *testing.T, e errorBody) {
				if !strings.Contains(e.Hint, `"files"`) {
					t.Errorf("hint %q does not point at the right key", e.Hint)
				}
			}},
		{name: "no html among files", body: multipartBody([]file{{Name: "style.css", Type: "text/css", Data: []byte("p{}")}, {Name: "logo.png", Type: "image/png", Data: []byte("x")}}, nil), status: 400, code: apierr.BadRequest,
			check: func(t *testing.T, e errorBody) {
				rf, ok := e.Raw["receivedFiles"].([]any)
				if !ok || len(rf) != 2 {
					t.Fatalf("receivedFiles = %v", e.Raw["receivedFiles"])
				}
				first := rf[0].(map[string]any)
				if first["name"] != "style.css" || first["mimetype"] != "text/css" || len(first) != 2 {
					t.Errorf("receivedFiles[0] = %v", first)
				}
				if e.Hint == "" {
					t.Error("no hint")
				}
			}},
		{name: "json body instead of multipart", body: jsonBody(map[string]any{"html": simpleHTML}), status: 400, code: apierr.BadRequest},
		{name: "no body", body: body{nil, ""}, status: 400, code: apierr.BadRequest},
		{name: "broken multipart", body: body{strings.NewReader("--xx\r\ngarbage"), "multipart/form-data; boundary=xx"}, status: 400, code: apierr.BadRequest},
		{name: "unparseable options", body: multipartBody([]file{index}, `{"format": "A4"`), status: 400, code: apierr.BadRequest},
		{name: "options not an object", body: multipartBody([]file{index}, `[1,2]`), status: 400, code: apierr.BadRequest},
		{name: "path escaping file name", body: multipartBody([]file{htmlFile("../index.html", simpleHTML)}, nil), status: 400, code: apierr.BadRequest},
		{name: "duplicate file names", body: multipartBody([]file{index, index}, nil), status: 400, code: apierr.BadRequest},
	}
	invalid := []struct {
		field string
		opts  string
	}{
		{"format", `{"format":"B5"}`},
		{"format", `{"format":7}`},
		{"orientation", `{"orientation":"sideways"}`},
		{"landscape", `{"orientation":"portrait","landscape":true}`},
		{"width", `{"width":"12 parsecs"}`},
		{"width", `{"width":"-3in"}`},
		{"height", `{"height":"0mm"}`},
		{"margin.top", `{"margin":{"top":"1furlong"}}`},
		{"margin.middle", `{"margin":{"middle":"1cm"}}`},
		{"margin", `{"margin":{"top":"6in","bottom":"6in"}}`},
		{"preferCSSPageSize", `{"preferCSSPageSize":"yes"}`},
		{"fileName", `{"fileName":""}`},
		{"userType", `{"userType":"admin"}`},
		{"documentId", `{"documentId":"a","appointmentId":"b"}`},
		{"watermark.opacity", `{"watermark":{"text":"x","opacity":3}}`},
	}
	for _, iv := range invalid {
		tests = append(tests, struct {
			name   string
			body   body
			status int
			code   string
			field  string
			check  func(t *testing.T, e errorBody)
		}{name: "invalid " + iv.opts, body: multipartBody([]file{index}, iv.opts), status: 400, code: apierr.BadRequest, field: iv.field})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.withKey("POST", "/pdf/generate", tc.body)
			e := expectError(t, resp, tc.status, tc.code)
			if tc.field != "" && !strings.Contains(e.Message, tc.field) {
				t.Errorf("message %q does not name %s", e.Message, tc.field)
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
	// None of that cost a conversion, and the service still renders.
	c.generatePDF(simpleHTML, nil)
}

func TestBodyTooLarge(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	big := bytes.Repeat([]byte("a"), 9<<20) // the test service allows 8 MiB
	resp := c.generate([]file{htmlFile("index.html", simpleHTML), {Name: "big.bin", Data: big}}, nil)
	e := expectError(t, resp, http.StatusRequestEntityTooLarge, apierr.PayloadTooLarge)
	if !strings.Contains(e.Message, "8388608") {
		t.Errorf("message %q does not state the limit", e.Message)
	}
	// Chunked, without Content-Length: refused while reading.
	req, _ := http.NewRequest("POST", svc.URL+"/pdf/generate", struct{ *bytes.Reader }{bytes.NewReader(multipartBytes(t, big))})
	req.Header.Set("X-API-Key", c.Key)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
	req.ContentLength = -1
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, r2, http.StatusRequestEntityTooLarge, apierr.PayloadTooLarge)
	c.generatePDF(simpleHTML, nil)
}

func multipartBytes(t *testing.T, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("--B\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.html\"\r\n\r\n")
	b.Write(data)
	b.WriteString("\r\n--B--\r\n")
	return b.Bytes()
}

// A page that never finishes, by a script that never ends (navigated to)
// or by an image that never arrives (written without scripts), is a 500
// at the render timeout; the next render works.
func TestRenderTimeoutThenHealthy(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hang := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})}
	go hang.Serve(ln)
	t.Cleanup(func() { hang.Close() })
	svc := startService(t, func(cfg *configT) {
		cfg.RenderTimeout = 3 * time.Second
		cfg.RenderAllowHosts = []string{ln.Addr().String()}
	})
	c := newClient(t, svc)
	tests := []struct{ name, html string }{
		{"script that never ends", `<script>while(true){}</script><p>never</p>`},
		{"image that never arrives", `<p>never</p><img src="http://` + ln.Addr().String() + `/x.png">`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			used := c.usage()
			start := time.Now()
			resp := c.generate([]file{htmlFile("index.html", tc.html)}, nil)
			e := expectError(t, resp, http.StatusInternalServerError, apierr.Internal)
			if !strings.Contains(e.Message, "time limit") {
				t.Errorf("message %q", e.Message)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("timeout answered after %s", d)
			}
			// The conversion is given back and the next render works.
			if got := c.usage(); got != used {
				t.Errorf("conversions used after a failed render = %d, want %d", got, used)
			}
			pdf := c.generatePDF(simpleHTML, nil)
			if !strings.Contains(text(t, pdf), "Hello docrender") {
				t.Fatal("next render broken")
			}
			if got := c.usage(); got != used+1 {
				t.Errorf("conversions used = %d, want %d", got, used+1)
			}
		})
	}
}

// usage reads this month's conversions from the account service.
func (c *client) usage() int64 {
	c.t.Helper()
	u, err := c.svc.App.Server.Accounts().User(c.t.Context(), c.UserID)
	if err != nil {
		c.t.Fatal(err)
	}
	n, err := c.svc.App.Server.Accounts().ConversionsUsed(c.t.Context(), u)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

func TestUnknownRouteAndMethod(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	expectError(t, c.withKey("GET", "/pdf/nothing-here", body{}), http.StatusNotFound, apierr.NotFound)
	expectError(t, c.withKey("GET", "/pdf/generate", body{}), http.StatusMethodNotAllowed, apierr.MethodNotAllowed)
}

func TestAuthentication(t *testing.T) {
	svc := sharedService(t)
	owner := newClient(t, svc)
	gen := func(header map[string]string) *http.Response {
		b := multipartBody([]file{htmlFile("index.html", simpleHTML)}, nil)
		req, _ := http.NewRequest("POST", svc.URL+"/pdf/generate", b.r)
		req.Header.Set("Content-Type", b.ctype)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	nonexistent := "drk_" + strings.Repeat("A", 40)
	// A revoked key.
	revoked := newClient(t, svc)
	mustStatus(t, revoked.do("DELETE", "/api/keys/"+revoked.KeyID, body{}, nil), http.StatusOK)
	// An expired key.
	expiring := newClient(t, svc)
	resp := expiring.do("POST", "/api/keys", jsonBody(map[string]any{"name": "short", "expiresAt": time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)}), nil)
	mustStatus(t, resp, http.StatusCreated)
	var ek struct {
		Data struct{ Key string } `json:"data"`
	}
	decode(t, resp, &ek)
	// A deleted user's key.
	deleted := newClient(t, svc)
	mustStatus(t, deleted.do("DELETE", "/api/auth/account", body{}, nil), http.StatusOK)
	time.Sleep(1600 * time.Millisecond)

	tests := []struct {
		name    string
		header  map[string]string
		message string
	}{
		{"missing", nil, "API key required"},
		{"malformed", map[string]string{"X-API-Key": "not-a-key"}, "Malformed API key."},
		{"malformed bearer", map[string]string{"Authorization": "Bearer drk_short"}, "Malformed API key."},
		{"wrong scheme", map[string]string{"Authorization": "Basic " + owner.Key}, "Malformed API key."},
		{"revoked", map[string]string{"X-API-Key": revoked.Key}, "API key has been revoked."},
		{"nonexistent", map[string]string{"X-API-Key": nonexistent}, "Invalid or expired API key."},
		{"expired", map[string]string{"X-API-Key": ek.Data.Key}, "Invalid or expired API key."},
		{"deleted user", map[string]string{"Authorization": "Bearer " + deleted.Key}, "Invalid or expired API key."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := expectError(t, gen(tc.header), http.StatusUnauthorized, "")
			if !strings.Contains(e.Message, tc.message) {
				t.Fatalf("message %q, want %q", e.Message, tc.message)
			}
			if strings.HasPrefix(tc.message, "Invalid") && e.Message != "Invalid or expired API key." {
				t.Fatalf("message %q is not the spec's exact text", e.Message)
			}
		})
	}
	for name, h := range map[string]map[string]string{
		"X-API-Key":     {"X-API-Key": owner.Key},
		"Bearer":        {"Authorization": "Bearer " + owner.Key},
		"bearer (case)": {"Authorization": "bearer " + owner.Key},
	} {
		t.Run("valid "+name, func(t *testing.T) {
			resp := gen(h)
			mustStatus(t, resp, http.StatusOK)
			readAll(t, resp)
		})
	}
}

func TestAccountsAndKeys(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	// Duplicate email → 409; bad input → 400; wrong password → 401.
	expectError(t, c.do("POST", "/api/auth/register", jsonBody(map[string]any{"email": c.Email, "password": "another pass"}), nil), http.StatusConflict, apierr.Conflict)
	expectError(t, c.do("POST", "/api/auth/register", jsonBody(map[string]any{"email": "nope", "password": "long enough"}), nil), http.StatusBadRequest, apierr.BadRequest)
	expectError(t, c.do("POST", "/api/auth/register", jsonBody(map[string]any{"email": "x" + c.Email, "password": "short"}), nil), http.StatusBadRequest, apierr.BadRequest)
	expectError(t, c.do("POST", "/api/auth/login", jsonBody(map[string]any{"email": c.Email, "password": "wrong password"}), nil), http.StatusUnauthorized, "")

	// Login gives a token that works as a bearer on /api routes.
	resp := c.do("POST", "/api/auth/login", jsonBody(map[string]any{"email": strings.ToUpper(c.Email), "password": "correct horse"}), nil)
	mustStatus(t, resp, http.StatusOK)
	var login struct {
		Data struct{ Token string } `json:"data"`
	}
	decode(t, resp, &login)
	anon := &client{t: t, svc: svc, http: &http.Client{}}
	resp = anon.do("GET", "/api/keys", body{}, map[string]string{"Authorization": "Bearer " + login.Data.Token})
	mustStatus(t, resp, http.StatusOK)
	var list struct {
		Success bool             `json:"success"`
		Data    []map[string]any `json:"data"`
	}
	decode(t, resp, &list)
	if !list.Success || len(list.Data) != 1 || list.Data[0]["id"] != c.KeyID {
		t.Fatalf("key list = %+v", list)
	}
	if _, leaked := list.Data[0]["key"]; leaked {
		t.Fatal("list shows the secret")
	}
	if p, _ := list.Data[0]["prefix"].(string); !strings.HasPrefix(c.Key, p) || len(p) < 6 {
		t.Fatalf("prefix %q", p)
	}
	// Keys have the documented form.
	if !strings.HasPrefix(c.Key, "drk_") || len(c.Key) != 44 {
		t.Fatalf("key %q", c.Key)
	}
	// No session → 401 shape B; a made-up session → 401.
	expectError(t, anon.do("GET", "/api/keys", body{}, nil), http.StatusUnauthorized, "")
	expectError(t, anon.do("GET", "/api/keys", body{}, map[string]string{"Authorization": "Bearer " + rand.Text()}), http.StatusUnauthorized, "")
	// Another user cannot revoke this key.
	other := newClient(t, svc)
	expectError(t, other.do("DELETE", "/api/keys/"+c.KeyID, body{}, nil), http.StatusNotFound, apierr.NotFound)
	// Logout ends the session.
	mustStatus(t, anon.do("POST", "/api/auth/logout", body{}, map[string]string{"Authorization": "Bearer " + login.Data.Token}), http.StatusOK)
	expectError(t, anon.do("GET", "/api/keys", body{}, map[string]string{"Authorization": "Bearer " + login.Data.Token}), http.StatusUnauthorized, "")
	// Session cookie attributes.
	resp = anon.do("POST", "/api/auth/login", jsonBody(map[string]any{"email": c.Email, "password": "correct horse"}), nil)
	mustStatus(t, resp, http.StatusOK)
	readAll(t, resp)
	ck := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"docrender_session=", "HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(ck, want) {
			t.Errorf("Set-Cookie %q lacks %s", ck, want)
		}
	}
}
