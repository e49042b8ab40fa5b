package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// AdminSetSigning sends PUT /api/admin/accounts/:id/signing with the admin
// token and {identities} (a list even when none), and reads the account back.
func TestAdminSetSigning(t *testing.T) {
	type sent struct {
		method, path, auth, ctype string
		body                      map[string]any
	}
	var got []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		got = append(got, sent{r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
		w.Header().Set("Content-Type", "application/json")
		if ids, _ := body["identities"].([]any); len(ids) > 0 && ids[0] == "zeta" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"statusCode":400,"code":"BAD_REQUEST","message":"Invalid value for identities[0]: \"zeta\" is not a signing identity of this server","field":"identities[0]"}`))
			return
		}
		w.Write([]byte(`{"success":true,"data":{"id":"usr_1","email":"a@b.c","plan":"pro","disabled":false,"createdAt":"2026-01-02T03:04:05Z",` +
			`"usage":{"period":"2026-01"},"signingIdentities":["acme","beta"]}}`))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, WithAdminToken("admintok"))
	ctx := context.Background()

	a, err := c.AdminSetSigning(ctx, "usr_1", []string{"beta", "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "usr_1" || !slices.Equal(a.SigningIdentities, []string{"acme", "beta"}) {
		t.Errorf("account %+v", a)
	}
	if _, err := c.AdminSetSigning(ctx, "usr/2", nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.AdminSetSigning(ctx, "usr_1", []string{"zeta"})
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Field != "identities[0]" {
		t.Fatalf("unknown identity: %#v", err)
	}
	if _, err := c.AdminSetSigning(ctx, "", []string{"acme"}); err == nil {
		t.Fatal("no error for an empty account ID")
	}
	want := []struct {
		path string
		ids  []any
	}{
		{"/api/admin/accounts/usr_1/signing", []any{"beta", "acme"}},
		{"/api/admin/accounts/usr%2F2/signing", []any{}},
		{"/api/admin/accounts/usr_1/signing", []any{"zeta"}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests sent, want %d (a 400 is not retried): %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		ids, ok := g.body["identities"].([]any)
		if g.method != "PUT" || g.path != w.path || g.auth != "Bearer admintok" || g.ctype != "application/json" || !ok || !slices.Equal(ids, w.ids) || len(g.body) != 1 {
			t.Errorf("request %d: %+v, want PUT %s {identities: %v}", i, g, w.path, w.ids)
		}
	}
}
