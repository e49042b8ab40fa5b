package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
)

const adminToken = "operator-token-0123456789abcdef"

// adminAccount is an item of GET /api/admin/accounts.
type adminAccount struct {
	ID        string `json:"id"`
	Email     string `json:"email"`
	Plan      string `json:"plan"`
	Disabled  bool   `json:"disabled"`
	CreatedAt string `json:"createdAt"`
	Usage     struct {
		Period           string `json:"period"`
		ConversionsUsed  int64  `json:"conversionsUsed"`
		ConversionsLimit int64  `json:"conversionsLimit"`
		HostedCount      int64  `json:"hostedCount"`
		HostedLimit      int64  `json:"hostedLimit"`
	} `json:"usage"`
}

// adminReq sends an admin request with the given bearer token ("" for none).
func adminReq(t testing.TB, svc *service, method, path, token string, b body) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, svc.URL+path, b.r)
	if err != nil {
		t.Fatal(err)
	}
	if b.ctype != "" {
		req.Header.Set("Content-Type", b.ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// adminList reads GET /api/admin/accounts?query and checks its shape.
func adminList(t testing.TB, svc *service, query string) ([]adminAccount, int64, map[string]int64) {
	t.Helper()
	resp := adminReq(t, svc, "GET", "/api/admin/accounts?"+query, adminToken, body{})
	mustStatus(t, resp, http.StatusOK)
	var env struct {
		Success bool `json:"success"`
		Data    struct {
			Accounts []json.RawMessage `json:"accounts"`
			Total    int64             `json:"total"`
		} `json:"data"`
		Pagination map[string]int64 `json:"pagination"`
	}
	if err := json.Unmarshal(exactKeys(t, resp, "success", "data", "pagination"), &env); err != nil || !env.Success {
		t.Fatalf("list envelope %+v, %v", env, err)
	}
	out := make([]adminAccount, len(env.Data.Accounts))
	for i, raw := range env.Data.Accounts {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		// signingIdentities: the DESIGN §8 grants (an operator sees them here).
		checkKeys(t, m, "id", "email", "plan", "disabled", "createdAt", "usage", "signingIdentities")
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out, env.Data.Total, env.Pagination
}

// adminPatch sends PATCH /api/admin/accounts/:id with a raw JSON body.
func adminPatch(t testing.TB, svc *service, id, raw string) *http.Response {
	t.Helper()
	return adminReq(t, svc, "PATCH", "/api/admin/accounts/"+id, adminToken, body{strings.NewReader(raw), "application/json"})
}

func TestAdminAPI(t *testing.T) {
	svc := startService(t, func(cfg *configT) {
		cfg.AdminToken = adminToken
		cfg.SelfServicePlans = []string{"hobby", "pro"}
	})
	c := newClient(t, svc)
	other := newClient(t, svc)

	t.Run("the admin token and nothing else", func(t *testing.T) {
		for name, tok := range map[string]string{
			"none": "", "wrong": adminToken + "x", "prefix": adminToken[:10],
			"a user's session": c.Token, "a user's key": c.Key,
		} {
			for _, r := range []struct{ method, path string }{{"GET", "/api/admin/accounts"}, {"PATCH", "/api/admin/accounts/" + c.UserID}} {
				resp := adminReq(t, svc, r.method, r.path, tok, jsonBody(map[string]any{"plan": "enterprise"}))
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s %s with %s: status %d", r.method, r.path, name, resp.StatusCode)
				}
				expectError(t, resp, http.StatusUnauthorized, "")
			}
		}
		if s := readSubscription(t, c.bearer("GET", "/api/billing/subscription", body{})); s.Plan != "hobby" {
			t.Fatalf("plan %s after refused admin requests", s.Plan)
		}
	})

	t.Run("list", func(t *testing.T) {
		all, total, pg := adminList(t, svc, "")
		if total < 2 || int64(len(all)) != total || pg["page"] != 1 || pg["limit"] != 20 || pg["total"] != total {
			t.Fatalf("%d of %d, pagination %v", len(all), total, pg)
		}
		// Newest first: other registered after c.
		if all[0].ID != other.UserID || all[1].ID != c.UserID {
			t.Fatalf("first %s, %s; want %s, %s", all[0].ID, all[1].ID, other.UserID, c.UserID)
		}
		a := all[1]
		if a.Email != c.Email || a.Plan != "hobby" || a.Disabled || parseISO(t, a.CreatedAt).IsZero() ||
			a.Usage.ConversionsUsed != 0 || a.Usage.ConversionsLimit != 100 || a.Usage.HostedLimit != 10 || len(a.Usage.Period) != 7 {
			t.Fatalf("account %+v", a)
		}
		page, _, pg := adminList(t, svc, "limit=1&page=2")
		if len(page) != 1 || page[0].ID != c.UserID || pg["totalPages"] != total {
			t.Fatalf("page 2 of 1: %+v, pagination %v", page, pg)
		}
		byEmail, n, _ := adminList(t, svc, "email="+url.QueryEscape(strings.ToUpper(c.Email)))
		if n != 1 || len(byEmail) != 1 || byEmail[0].ID != c.UserID {
			t.Fatalf("by email: %+v of %d", byEmail, n)
		}
		if none, n, _ := adminList(t, svc, "email=nobody%40example.com"); n != 0 || len(none) != 0 {
			t.Fatalf("unknown email: %+v of %d", none, n)
		}
		for q, field := range map[string]string{"limit=0": "limit", "page=x": "page", "limit=101": "limit", "email=not-an-email": "email"} {
			e := expectError(t, adminReq(t, svc, "GET", "/api/admin/accounts?"+q, adminToken, body{}), http.StatusBadRequest, apierr.BadRequest)
			if e.Field != field {
				t.Errorf("%s: field %q, want %q", q, e.Field, field)
			}
		}
	})

	t.Run("plans", func(t *testing.T) {
		// A user may choose a self-service plan only.
		e := expectError(t, other.bearer("POST", "/api/billing/subscription/change-plan", jsonBody(map[string]string{"plan": "enterprise"})),
			http.StatusForbidden, apierr.Forbidden)
		if !strings.Contains(e.Hint, "hobby, pro") {
			t.Errorf("hint %q does not name the self-service plans", e.Hint)
		}
		other.changePlan("pro")
		// The operator sets any plan.
		resp := adminPatch(t, svc, other.UserID, `{"plan":"Enterprise"}`)
		mustStatus(t, resp, http.StatusOK)
		var got struct {
			Success bool         `json:"success"`
			Data    adminAccount `json:"data"`
		}
		decode(t, resp, &got)
		if !got.Success || got.Data.Plan != "enterprise" || got.Data.ID != other.UserID || got.Data.Usage.ConversionsLimit != 100000 {
			t.Fatalf("patched %+v", got)
		}
		if s := readSubscription(t, other.bearer("GET", "/api/billing/subscription", body{})); s.Plan != "enterprise" || s.Limits.Conversions != 100000 {
			t.Fatalf("subscription after the operator's change: %+v", s)
		}
		// Keeping it is no change; leaving it for a self-service plan is allowed.
		other.changePlan("enterprise")
		other.changePlan("hobby")

		for _, tc := range []struct {
			name, body string
			status     int
			code       string
			field      string
		}{
			{"unknown plan", `{"plan":"platinum"}`, 400, apierr.BadRequest, "plan"},
			{"plan not a string", `{"plan":3}`, 400, apierr.BadRequest, "plan"},
			{"disabled not a boolean", `{"disabled":"yes"}`, 400, apierr.BadRequest, "disabled"},
			{"unknown field", `{"disable":true}`, 400, apierr.BadRequest, "disable"},
			{"bad JSON", `{"plan":`, 400, apierr.BadRequest, ""},
			{"not an object", `[]`, 400, apierr.BadRequest, ""},
			{"empty body", ``, 400, apierr.BadRequest, ""},
		} {
			e := expectError(t, adminPatch(t, svc, other.UserID, tc.body), tc.status, tc.code)
			if e.Field != tc.field {
				t.Errorf("%s: field %q, want %q", tc.name, e.Field, tc.field)
			}
		}
		// A bad plan with disabled: nothing is written.
		expectError(t, adminPatch(t, svc, other.UserID, `{"plan":"platinum","disabled":true}`), 400, apierr.BadRequest)
		other.billingUsage()
		for _, id := range []string{"usr_nobody", strings.Repeat("x", 500)} {
			expectError(t, adminPatch(t, svc, id, `{"plan":"pro"}`), http.StatusNotFound, apierr.NotFound)
		}
	})

	t.Run("disabled", func(t *testing.T) {
		qr := func() body { return jsonBody(map[string]any{"data": "hello"}) }
		mustStatus(t, c.withKey("POST", "/pdf/qrcode", qr()), http.StatusOK)

		resp := adminPatch(t, svc, c.UserID, `{"disabled":true}`)
		mustStatus(t, resp, http.StatusOK)
		resp.Body.Close()
		// Every way in answers 401 shape B at once: the key on /pdf/* and
		// /api/*, the session as bearer and as cookie, a new login.
		page := func() body { return multipartBody([]file{htmlFile("index.html", "<p>x</p>")}, nil) }
		for name, send := range map[string]func() *http.Response{
			"key on generate":    func() *http.Response { return c.withKey("POST", "/pdf/generate", page()) },
			"key on qrcode":      func() *http.Response { return c.withKey("POST", "/pdf/qrcode", qr()) },
			"key on batch":       func() *http.Response { return c.batch(map[string]any{"documents": docs(1, "x")}) },
			"key on hosted list": func() *http.Response { return c.withKey("GET", "/api/hosted-pdfs/list", body{}) },
			"key as bearer":      func() *http.Response { return adminReq(t, svc, "POST", "/pdf/qrcode", c.Key, qr()) },
			"bearer session":     func() *http.Response { return c.bearer("GET", "/api/billing/usage", body{}) },
			"cookie session":     func() *http.Response { return c.do("GET", "/api/keys", body{}, nil) },
			"cookie on generate": func() *http.Response {
				return c.do("POST", "/pdf/generate", page(), map[string]string{"Origin": svc.URL})
			},
			"login": func() *http.Response {
				return anonJSON(t, svc, "/api/auth/login", map[string]string{"email": c.Email, "password": "correct horse"})
			},
		} {
			resp := send()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: status %d, want 401", name, resp.StatusCode)
			}
			expectError(t, resp, http.StatusUnauthorized, "")
		}
		list, _, _ := adminList(t, svc, "email="+url.QueryEscape(c.Email))
		if len(list) != 1 || !list[0].Disabled {
			t.Fatalf("listed as %+v", list)
		}
		// Another account is untouched.
		mustStatus(t, other.withKey("POST", "/pdf/qrcode", qr()), http.StatusOK)

		// Re-enabled: the same key and session work again, renders included.
		resp = adminPatch(t, svc, c.UserID, `{"disabled":false}`)
		mustStatus(t, resp, http.StatusOK)
		resp.Body.Close()
		if info(t, c.generatePDF("<p>back again</p>", nil)).Pages != 1 {
			t.Fatal("render after re-enabling")
		}
		mustStatus(t, c.bearer("GET", "/api/billing/usage", body{}), http.StatusOK)
		mustStatus(t, c.do("GET", "/api/keys", body{}, nil), http.StatusOK)
		if list, _, _ := adminList(t, svc, "email="+url.QueryEscape(c.Email)); list[0].Disabled || list[0].Usage.ConversionsUsed != 1 {
			t.Fatalf("listed as %+v", list)
		}
	})
}

// anonJSON posts a JSON body without credentials.
func anonJSON(t testing.TB, svc *service, path string, v any) *http.Response {
	t.Helper()
	b := jsonBody(v)
	req, err := http.NewRequest("POST", svc.URL+path, b.r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", b.ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Without DOCRENDER_ADMIN_TOKEN the admin routes do not exist.
func TestAdminAPIOff(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	for _, tok := range []string{"", adminToken, c.Token} {
		expectError(t, adminReq(t, svc, "GET", "/api/admin/accounts", tok, body{}), http.StatusNotFound, apierr.NotFound)
		expectError(t, adminReq(t, svc, "PATCH", "/api/admin/accounts/"+c.UserID, tok, jsonBody(map[string]any{"disabled": true})),
			http.StatusNotFound, apierr.NotFound)
	}
	mustStatus(t, c.withKey("POST", "/pdf/qrcode", jsonBody(map[string]any{"data": "still enabled"})), http.StatusOK)
}
