package server

import (
	"testing"

	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// TestToolRoutes: each tool's options reach the worker as its ToolJob,
// with the upload's name as the output's; what the gateway can judge is a
// 400 naming the field before any job is queued or conversion counted.
func TestToolRoutes(t *testing.T) {
	g := newGateway(t, nil)
	pdf := [2]string{"report.pdf", fakePDF}
	for _, op := range pdfopts.ToolOps() {
		options := map[string]string{
			pdfopts.ToolSplit: `{"every":2}`, pdfopts.ToolPages: `{"select":"2,1"}`, pdfopts.ToolMetadata: `{"metadata":{"title":"T"}}`,
		}[op]
		before := len(g.queue.submitted)
		a := g.do(req{method: "POST", path: "/pdf/" + op, body: multipartBody(t, options, pdf)})
		a.check(t, expect{status: 200, header: map[string]string{"Content-Disposition": `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`}})
		if len(g.queue.submitted) != before+1 {
			t.Fatalf("%s: no job queued", op)
		}
		job := g.queue.submitted[before]
		tj := job.GetTool()
		if tj == nil || tj.Op() != op || job.WorkerKind() != jobspb.KindPDF || tj.InputName != "report.pdf" || tj.FileName != "report" {
			t.Errorf("%s: job %v", op, job)
		}
	}

	used := g.used()
	queued := len(g.queue.submitted)
	refused := []struct {
		name, path, options string
		files               [][2]string
		field               string
	}{
		{"no file", "/pdf/flatten", "", nil, "files"},
		{"two files", "/pdf/flatten", "", [][2]string{pdf, pdf}, "files"},
		{"not a PDF", "/pdf/text", "", [][2]string{{"a.txt", "hello"}}, "files"},
		{"unknown option", "/pdf/optimize", `{"quality":50}`, [][2]string{pdf}, "quality"},
		{"option of another tool", "/pdf/flatten", `{"ranges":"1"}`, [][2]string{pdf}, "ranges"},
		{"mistyped option", "/pdf/split", `{"every":"2"}`, [][2]string{pdf}, "every"},
		{"bad range", "/pdf/split", `{"ranges":"3-1"}`, [][2]string{pdf}, "ranges"},
		{"dpi 601", "/pdf/images", `{"dpi":601}`, [][2]string{pdf}, "dpi"},
		{"rotate 45", "/pdf/pages", `{"rotate":{"1":45}}`, [][2]string{pdf}, "rotate"},
	}
	for _, tc := range refused {
		a := g.do(req{method: "POST", path: tc.path, body: multipartBody(t, tc.options, tc.files...)})
		if a.status != 400 || a.json["code"] != "BAD_REQUEST" || a.json["field"] != tc.field {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.name, a.status, a.body, tc.field)
		}
	}
	if len(g.queue.submitted) != queued || g.used() != used {
		t.Errorf("refused requests queued %d jobs, counted %v conversions", len(g.queue.submitted)-queued, g.used()-used)
	}
}

// TestToolWorkerRefusal: the worker's BAD_INPUT names its field in the
// error body, and the conversion is given back.
func TestToolWorkerRefusal(t *testing.T) {
	g := newGateway(t, nil)
	g.queue.fail, g.queue.failField = jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, "select"
	used := g.used()
	a := g.do(req{method: "POST", path: "/pdf/pages", body: multipartBody(t, `{"select":"9"}`, [2]string{"a.pdf", fakePDF})})
	a.check(t, expect{status: 400, code: "BAD_REQUEST", msg: "The fake worker says no.", field: "select"})
	if g.used() != used {
		t.Error("a refused tool counted a conversion")
	}
}

func TestOutputBase(t *testing.T) {
	for _, tc := range [][3]string{
		{"", "Report 2024.PDF", "Report 2024"}, {"", "files[0]", "files[0]"}, {"", ".pdf", "document"},
		{"", "a/b:c.pdf", "a_b_c"}, {"mine", "x.pdf", "mine"}, {"", "archive.tar.pdf", "archive.tar"},
	} {
		if got := outputBase(tc[0], tc[1]); got != tc[2] {
			t.Errorf("outputBase(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}
