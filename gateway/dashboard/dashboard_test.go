package dashboard

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

func serve(t *testing.T, method, path string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	e := echo.New()
	Register(e)
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		ctype        string // prefix
		location     string
	}{
		{"GET", "/", http.StatusSeeOther, "", "/dashboard"},
		{"HEAD", "/", http.StatusSeeOther, "", "/dashboard"},
		{"GET", "/dashboard", http.StatusOK, "text/html", ""},
		{"HEAD", "/dashboard", http.StatusOK, "text/html", ""},
		{"GET", "/dashboard/", http.StatusSeeOther, "", "/dashboard"},
		{"GET", "/dashboard/app.js", http.StatusOK, "text/javascript", ""},
		{"GET", "/dashboard/style.css", http.StatusOK, "text/css", ""},
		{"GET", "/dashboard/favicon.svg", http.StatusOK, "image/svg+xml", ""},
		{"GET", "/dashboard/nope.js", http.StatusNotFound, "", ""},
		{"GET", "/dashboard/..%2fdashboard.go", http.StatusNotFound, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := serve(t, tc.method, tc.path, nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if got := rec.Header().Get("Location"); got != tc.location {
				t.Errorf("Location %q, want %q", got, tc.location)
			}
			if !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.ctype) {
				t.Errorf("Content-Type %q, want %s", rec.Header().Get("Content-Type"), tc.ctype)
			}
			if tc.status != http.StatusOK {
				return
			}
			h := rec.Header()
			for k, want := range map[string]string{
				"Content-Security-Policy": CSP, "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
			} {
				if h.Get(k) != want {
					t.Errorf("%s %q, want %q", k, h.Get(k), want)
				}
			}
			if tc.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD answered a body")
			}
		})
	}
}

// The policy forbids what would let injected markup run: inline script,
// other origins, framing.
func TestCSPIsStrict(t *testing.T) {
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "connect-src 'self'"} {
		if !strings.Contains(CSP, want) {
			t.Errorf("CSP lacks %q", want)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "https:", "data:"} {
		if strings.Contains(CSP, bad) {
			t.Errorf("CSP allows %q", bad)
		}
	}
}

func TestRevalidation(t *testing.T) {
	first := serve(t, "GET", "/dashboard/app.js", nil)
	etag := first.Header().Get("ETag")
	if etag == "" || first.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, first.Header().Get("Cache-Control"))
	}
	if again := serve(t, "GET", "/dashboard/app.js", map[string]string{"If-None-Match": etag}); again.Code != http.StatusNotModified {
		t.Fatalf("revalidation: %d, want 304", again.Code)
	}
}

// The page's markup runs nothing inline (the CSP would block it and the
// page would break silently), names only embedded assets, and the script
// never writes HTML from data nor keeps anything in web storage.
func TestPageRules(t *testing.T) {
	h, err := load()
	if err != nil {
		t.Fatal(err)
	}
	page := string(h.assets["index.html"].data)
	script := string(h.assets["app.js"].data)
	rules := []struct {
		name string
		re   string
		in   string
	}{
		{"inline script", `<script(?:\s[^>]*)?>\s*[^<\s]`, page},
		{"script without src", "", page},
		{"inline style element", `<style`, page},
		{"style attribute", `\sstyle=`, page},
		{"event handler attribute", `\son[a-z]+=`, page},
		{"external URL", `(?:src|href)="(?:https?:)?//`, page},
		{"innerHTML", `innerHTML|outerHTML|insertAdjacentHTML|document\.write`, script},
		{"web storage", `localStorage|sessionStorage|document\.cookie`, script},
		{"eval", `\beval\(|new Function`, script},
	}
	for _, r := range rules {
		if r.name == "script without src" {
			// Go's regexp has no lookahead: check each tag by hand.
			for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(r.in, -1) {
				if !strings.Contains(tag, ` src="`) {
					t.Errorf("%s: %s", r.name, tag)
				}
			}
			continue
		}
		if m := regexp.MustCompile(r.re).FindString(r.in); m != "" {
			t.Errorf("%s: %q", r.name, m)
		}
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="/dashboard/([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if _, ok := h.assets[m[1]]; !ok {
			t.Errorf("index.html names /dashboard/%s, which is not embedded", m[1])
		}
	}
}

// jsonFields are the JSON names of t's fields, embedded structs' included.
func jsonFields(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" {
			names = append(names, jsonFields(f.Type)...)
			continue
		}
		if tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	return names
}

// The render form's controls send the API's own fields (pdfopts.Raw, what
// POST /pdf/generate reads): every opts.<field> the form sets is one of
// them, the long-document and stages controls among them (DESIGN §10,
// §11), and the split choices are the values split takes: absent, true
// or false, which the API reads as its three ways to print.
func TestRenderFormSendsAPIFields(t *testing.T) {
	h, err := load()
	if err != nil {
		t.Fatal(err)
	}
	page := string(h.assets["index.html"].data)
	script := string(h.assets["app.js"].data)
	for _, id := range []string{"render-toc", "render-split", "render-stages"} {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("index.html has no #%s", id)
		}
	}
	start := strings.Index(script, "$('render-form').addEventListener")
	end := strings.Index(script, "// --- screenshot a page")
	if start < 0 || end < start {
		t.Fatal("app.js: the render form's handler is not where it was")
	}
	api := jsonFields(reflect.TypeFor[pdfopts.Raw]())
	var set []string
	for _, m := range regexp.MustCompile(`\bopts\.([A-Za-z]+) = `).FindAllStringSubmatch(script[start:end], -1) {
		set = append(set, m[1])
		if !slices.Contains(api, m[1]) {
			t.Errorf("the render form sets opts.%s, which POST /pdf/generate does not take", m[1])
		}
	}
	for _, want := range []string{"toc", "split", "stages"} {
		if !slices.Contains(set, want) {
			t.Errorf("the render form never sets opts.%s", want)
		}
	}

	sel := regexp.MustCompile(`(?s)<select id="render-split">(.*?)</select>`).FindStringSubmatch(page)
	if sel == nil {
		t.Fatal("index.html: no <select id=\"render-split\">")
	}
	var values []string
	for _, m := range regexp.MustCompile(`<option value="([^"]*)"`).FindAllStringSubmatch(sel[1], -1) {
		values = append(values, m[1])
	}
	if !slices.Equal(values, []string{"", "true", "false"}) {
		t.Fatalf("split choices %q, want \"\", \"true\", \"false\"", values)
	}
	// What the form sends for each (app.js: opts.split = value === 'true'),
	// and a stages list as the textarea takes it, as the API reads them.
	for body, want := range map[string]jobspb.Split{
		`{"toc":true,"stages":[{"op":"metadata","title":"T"}]}`: jobspb.Split_SPLIT_AUTO,
		`{"split":true}`:  jobspb.Split_SPLIT_ON,
		`{"split":false}`: jobspb.Split_SPLIT_OFF,
	} {
		var raw pdfopts.Raw
		if err := pdfopts.Decode([]byte(body), &raw); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		o, err := raw.Validate("document", time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if got := o.Print.GetSplit(); got != want {
			t.Errorf("%s: split %v, want %v", body, got, want)
		}
		if strings.Contains(body, "toc") && (!o.Print.GetToc() || !slices.Equal(o.Stages, []string{"metadata"})) {
			t.Errorf("%s: toc %v, stages %q", body, o.Print.GetToc(), o.Stages)
		}
	}
}
