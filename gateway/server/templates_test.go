package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/blob"
)

// templateForm is an upload of name with files and more fields.
func templateForm(t *testing.T, name string, fields [][2]string, files ...[2]string) *form2 {
	t.Helper()
	if name != "" {
		fields = append([][2]string{{"name", name}}, fields...)
	}
	return multipartForm(t, fields, files...)
}

var tplPage = [2]string{"index.html", "<html lang=\"de\"><h1>{{title}}</h1></html>"}

func data(a reply) map[string]any {
	d, _ := a.json["data"].(map[string]any)
	return d
}

func TestTemplateHandlers(t *testing.T) {
	g := newGateway(t, nil)
	bearer := map[string]string{"Authorization": "Bearer " + g.session()}

	// Upload with the API key: version 1.
	a := g.do(req{method: "POST", path: "/api/templates", body: templateForm(t, " invoice ", nil, tplPage, [2]string{"logo.png", "PNG"})})
	a.check(t, expect{status: http.StatusCreated})
	d := data(a)
	id, _ := d["id"].(string)
	if a.json["success"] != true || id == "" || d["name"] != "invoice" || d["version"] != 1.0 ||
		d["size"] != float64(len(tplPage[1])+3) || d["createdAt"] == nil {
		t.Fatalf("upload answer %s", a.body)
	}
	// The same name with the session (bearer) and sample data: version 2.
	a = g.do(req{method: "POST", path: "/api/templates", key: "-", header: bearer,
		body: templateForm(t, "invoice", [][2]string{{"sampleData", `{"title":"Rechnung"}`}}, tplPage)})
	a.check(t, expect{status: http.StatusCreated})
	if d := data(a); d["id"] != id || d["version"] != 2.0 {
		t.Fatalf("second upload %s", a.body)
	}
	tp, err := g.srv.Templates().Get(context.Background(), g.user.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := g.srv.Templates().Version(tp, 0); v.Version != 2 || !v.HasSample || v.Entry != "index.html" || v.Lang != "de" {
		t.Fatalf("stored version %+v", v)
	}
	if v, _ := g.srv.Templates().Version(tp, 1); v.HasSample || len(v.Files) != 2 {
		t.Fatalf("stored version 1 %+v", v)
	}
	// The temporary upload folders are gone; the versions' files are not.
	var left []string
	_ = g.srv.Blobs.List(context.Background(), blob.JobsPrefix, func(i blob.Info) error { left = append(left, i.Key); return nil })
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if _, err := g.srv.Blobs.Stat(context.Background(), blob.TemplateFiles(id, 1)+"logo.png"); err != nil {
		t.Errorf("version 1's logo: %v", err)
	}

	// A second template, then the list (newest first), with key or session.
	g.do(req{method: "POST", path: "/api/templates", body: templateForm(t, "letter", nil, [2]string{"letter.html", "<p>{{to}}</p>"})}).
		check(t, expect{status: http.StatusCreated})
	for _, r := range []req{{method: "GET", path: "/api/templates"}, {method: "GET", path: "/api/templates?page=1&limit=10", key: "-", header: bearer}} {
		a = g.do(r)
		a.check(t, expect{status: 200})
		list, _ := data(a)["templates"].([]any)
		if len(list) != 2 || data(a)["total"] != 2.0 {
			t.Fatalf("list %s", a.body)
		}
		first, _ := list[0].(map[string]any)
		second, _ := list[1].(map[string]any)
		if first["name"] != "letter" || second["id"] != id || second["latestVersion"] != 2.0 || second["updatedAt"] == nil || second["createdAt"] == nil {
			t.Fatalf("list items %s", a.body)
		}
	}
	a = g.do(req{method: "GET", path: "/api/templates?page=2&limit=1"})
	a.check(t, expect{status: 200})
	if p, _ := a.json["pagination"].(map[string]any); p["totalPages"] != 2.0 || p["page"] != 2.0 || !strings.Contains(string(a.body), id) {
		t.Fatalf("page 2 %s", a.body)
	}
	g.do(req{method: "GET", path: "/api/templates?limit=1000"}).check(t, expect{status: 400, code: "BAD_REQUEST", field: "limit"})

	// One template with its versions.
	a = g.do(req{method: "GET", path: "/api/templates/" + id, key: "-", header: bearer})
	a.check(t, expect{status: 200})
	vs, _ := data(a)["versions"].([]any)
	if data(a)["id"] != id || data(a)["name"] != "invoice" || len(vs) != 2 {
		t.Fatalf("get %s", a.body)
	}
	if v, _ := vs[1].(map[string]any); v["version"] != 2.0 || v["createdAt"] == nil || v["size"] != float64(len(tplPage[1])) {
		t.Fatalf("version 2 %s", a.body)
	}

	// Private to the account: another one sees nothing of it.
	_, other := g.signUp("other@example.com")
	g.do(req{method: "GET", path: "/api/templates/" + id, key: other}).check(t, expect{status: 404, code: "NOT_FOUND", msg: "Template not found"})
	g.do(req{method: "DELETE", path: "/api/templates/" + id, key: other}).check(t, expect{status: 404, code: "NOT_FOUND"})
	a = g.do(req{method: "GET", path: "/api/templates", key: other})
	a.check(t, expect{status: 200})
	if data(a)["total"] != 0.0 {
		t.Fatalf("another account's list %s", a.body)
	}
	for _, p := range []string{"AAAAAAAAAAAAAAAAAAAAAA", "not-an-id"} {
		g.do(req{method: "GET", path: "/api/templates/" + p}).check(t, expect{status: 404, code: "NOT_FOUND"})
	}

	// Delete: found no more at once; the files stay for renders already queued.
	a = g.do(req{method: "DELETE", path: "/api/templates/" + id})
	a.check(t, expect{status: 200})
	if a.json["success"] != true {
		t.Fatalf("delete %s", a.body)
	}
	g.do(req{method: "GET", path: "/api/templates/" + id}).check(t, expect{status: 404, code: "NOT_FOUND"})
	g.do(req{method: "DELETE", path: "/api/templates/" + id}).check(t, expect{status: 404, code: "NOT_FOUND"})
	if _, err := g.srv.Blobs.Stat(context.Background(), blob.TemplateFiles(id, 2)+"index.html"); err != nil {
		t.Errorf("a deleted template's files went before the grace: %v", err)
	}
	if n, _ := g.srv.Templates().Sweep(context.Background(), 10); n != 0 {
		t.Errorf("swept %d prefixes before the grace", n)
	}
	a = g.do(req{method: "GET", path: "/api/templates"})
	if data(a)["total"] != 1.0 {
		t.Fatalf("list after delete %s", a.body)
	}
}

// Bad uploads are 400s in shape A naming the field; nothing is stored.
func TestTemplateUploadRefused(t *testing.T) {
	g := newGateway(t, nil)
	many := make([][2]string, maxFiles+1)
	for i := range many {
		many[i] = [2]string{fmt.Sprintf("f%d.css", i), "x"}
	}
	tests := []struct {
		name string
		body any
		want expect
	}{
		{"no name", templateForm(t, "", nil, tplPage), expect{status: 400, code: "BAD_REQUEST", field: "name", msg: "required"}},
		{"blank name", templateForm(t, "   ", nil, tplPage), expect{status: 400, field: "name"}},
		{"long name", templateForm(t, strings.Repeat("n", 101), nil, tplPage), expect{status: 400, field: "name", msg: "at most 100"}},
		{"control in name", templateForm(t, "a\x01b", nil, tplPage), expect{status: 400, field: "name", msg: "printable"}},
		{"bad sampleData", templateForm(t, "x", [][2]string{{"sampleData", `{"a":`}}, tplPage), expect{status: 400, field: "sampleData"}},
		{"sampleData not an object", templateForm(t, "x", [][2]string{{"sampleData", `[1,2]`}}, tplPage), expect{status: 400, field: "sampleData"}},
		{"sampleData too large", templateForm(t, "x", [][2]string{{"sampleData", `{"a":"` + strings.Repeat("a", maxSampleDataBytes) + `"}`}}, tplPage),
			expect{status: 400, field: "sampleData", msg: "larger than"}},
		{"refused template", templateForm(t, "x", nil, [2]string{"index.html", "<p>\n{{title}}\n{{{raw}}}</p>"}),
			expect{status: 400, field: "files", msg: "index.html line 3"}},
		{"refused margin file", templateForm(t, "x", nil, tplPage, [2]string{"footer.html", "{{{page}}}"}),
			expect{status: 400, field: "files", msg: "footer.html line 1"}},
		{"no files", templateForm(t, "x", nil), expect{status: 400, field: "files", msg: "required"}},
		{"no HTML", templateForm(t, "x", nil, [2]string{"a.css", "p{}"}), expect{status: 400, field: "files", msg: "no HTML"}},
		{"too many files", templateForm(t, "x", nil, many...), expect{status: 400, field: "files", msg: "too many files"}},
		{"duplicate files", templateForm(t, "x", nil, tplPage, tplPage), expect{status: 400, field: "files", msg: "duplicate"}},
		{"a page address", templateForm(t, "x", [][2]string{{"url", "https://example.com/"}}), expect{status: 400, field: "url"}},
		{"print options", templateForm(t, "x", [][2]string{{"options", `{"format":"A5"}`}}, tplPage), expect{status: 400, field: "options"}},
		{"not multipart", map[string]any{"name": "x"}, expect{status: 400, code: "BAD_REQUEST", msg: "multipart"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := g.do(req{method: "POST", path: "/api/templates", body: tc.body})
			a.check(t, tc.want)
			if a.json["statusCode"] != 400.0 {
				t.Fatalf("not shape A: %s", a.body)
			}
		})
	}
	a := g.do(req{method: "POST", path: "/api/templates", body: templateForm(t, "x", nil, [2]string{"index.html", "\n{{{raw}}}"})})
	if a.json["file"] != "index.html" || a.json["line"] != 2.0 {
		t.Fatalf("the refusal does not name the file and line: %s", a.body)
	}
	if n, _ := g.srv.Templates().Count(context.Background(), g.user.ID); n != 0 {
		t.Fatalf("%d templates stored by refused uploads", n)
	}
	var left []string
	_ = g.srv.Blobs.List(context.Background(), "", func(i blob.Info) error { left = append(left, i.Key); return nil })
	if len(left) > 0 {
		t.Fatalf("refused uploads left files: %v", left[:min(5, len(left))])
	}
}

// The plan's template count: a new name past it is a 403 with a hint; a
// new version of a stored template always fits.
func TestTemplatePlanLimit(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_PLAN_HOBBY_TEMPLATES": "1"})
	g.do(req{method: "POST", path: "/api/templates", body: templateForm(t, "one", nil, tplPage)}).check(t, expect{status: 201})
	a := g.do(req{method: "POST", path: "/api/templates", body: templateForm(t, "two", nil, tplPage)})
	a.check(t, expect{status: 403, code: "FORBIDDEN", msg: "maximum of 1 templates"})
	if h, _ := a.json["hint"].(string); !strings.Contains(h, "change plan") {
		t.Fatalf("no hint: %s", a.body)
	}
	a = g.do(req{method: "POST", path: "/api/templates", body: templateForm(t, "one", nil, tplPage)})
	a.check(t, expect{status: 201})
	if data(a)["version"] != 2.0 {
		t.Fatalf("new version %s", a.body)
	}
	off := newGateway(t, map[string]string{"DOCRENDER_PLAN_HOBBY_TEMPLATES": "0"})
	off.do(req{method: "POST", path: "/api/templates", body: templateForm(t, "one", nil, tplPage)}).check(t, expect{status: 403, code: "FORBIDDEN"})
}

// Every template route takes an API key or a session, and nothing else.
func TestTemplateAuth(t *testing.T) {
	g := newGateway(t, nil)
	for _, r := range []req{
		{method: "GET", path: "/api/templates", key: "-"},
		{method: "GET", path: "/api/templates", key: "-", header: map[string]string{"Authorization": "Bearer not-a-session"}},
		{method: "GET", path: "/api/templates", key: "drk_notakey"},
	} {
		g.do(r).check(t, expect{status: 401})
	}
	// A signed-in browser: the session cookie (from the service's own origin).
	g.do(req{method: "GET", path: "/api/templates", key: "-", header: map[string]string{"Cookie": sessionCookie + "=" + g.session()}}).
		check(t, expect{status: 200})
}
