package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/docrender/docrender/gateway/apidoc"
	"github.com/docrender/docrender/pkg/queue"
)

// The OpenAPI document (gateway/apidoc) against the gateway itself: the
// routes it registers, the credentials each takes, the error codes it can
// send, and real answers checked by libopenapi-validator.

// notInDocument are the registered routes the document leaves out on
// purpose, by path prefix, with why.
var notInDocument = map[string]string{
	"/metrics":   "Prometheus exposition for operators, not the API; moves to DOCRENDER_METRICS_ADDR when set",
	"/dashboard": "the dashboard's page and files, for people in a browser (DESIGN §7)",
}

// notInDocumentExact are excluded paths that would be prefixes of everything.
var notInDocumentExact = map[string]string{
	"/": "redirects a browser to /dashboard",
}

var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// openAPIPath writes an Echo route path in the document's form (:id → {id}).
func openAPIPath(p string) string { return echoParam.ReplaceAllString(p, "{$1}") }

// documented is the document's operations as "METHOD /path".
func documented(t *testing.T) map[string]map[string]any {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(apidoc.Raw(), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for path, item := range doc.Paths {
		for m, raw := range item {
			if m == "parameters" || m == "summary" || m == "description" || m == "servers" {
				continue
			}
			var op map[string]any
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			out[strings.ToUpper(m)+" "+path] = op
		}
	}
	return out
}

// TestDocumentDescribesEveryRoute: the routes the gateway registers (with
// the admin token set and /metrics on the API address, so every route is
// there) are exactly the operations of the document, HEAD aside (every
// HEAD is its GET without the body, said in the GET's description).
func TestDocumentDescribesEveryRoute(t *testing.T) {
	g := newGateway(t, nil)
	registered := map[string]bool{}
	gets := map[string]bool{}
	var heads []string
	for _, r := range g.srv.e.Routes() {
		if reason := excluded(r.Path); reason != "" {
			continue
		}
		p := openAPIPath(r.Path)
		switch r.Method {
		case http.MethodHead:
			heads = append(heads, p)
		case http.MethodGet:
			gets[p] = true
			registered[r.Method+" "+p] = true
		default:
			registered[r.Method+" "+p] = true
		}
	}
	for _, p := range heads {
		if !gets[p] {
			t.Errorf("HEAD %s has no GET: the document cannot describe it as one", p)
		}
	}
	doc := documented(t)
	for op := range registered {
		if doc[op] == nil {
			t.Errorf("the gateway serves %s but the document does not describe it", op)
		}
	}
	for op := range doc {
		if !registered[op] {
			t.Errorf("the document describes %s but the gateway does not serve it", op)
		}
	}
	if len(registered) < 30 {
		t.Fatalf("only %d routes registered: the comparison would prove little", len(registered))
	}
}

// excluded is why path is not in the document, "" when it must be.
func excluded(path string) string {
	if r, ok := notInDocumentExact[path]; ok {
		return r
	}
	for prefix, r := range notInDocument {
		if path == prefix || strings.HasPrefix(path, prefix+"/") {
			return r
		}
	}
	return ""
}

// TestDocumentSecurityMatchesRouteAuth: each route's credentials in the
// document are the ones its guard in routeTable takes.
func TestDocumentSecurityMatchesRouteAuth(t *testing.T) {
	g := newGateway(t, nil)
	want := map[auth][]string{
		apiKey:       {"apiKeyBearer", "apiKeyHeader", "sessionCookie"},
		keyOrSession: {"apiKeyBearer", "apiKeyHeader", "sessionBearer", "sessionCookie"},
		session:      {"sessionBearer", "sessionCookie"},
		admin:        {"adminBearer"},
	}
	doc := documented(t)
	for _, r := range g.srv.routeTable() {
		if excluded(r.path) != "" {
			continue
		}
		for _, m := range r.methods {
			if m == http.MethodHead {
				continue
			}
			name := m + " " + openAPIPath(r.path)
			op := doc[name]
			if op == nil {
				continue // TestDocumentDescribesEveryRoute says so
			}
			schemes, optional := securityOf(t, op)
			switch r.auth {
			case public:
				if !optional {
					t.Errorf("%s is public, but the document requires %v", name, schemes)
				}
			default:
				if optional || !slices.Equal(schemes, want[r.auth]) {
					t.Errorf("%s: document security %v (optional %v), want %v", name, schemes, optional, want[r.auth])
				}
			}
		}
	}
}

// securityOf is an operation's schemes (sorted) and whether it may be
// called without any (an empty requirement, or none).
func securityOf(t *testing.T, op map[string]any) (schemes []string, optional bool) {
	t.Helper()
	reqs, ok := op["security"].([]any)
	if !ok {
		t.Fatalf("operation %v has no security list", op["operationId"])
	}
	optional = len(reqs) == 0
	for _, r := range reqs {
		m, _ := r.(map[string]any)
		if len(m) == 0 {
			optional = true
		}
		for k := range m {
			schemes = append(schemes, k)
		}
	}
	slices.Sort(schemes)
	return schemes, optional
}

// TestDocumentErrorCodes: the document's error codes are every code the
// gateway can put in a shape A body: apierr's constants (but 401's, which
// is shape B) and edge.go's REQUEST_TIMEOUT.
func TestDocumentErrorCodes(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "apierr/apierr.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := []string{"REQUEST_TIMEOUT"}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if c, _ := strconv.Unquote(lit.Value); c != "UNAUTHORIZED" {
						codes = append(codes, c)
					}
				}
			}
		}
		return true
	})
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(apidoc.Raw(), &doc); err != nil {
		t.Fatal(err)
	}
	enum := doc.Components.Schemas.Error.Properties.Code.Enum
	slices.Sort(codes)
	slices.Sort(enum)
	if len(codes) < 10 || !slices.Equal(codes, enum) {
		t.Fatalf("document codes %v, gateway codes %v", enum, codes)
	}
}

// call is one request whose answer is checked against the document.
type call struct {
	name         string
	method, path string
	// body is JSON (any), a *form2, or raw bytes sent as JSON.
	body   any
	header map[string]string
	status int
}

// TestAnswersMatchDocument sends real requests through the gateway and
// checks each answer (status, content type, JSON body, declared headers)
// with libopenapi-validator against the document as served: successes
// and every error shape.
func TestAnswersMatchDocument(t *testing.T) {
	g := newGateway(t, nil)
	raw := g.do(req{method: "GET", path: "/openapi.json", key: "-"})
	raw.check(t, expect{status: 200, header: map[string]string{"Content-Type": "application/json"}})
	doc, err := libopenapi.NewDocument(raw.body)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	key := map[string]string{"X-API-Key": g.key}
	sess := map[string]string{"Authorization": "Bearer " + g.session()}
	admin := map[string]string{"Authorization": "Bearer " + adminToken}

	// What later calls need: a hosted file and a running batch.
	hosted := g.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"host":true}`, page)})
	hosted.check(t, expect{status: 200})
	pdfID, _ := hosted.json["pdfId"].(string)
	started := g.do(req{method: "POST", path: "/pdf/generate-batch", body: map[string]any{
		"stream": true, "documents": []map[string]string{{"fileName": "a", "htmlContent": "<p>a</p>"}}}})
	started.check(t, expect{status: 200})
	batchID, _ := started.json["batchId"].(string)
	if pdfID == "" || batchID == "" {
		t.Fatalf("setup: %s %s", hosted.body, started.body)
	}
	const unknown = "AAAAAAAAAAAAAAAAAAAAAA"
	_, otherKey := g.signUp("other@example.com")

	calls := []call{
		// Generation: binary and JSON successes, and shape A errors.
		{"generate pdf", "POST", "/pdf/generate", multipartBody(t, `{"format":"Letter"}`, page), key, 200},
		{"generate hosted", "POST", "/pdf/generate", multipartBody(t, `{"host":true,"userType":"registered"}`, page), key, 200},
		{"generate no key", "POST", "/pdf/generate", multipartBody(t, "", page), nil, 401},
		{"generate bad key", "POST", "/pdf/generate", multipartBody(t, "", page), map[string]string{"X-API-Key": "drk_nope"}, 401},
		{"generate json body", "POST", "/pdf/generate", map[string]any{"files": "x"}, key, 400},
		{"generate bad option", "POST", "/pdf/generate", multipartBody(t, `{"format":"B7"}`, page), key, 400},
		{"generate no html", "POST", "/pdf/generate", multipartBody(t, "", [2]string{"style.css", "p{}"}), key, 400},
		{"merge nothing", "POST", "/pdf/merge", multipartBody(t, ""), key, 400},
		{"merge", "POST", "/pdf/merge", multipartBody(t, "", [2]string{"a.pdf", fakePDF}, [2]string{"b.pdf", fakePDF}), key, 200},
		{"tool", "POST", "/pdf/flatten", multipartBody(t, "", [2]string{"a.pdf", fakePDF}), key, 200},
		{"tool hosted", "POST", "/pdf/pages", multipartBody(t, `{"select":"1","host":true}`, [2]string{"a.pdf", fakePDF}), key, 200},
		{"tool unknown option", "POST", "/pdf/images", multipartBody(t, `{"dpis":100}`, [2]string{"a.pdf", fakePDF}), key, 400},
		{"qr png", "POST", "/pdf/qrcode", map[string]any{"data": "https://example.com"}, key, 200},
		{"qr data url", "POST", "/pdf/qrcode", map[string]any{"data": "x", "format": "dataUrl"}, key, 200},
		{"qr bad size", "POST", "/pdf/qrcode", map[string]any{"data": "x", "size": 5}, key, 400},
		// Batches.
		{"batch no documents", "POST", "/pdf/generate-batch", map[string]any{"documents": []any{}}, key, 400},
		{"progress", "GET", "/pdf/progress/" + batchID, nil, key, 200},
		{"progress unknown", "GET", "/pdf/progress/" + unknown, nil, key, 404},
		{"progress of another account", "GET", "/pdf/progress/" + batchID, nil, map[string]string{"X-API-Key": otherKey}, 403},
		{"progress stream unknown", "GET", "/pdf/progress/" + unknown + "/stream", nil, key, 200},
		// Stored files.
		{"view", "GET", "/pdf/view/" + pdfID, nil, nil, 200},
		{"download", "GET", "/pdf/download/" + pdfID, nil, nil, 200},
		{"shared metadata", "GET", "/pdf/metadata/" + pdfID, nil, nil, 200},
		{"hosted file", "GET", "/api/hosted-pdfs/" + pdfID, nil, nil, 200},
		{"hosted metadata", "GET", "/api/hosted-pdfs/" + pdfID + "/metadata", nil, nil, 200},
		{"hosted list", "GET", "/api/hosted-pdfs/list?page=1&limit=5", nil, sess, 200},
		{"hosted list bad limit", "GET", "/api/hosted-pdfs/list?limit=1000", nil, sess, 400},
		{"hosted stats", "GET", "/api/hosted-pdfs/stats", nil, sess, 200},
		{"hosted list no session", "GET", "/api/hosted-pdfs/list", nil, nil, 401},
		{"delete hosted", "DELETE", "/api/hosted-pdfs/" + pdfID, nil, sess, 200},
		{"view deleted", "GET", "/pdf/view/" + pdfID, nil, nil, 404},
		// Templates (DESIGN §9).
		{"template upload", "POST", "/api/templates", multipartForm(t, [][2]string{{"name", "invoice"}, {"sampleData", `{"n":1}`}}, page), key, 201},
		{"template new version", "POST", "/api/templates", multipartForm(t, [][2]string{{"name", "invoice"}}, page), sess, 201},
		{"template refused", "POST", "/api/templates", multipartForm(t, [][2]string{{"name", "bad"}}, [2]string{"index.html", "{{{raw}}}"}), key, 400},
		{"template no name", "POST", "/api/templates", multipartForm(t, nil, page), key, 400},
		{"template list", "GET", "/api/templates?page=1&limit=5", nil, key, 200},
		{"template list bad page", "GET", "/api/templates?page=0", nil, sess, 400},
		{"template list no credentials", "GET", "/api/templates", nil, nil, 401},
		{"template unknown", "GET", "/api/templates/" + unknown, nil, key, 404},
		{"template delete unknown", "DELETE", "/api/templates/" + unknown, nil, sess, 404},
		// Accounts, keys, billing.
		{"register", "POST", "/api/auth/register", map[string]string{"email": "doc@example.com", "password": "correct horse battery"}, nil, 201},
		{"register again", "POST", "/api/auth/register", map[string]string{"email": "doc@example.com", "password": "correct horse battery"}, nil, 409},
		{"login wrong", "POST", "/api/auth/login", map[string]string{"email": "doc@example.com", "password": "wrong horse battery"}, nil, 401},
		{"login too large", "POST", "/api/auth/login", []byte(`{"email":"` + strings.Repeat("x", 20<<10) + `"}`), nil, 413},
		{"login", "POST", "/api/auth/login", map[string]string{"email": "doc@example.com", "password": "correct horse battery"}, nil, 200},
		{"me", "GET", "/api/auth/me", nil, sess, 200},
		{"create key", "POST", "/api/keys", map[string]string{"name": "docs"}, sess, 201},
		{"list keys", "GET", "/api/keys", nil, sess, 200},
		{"revoke unknown key", "DELETE", "/api/keys/" + unknown, nil, sess, 404},
		{"cross-site cookie", "DELETE", "/api/keys/" + unknown, nil, map[string]string{"Cookie": sessionCookie + "=" + g.session(), "Sec-Fetch-Site": "cross-site"}, 403},
		{"usage", "GET", "/api/billing/usage", nil, sess, 200},
		{"subscription", "GET", "/api/billing/subscription", nil, sess, 200},
		{"change plan", "POST", "/api/billing/subscription/change-plan", map[string]string{"plan": "pro"}, sess, 200},
		{"change plan unknown", "POST", "/api/billing/subscription/change-plan", map[string]string{"plan": "platinum"}, sess, 400},
		{"logout", "POST", "/api/auth/logout", nil, nil, 200},
		// The operator's routes.
		{"admin list", "GET", "/api/admin/accounts", nil, admin, 200},
		{"admin patch", "PATCH", "/api/admin/accounts/" + g.user.ID, map[string]any{"plan": "pro"}, admin, 200},
		{"admin patch unknown field", "PATCH", "/api/admin/accounts/" + g.user.ID, map[string]any{"disable": true}, admin, 400},
		{"admin patch unknown account", "PATCH", "/api/admin/accounts/usr_nobody", map[string]any{"plan": "pro"}, admin, 404},
		{"admin wrong token", "GET", "/api/admin/accounts", nil, sess, 401},
		// The service.
		{"healthz", "GET", "/healthz", nil, nil, 200},
		{"readyz", "GET", "/readyz", nil, nil, 200},
		{"openapi", "GET", "/openapi.json", nil, nil, 200},
		{"docs", "GET", "/docs", nil, nil, 200},
	}
	check := func(c call) {
		t.Run(c.name, func(t *testing.T) {
			hreq, resp := g.send(c)
			if resp.StatusCode != c.status {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if ok, verrs := v.ValidateHttpResponse(hreq, resp); !ok {
				for _, e := range verrs {
					t.Errorf("%s: %s", e.Message, e.Reason)
					for _, se := range e.SchemaValidationErrors {
						t.Errorf("  at %s: %s", se.FieldPath, se.Reason)
					}
				}
			}
		})
	}
	for _, c := range calls {
		check(c)
	}
	// A stored template read and deleted; the plan's limit.
	tpl, err := g.srv.Templates().ByName(context.Background(), g.user.ID, "invoice")
	if err != nil {
		t.Fatal(err)
	}
	check(call{"template get", "GET", "/api/templates/" + tpl.ID, nil, sess, 200})
	for i := range 5 { // the other account is on hobby still
		g.do(req{method: "POST", path: "/api/templates", key: otherKey, body: multipartForm(t, [][2]string{{"name", fmt.Sprint("t", i)}}, page)}).
			check(t, expect{status: 201})
	}
	check(call{"template over the plan", "POST", "/api/templates", multipartForm(t, [][2]string{{"name", "sixth"}}, page),
		map[string]string{"X-API-Key": otherKey}, 403})
	check(call{"template delete", "DELETE", "/api/templates/" + tpl.ID, nil, key, 200})
	check(call{"template deleted", "GET", "/api/templates/" + tpl.ID, nil, key, 404})
	// A full queue: 429 with Retry-After. (A sync batch's ZIP needs a
	// worker, which the fake queue is not: e2e covers that answer.)
	g.queue.refuse = queue.ErrQueueFull
	check(call{"queue full", "POST", "/pdf/generate-batch", map[string]any{"stream": true,
		"documents": []map[string]string{{"fileName": "a", "htmlContent": "<p>a</p>"}}}, key, 429})
	g.queue.refuse = nil
}

// TestAnswerValidationCanFail: an answer that breaks the document is
// caught, so the checks above mean something.
func TestAnswerValidationCanFail(t *testing.T) {
	doc, err := libopenapi.NewDocument(apidoc.Raw())
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	bad := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"401 in shape A", "GET", "/api/keys", 401, `{"statusCode":401,"code":"UNAUTHORIZED","message":"no"}`},
		{"unknown code", "GET", "/api/keys", 404, `{"statusCode":404,"code":"GONE","message":"no"}`},
		{"usage without limit", "GET", "/api/billing/usage", 200, `{"success":true,"data":{"plan":"hobby","period":"2026-01","conversionsUsed":1,"hostedCount":0,"hostedLimit":10}}`},
		{"status not described", "GET", "/api/keys", 418, `{"statusCode":418,"code":"BAD_REQUEST","message":"teapot"}`},
	}
	for _, b := range bad {
		hreq, _ := http.NewRequestWithContext(context.Background(), b.method, "http://localhost:8080"+b.path, nil)
		resp := &http.Response{StatusCode: b.status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(b.body)), Request: hreq}
		if ok, _ := v.ValidateHttpResponse(hreq, resp); ok {
			t.Errorf("%s: passed validation", b.name)
		}
	}
}

// send makes c's request and returns it with the answer, whose body can
// still be read (the validator reads it).
func (g *testGateway) send(c call) (*http.Request, *http.Response) {
	g.t.Helper()
	var body []byte
	ctype := ""
	switch b := c.body.(type) {
	case nil:
	case *form2:
		body, ctype = b.buf.Bytes(), b.w.FormDataContentType()
	case []byte:
		body, ctype = b, "application/json"
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			g.t.Fatal(err)
		}
		ctype = "application/json"
	}
	hreq, err := http.NewRequest(c.method, g.url+c.path, bytes.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	if ctype != "" {
		hreq.Header.Set("Content-Type", ctype)
	}
	for k, v := range c.header {
		hreq.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(hreq)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(got))
	return hreq, resp
}

// TestDocsPage: GET /docs is the reference for this service, naming every
// path of the document, and says it loads nothing from elsewhere.
func TestDocsPage(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_BASE_URL": "https://pdf.example.com"})
	a := g.do(req{method: "GET", path: "/docs", key: "-"})
	a.check(t, expect{status: 200, header: map[string]string{"Content-Type": "text/html; charset=UTF-8"}})
	if csp := a.header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") {
		t.Fatalf("CSP %q", csp)
	}
	page := string(a.body)
	for op := range documented(t) {
		path := op[strings.IndexByte(op, ' ')+1:]
		if !strings.Contains(page, `<span class="path">`+path+`</span>`) {
			t.Errorf("/docs does not name %s", op)
		}
	}
	if !strings.Contains(page, "<code>https://pdf.example.com</code>") {
		t.Error("/docs does not name the base address")
	}
	j := g.do(req{method: "GET", path: "/openapi.json", key: "-"})
	if !strings.Contains(string(j.body), `"url":"https://pdf.example.com"`) {
		t.Errorf("/openapi.json servers: %.300s", j.body)
	}
}
