package server

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/state/statetest"
)

// signingDir is a DOCRENDER_SIGNING_DIR holding the identities acme
// (PKCS#12) and beta (PEM). The gateway lists names only, so the files
// hold no keys.
func signingDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"acme.p12", "acme.pass", "beta.crt", "beta.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("not read by the gateway"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// signingConfig is a configuration with signing on (and a time-stamp
// authority when tsa) or, without dir, off.
func signingConfig(t *testing.T, dir string, tsa bool) config.Config {
	t.Helper()
	env := map[string]string{"DOCRENDER_SIGNING_DIR": dir}
	if tsa {
		env["DOCRENDER_TSA_URL"] = "http://127.0.0.1:3180/tsr"
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestCheckSigning: every answer to a request's sign option (DESIGN §8),
// as errors.go writes it.
func TestCheckSigning(t *testing.T) {
	dir := signingDir(t)
	granted := &account.User{ID: "usr_a", SigningIdentities: []string{"acme", "gone"}}
	none := &account.User{ID: "usr_b"}
	type want struct {
		status      int
		code, field string
		msg         string
	}
	for _, tc := range []struct {
		name      string
		dir       string
		tsa       bool
		user      *account.User
		identity  string
		timestamp bool
		want      want // status 0: allowed
	}{
		{name: "granted, B-B", dir: dir, user: granted, identity: "acme"},
		{name: "granted, B-T with an authority", dir: dir, tsa: true, user: granted, identity: "acme", timestamp: true},
		{name: "signing off", user: granted, identity: "acme",
			want: want{400, "BAD_REQUEST", "sign", "signing is not configured on this server"}},
		{name: "signing off outranks the rest", user: none, identity: "../x", timestamp: true,
			want: want{400, "BAD_REQUEST", "sign", "not configured"}},
		{name: "B-T without an authority", dir: dir, user: granted, identity: "acme", timestamp: true,
			want: want{400, "BAD_REQUEST", "sign.level", "time-stamp authority"}},
		{name: "malformed identity", dir: dir, user: granted, identity: "../acme",
			want: want{400, "BAD_REQUEST", "sign.identity", "a-z, 0-9 and -"}},
		{name: "no identity", dir: dir, user: granted, identity: "",
			want: want{400, "BAD_REQUEST", "sign.identity", "signing identity"}},
		{name: "existing but not granted", dir: dir, user: granted, identity: "beta",
			want: want{403, "FORBIDDEN", "", `"beta" is not available to this account`}},
		{name: "no grant at all", dir: dir, tsa: true, user: none, identity: "acme", timestamp: true,
			want: want{403, "FORBIDDEN", "", `"acme" is not available to this account`}},
		{name: "granted but no longer in the directory", dir: dir, user: granted, identity: "gone",
			want: want{403, "FORBIDDEN", "", `"gone" is not available to this account`}},
		{name: "unknown, answered as not granted", dir: dir, user: granted, identity: "zeta",
			want: want{403, "FORBIDDEN", "", `"zeta" is not available to this account`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{Deps: Deps{Config: signingConfig(t, tc.dir, tc.tsa)}}
			err := s.checkSigning(tc.user, tc.identity, tc.timestamp)
			if tc.want.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("allowed")
			}
			ae := httpError(err)
			body := ae.Body()
			if ae.Status != tc.want.status || body["code"] != tc.want.code {
				t.Fatalf("%d %v, want %d %s (%v)", ae.Status, body["code"], tc.want.status, tc.want.code, err)
			}
			if f, _ := body["field"].(string); f != tc.want.field {
				t.Errorf("field %q, want %q", f, tc.want.field)
			}
			if msg, _ := body["message"].(string); !strings.Contains(msg, tc.want.msg) {
				t.Errorf("message %q does not say %q", msg, tc.want.msg)
			}
		})
	}
}

// gatewayOn is newGateway's server on the given state store.
func gatewayOn(t *testing.T, st state.Store, env map[string]string) *testGateway {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{"DOCRENDER_AUTH_ATTEMPTS_PER_MINUTE": "100000", "DOCRENDER_ADMIN_TOKEN": adminToken,
		"DOCRENDER_PLAN_HOBBY_CONCURRENCY": "100000", "DOCRENDER_PLAN_HOBBY_RATE": "100000", "DOCRENDER_DATA_DIR": dir}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load(func(k string) string { return base[k] })
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := localblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	q := &fakeQueue{blobs: blobs}
	s := New(Deps{Config: cfg, Queue: q, State: st, Blobs: blobs, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	g := &testGateway{t: t, srv: s, url: hs.URL, queue: q}
	g.user, g.key = g.signUp(rand.Text()[:12] + "@example.com")
	return g
}

// identitiesOf is data.signingIdentities of an admin answer.
func identitiesOf(t *testing.T, a reply) []string {
	t.Helper()
	data, _ := a.json["data"].(map[string]any)
	raw, ok := data["signingIdentities"].([]any)
	if !ok {
		t.Fatalf("no signingIdentities array: %s", a.body)
	}
	out := []string{}
	for _, v := range raw {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// TestAdminSetSigning: PUT /api/admin/accounts/:id/signing on bbolt and
// Redis; what it grants is what checkSigning allows, and a refused grant
// changes nothing.
func TestAdminSetSigning(t *testing.T) {
	admin := map[string]string{"Authorization": "Bearer " + adminToken}
	many := make([]string, 101)
	for i := range many {
		many[i] = "acme"
	}
	for name, st := range statetest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			g := gatewayOn(t, st, map[string]string{"DOCRENDER_SIGNING_DIR": signingDir(t)})
			path := "/api/admin/accounts/" + g.user.ID + "/signing"
			put := func(body any, header map[string]string) reply {
				return g.do(req{method: "PUT", path: path, body: body, key: "-", header: header})
			}
			// mayUse says what checkSigning allows the account now, read
			// as a request would read it: through its key.
			mayUse := func() []string {
				u, _, err := g.srv.Accounts().Authenticate(context.Background(), g.key)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, id := range []string{"acme", "beta", "zeta"} {
					if g.srv.checkSigning(u, id, false) == nil {
						out = append(out, id)
					}
				}
				return out
			}
			if got := mayUse(); got != nil {
				t.Fatalf("before any grant the account may use %q", got)
			}

			ok := put(map[string]any{"identities": []string{"beta", "acme"}}, admin)
			ok.check(t, expect{status: 200})
			if got := identitiesOf(t, ok); !slices.Equal(got, []string{"acme", "beta"}) {
				t.Fatalf("granted %q", got)
			}
			if data, _ := ok.json["data"].(map[string]any); data["id"] != g.user.ID || data["usage"] == nil {
				t.Fatalf("not the account as the admin list shows it: %s", ok.body)
			}
			if got := mayUse(); !slices.Equal(got, []string{"acme", "beta"}) {
				t.Fatalf("after the grant the account may use %q", got)
			}
			list := g.do(req{method: "GET", path: "/api/admin/accounts?email=" + g.user.Email, key: "-", header: admin})
			list.check(t, expect{status: 200})
			accounts, _ := list.json["data"].(map[string]any)["accounts"].([]any)
			if len(accounts) != 1 || !slices.Equal(identitiesOf(t, reply{json: map[string]any{"data": accounts[0]}}), []string{"acme", "beta"}) {
				t.Fatalf("the admin list shows %s", list.body)
			}

			for _, tc := range []struct {
				name   string
				body   any
				header map[string]string
				want   expect
			}{
				{"unknown identity", map[string]any{"identities": []string{"acme", "zeta"}}, admin, expect{status: 400, code: "BAD_REQUEST", field: "identities[1]", msg: `"zeta" is not a signing identity`}},
				{"malformed name", map[string]any{"identities": []string{"Acme"}}, admin, expect{status: 400, field: "identities[0]", msg: "a-z, 0-9 and -"}},
				{"path in a name", map[string]any{"identities": []string{"../acme"}}, admin, expect{status: 400, field: "identities[0]"}},
				{"too long a name", map[string]any{"identities": []string{strings.Repeat("a", 65)}}, admin, expect{status: 400, field: "identities[0]"}},
				{"named twice", map[string]any{"identities": []string{"acme", "beta", "acme"}}, admin, expect{status: 400, field: "identities[2]", msg: "twice"}},
				{"too many", map[string]any{"identities": many}, admin, expect{status: 400, field: "identities", msg: "at most 100"}},
				{"missing", map[string]any{}, admin, expect{status: 400, field: "identities", msg: "required"}},
				{"null", `{"identities":null}`, admin, expect{status: 400, field: "identities", msg: "required"}},
				{"not a list", map[string]any{"identities": "acme"}, admin, expect{status: 400, field: "identities"}},
				{"not names", map[string]any{"identities": []int{1}}, admin, expect{status: 400, field: "identities"}},
				{"unknown field", map[string]any{"identities": []string{}, "identity": "acme"}, admin, expect{status: 400, field: "identity", msg: "unknown field"}},
				{"not JSON", nil, admin, expect{status: 400, msg: "JSON"}},
				{"no token", map[string]any{"identities": []string{}}, nil, expect{status: 401}},
				{"wrong token", map[string]any{"identities": []string{}}, map[string]string{"Authorization": "Bearer " + strings.Repeat("x", 30)}, expect{status: 401}},
				{"an API key is not the admin token", map[string]any{"identities": []string{}}, map[string]string{"Authorization": "Bearer " + g.key}, expect{status: 401}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					put(tc.body, tc.header).check(t, tc.want)
					if got := mayUse(); !slices.Equal(got, []string{"acme", "beta"}) {
						t.Fatalf("a refused grant changed what the account may use: %q", got)
					}
				})
			}

			g.do(req{method: "PUT", path: "/api/admin/accounts/usr_nobody/signing", body: map[string]any{"identities": []string{"acme"}}, key: "-", header: admin}).
				check(t, expect{status: 404, code: "NOT_FOUND", msg: "Account not found"})
			g.do(req{method: "PUT", path: "/api/admin/accounts/" + strings.Repeat("u", 200) + "/signing", body: map[string]any{"identities": []string{"acme"}}, key: "-", header: admin}).
				check(t, expect{status: 404, code: "NOT_FOUND"})
			// Another account's grant is its own.
			other, _ := g.signUp(rand.Text()[:12] + "@example.com")
			g.do(req{method: "PUT", path: "/api/admin/accounts/" + other.ID + "/signing", body: map[string]any{"identities": []string{"beta"}}, key: "-", header: admin}).
				check(t, expect{status: 200})
			if got := mayUse(); !slices.Equal(got, []string{"acme", "beta"}) {
				t.Fatalf("another account's grant changed this one's: %q", got)
			}

			// A grant replaces the last; [] takes every identity away.
			one := put(map[string]any{"identities": []string{"beta"}}, admin)
			one.check(t, expect{status: 200})
			if got := mayUse(); !slices.Equal(got, []string{"beta"}) {
				t.Fatalf("after a grant of beta: %q", got)
			}
			empty := put(map[string]any{"identities": []string{}}, admin)
			empty.check(t, expect{status: 200})
			if got := identitiesOf(t, empty); len(got) != 0 {
				t.Fatalf("after []: %q", got)
			}
			if got := mayUse(); got != nil {
				t.Fatalf("after []: the account may use %q", got)
			}
			// A change of plan keeps the grant.
			put(map[string]any{"identities": []string{"acme"}}, admin).check(t, expect{status: 200})
			g.do(req{method: "PATCH", path: "/api/admin/accounts/" + g.user.ID, body: map[string]any{"plan": "pro"}, key: "-", header: admin}).check(t, expect{status: 200})
			if got := mayUse(); !slices.Equal(got, []string{"acme"}) {
				t.Fatalf("after a change of plan: %q", got)
			}
		})
	}
}

// Without DOCRENDER_SIGNING_DIR the route answers that signing is off;
// without the admin token it does not exist.
func TestAdminSetSigningOff(t *testing.T) {
	admin := map[string]string{"Authorization": "Bearer " + adminToken}
	g := newGateway(t, nil)
	path := "/api/admin/accounts/" + g.user.ID + "/signing"
	for _, ids := range [][]string{{"acme"}, {}} {
		g.do(req{method: "PUT", path: path, body: map[string]any{"identities": ids}, key: "-", header: admin}).
			check(t, expect{status: 400, code: "BAD_REQUEST", field: "identities", msg: "signing is off"})
	}
	off := newGateway(t, map[string]string{"DOCRENDER_ADMIN_TOKEN": ""})
	off.do(req{method: "PUT", path: "/api/admin/accounts/" + off.user.ID + "/signing", body: map[string]any{"identities": []string{}}, key: "-", header: admin}).
		check(t, expect{status: 404, code: "NOT_FOUND"})
}

// The route's answers are the ones the OpenAPI document describes.
func TestAdminSigningMatchesDocument(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_SIGNING_DIR": signingDir(t)})
	off := newGateway(t, nil)
	raw := g.do(req{method: "GET", path: "/openapi.json", key: "-"})
	doc, err := libopenapi.NewDocument(raw.body)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	admin := map[string]string{"Authorization": "Bearer " + adminToken}
	path := "/api/admin/accounts/" + g.user.ID + "/signing"
	for _, tc := range []struct {
		g *testGateway
		c call
	}{
		{g, call{"grant", "PUT", path, map[string]any{"identities": []string{"acme", "beta"}}, admin, 200}},
		{g, call{"grant none", "PUT", path, map[string]any{"identities": []string{}}, admin, 200}},
		{g, call{"unknown identity", "PUT", path, map[string]any{"identities": []string{"zeta"}}, admin, 400}},
		{g, call{"unknown account", "PUT", "/api/admin/accounts/usr_nobody/signing", map[string]any{"identities": []string{"acme"}}, admin, 404}},
		{g, call{"wrong token", "PUT", path, map[string]any{"identities": []string{}}, nil, 401}},
		{g, call{"listed with grants", "GET", "/api/admin/accounts", nil, admin, 200}},
		{off, call{"signing off", "PUT", "/api/admin/accounts/" + off.user.ID + "/signing", map[string]any{"identities": []string{"acme"}}, admin, 400}},
	} {
		t.Run(tc.c.name, func(t *testing.T) {
			hreq, resp := tc.g.send(tc.c)
			if resp.StatusCode != tc.c.status {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.c.status, body)
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
}
