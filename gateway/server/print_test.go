package server

import (
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
)

// urlBody is a generate body with a url field (and options, files if given).
func urlBody(t *testing.T, url, options string, files ...[2]string) *form2 {
	t.Helper()
	fields := [][2]string{{"url", url}}
	if options != "" {
		fields = append(fields, [2]string{"options", options})
	}
	return multipartForm(t, fields, files...)
}

// DESIGN §6 at the gateway: a URL instead of files, the options in the job,
// the report header and the 422 of a failed check (the real renders are
// e2e's).
func TestGenerateURLAndPrintOptions(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_RENDER_ALLOW_HOSTS": "127.0.0.1:9999"})
	tests := []struct {
		name string
		body *form2
		want expect
	}{
		{"url and files", urlBody(t, "http://127.0.0.1:9999/", "", page), expect{status: 400, code: "BAD_REQUEST", field: "url"}},
		{"private url", urlBody(t, "http://10.0.0.1/", ""), expect{status: 400, code: "BAD_REQUEST", field: "url", msg: "private"}},
		{"metadata service", urlBody(t, "http://169.254.169.254/latest/", ""), expect{status: 400, field: "url"}},
		{"not http", urlBody(t, "file:///etc/passwd", ""), expect{status: 400, field: "url"}},
		{"bad header", urlBody(t, "http://127.0.0.1:9999/", `{"extraHttpHeaders":{"Host":"x"}}`), expect{status: 400, field: "extraHttpHeaders.Host"}},
		{"bad scale", multipartBody(t, `{"scale":7}`, page), expect{status: 400, field: "scale"}},
		{"allow-listed url", urlBody(t, "http://127.0.0.1:9999/page#top", `{"extraHttpHeaders":{"X-Token":"t"},"userAgent":"ua","footerTemplate":"<span class=pageNumber></span>"}`),
			expect{status: 200, header: map[string]string{"Content-Type": "application/pdf"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g.do(req{method: "POST", path: "/pdf/generate", body: tc.body}).check(t, tc.want)
		})
	}
	g.queue.mu.Lock()
	job := g.queue.submitted[len(g.queue.submitted)-1]
	g.queue.mu.Unlock()
	rj := job.GetRender()
	if u := rj.GetUrl(); u.GetUrl() != "http://127.0.0.1:9999/page" || u.ExtraHttpHeaders["X-Token"] != "t" || u.UserAgent != "ua" ||
		rj.BundlePrefix != "" || len(rj.Files) != 0 || rj.GetPrint().FooterTemplate == "" {
		t.Fatalf("the URL job: %+v", rj)
	}
	if rj.Page.MarginBottomIn < 0.8 {
		t.Errorf("a footer without margins set gets room: bottom %g in", rj.Page.MarginBottomIn)
	}
}

func TestRenderCheckFailedIs422(t *testing.T) {
	g := newGateway(t, nil)
	g.queue.fail = jobspb.ErrorKind_ERROR_KIND_CHECK_FAILED
	a := g.do(req{method: "POST", path: "/pdf/generate", body: multipartBody(t, `{"failOnConsoleErrors":true}`, page)})
	a.check(t, expect{status: 422, code: "RENDER_CHECK_FAILED"})
	if _, ok := a.json["details"].([]any); !ok {
		t.Fatalf("422 without a details list: %s", a.body)
	}
	if got := g.used(); got != 0 {
		t.Fatalf("conversions used %v after a failed check, want 0", got)
	}
}

// A batch document may be a URL instead of htmlContent, and may carry its
// own print options over the batch's.
func TestBatchDocumentsURLAndOwnOptions(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_RENDER_ALLOW_HOSTS": "127.0.0.1:9999"})
	batch := func(docs ...map[string]any) map[string]any {
		return map[string]any{"documents": docs, "stream": true,
			"options": map[string]any{"footerTemplate": "F", "scale": 0.5, "userAgent": "batch-ua"}}
	}
	for _, tc := range []struct {
		name string
		doc  map[string]any
		want expect
	}{
		{"url and html", map[string]any{"fileName": "a", "url": "http://127.0.0.1:9999/", "htmlContent": "<p>x</p>"}, expect{status: 400, field: "documents[0].url"}},
		{"private url", map[string]any{"fileName": "a", "url": "http://192.168.1.1/"}, expect{status: 400, field: "documents[0].url"}},
		{"neither", map[string]any{"fileName": "a"}, expect{status: 400, field: "documents[0].htmlContent"}},
		{"own bad option", map[string]any{"fileName": "a", "htmlContent": "x", "scale": 9}, expect{status: 400, field: "documents[0].scale"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.do(req{method: "POST", path: "/pdf/generate-batch", body: batch(tc.doc)}).check(t, tc.want)
		})
	}
	g.do(req{method: "POST", path: "/pdf/generate-batch", body: batch(
		map[string]any{"fileName": "page", "url": "http://127.0.0.1:9999/p"},
		map[string]any{"fileName": "own", "htmlContent": "<p>own</p>", "scale": 1.5, "metadata": map[string]any{"title": "Own"}},
	)}).check(t, expect{status: 200})
	g.queue.mu.Lock()
	jobs := g.queue.published[len(g.queue.published)-2:]
	g.queue.mu.Unlock()
	first, second := jobs[0].GetBatchDocument().Render, jobs[1].GetBatchDocument().Render
	if first.GetUrl().GetUrl() != "http://127.0.0.1:9999/p" || first.GetUrl().UserAgent != "batch-ua" || first.BundlePrefix != "" ||
		first.GetPrint().Scale != 0.5 {
		t.Errorf("the URL document: %+v", first)
	}
	if second.GetPrint().Scale != 1.5 || second.GetPrint().FooterTemplate != "F" || second.GetInfo().GetTitle() != "Own" || second.BundlePrefix == "" {
		t.Errorf("the document with its own options: %+v", second)
	}
}
