package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// The render report and its checks (DESIGN §6), through the gateway.

// troubledHTML logs a console error and throws, misses an image of its
// bundle (404), and asks for an address the egress rules refuse.
const troubledHTML = `<!doctype html><html><body><h1>TROUBLED</h1>
<img src="img/missing.png">
<img src="http://169.254.169.254/x.png">
<script>console.error("first problem"); throw new Error("boom")</script>
</body></html>`

// twoPagesHTML is a clean document of two pages.
const twoPagesHTML = `<!doctype html><html><body><p style="break-after:page">one</p><p>two</p></body></html>`

// renderReport is the report object of a hosted answer.
type renderReport struct {
	Pages           int      `json:"pages"`
	RenderMs        int64    `json:"renderMs"`
	BlockedRequests []string `json:"blockedRequests"`
	FailedRequests  []struct {
		URL    string `json:"url"`
		Status int    `json:"status"`
		Error  string `json:"error"`
	} `json:"failedRequests"`
	ConsoleErrors         []string `json:"consoleErrors"`
	ImagesWithoutAlt      []string `json:"imagesWithoutAlt"`
	ImagesWithoutAltTotal int      `json:"imagesWithoutAltTotal"`
}

var troubledConsole = []string{"first problem", "Uncaught Error: boom (index.html:4)"}

// checkTroubled checks a report of troubledHTML.
func checkTroubled(t *testing.T, r renderReport) {
	t.Helper()
	if r.Pages != 1 || r.RenderMs <= 0 {
		t.Errorf("pages %d, renderMs %d", r.Pages, r.RenderMs)
	}
	if !slices.Equal(r.BlockedRequests, []string{"http://169.254.169.254/x.png"}) {
		t.Errorf("blockedRequests %q", r.BlockedRequests)
	}
	if len(r.FailedRequests) != 1 || r.FailedRequests[0].URL != "img/missing.png" || r.FailedRequests[0].Status != 404 {
		t.Errorf("failedRequests %+v", r.FailedRequests)
	}
	if !slices.Equal(r.ConsoleErrors, troubledConsole) {
		t.Errorf("consoleErrors %q, want %q", r.ConsoleErrors, troubledConsole)
	}
}

var reportHeaderRe = regexp.MustCompile(`^pages=(\d+), renderMs=(\d+), blocked=(\d+), failed=(\d+), consoleErrors=(\d+)(?:, passes=(\d+))?$`)

// TestRenderReportHeader: every generated PDF answer counts what happened
// in its render in a header, and a page with errors still renders when no
// check is asked for.
func TestRenderReportHeader(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	tests := []struct {
		name, html string
		want       []string // pages, blocked, failed, consoleErrors
	}{
		{"clean, two pages", twoPagesHTML, []string{"2", "0", "0", "0"}},
		{"troubled", troubledHTML, []string{"1", "1", "1", "2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.generate([]file{htmlFile("index.html", tc.html)}, nil)
			mustStatus(t, resp, http.StatusOK)
			h := resp.Header.Get("Docrender-Render-Report")
			if pi := info(t, readAll(t, resp)); strconv.Itoa(pi.Pages) != tc.want[0] {
				t.Errorf("the PDF has %d pages, want %s", pi.Pages, tc.want[0])
			}
			m := reportHeaderRe.FindStringSubmatch(h)
			if m == nil {
				t.Fatalf("Docrender-Render-Report %q", h)
			}
			if got := []string{m[1], m[3], m[4], m[5]}; !slices.Equal(got, tc.want) || m[2] == "0" {
				t.Errorf("Docrender-Render-Report %q, want pages, blocked, failed, consoleErrors %v", h, tc.want)
			}
		})
	}
	if got := c.usage(); got != 2 {
		t.Errorf("conversions used %d, want 2", got)
	}
}

// TestRenderReportHosted: a hosted answer carries the report object,
// naming the bundle's missing file by its path in the upload.
func TestRenderReportHosted(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	resp := c.generate([]file{htmlFile("index.html", troubledHTML)}, map[string]any{"host": true})
	mustStatus(t, resp, http.StatusOK)
	var body struct {
		PdfID  string        `json:"pdfId"`
		Report *renderReport `json:"report"`
	}
	decode(t, resp, &body)
	if body.PdfID == "" || body.Report == nil {
		t.Fatalf("hosted answer %+v", body)
	}
	checkTroubled(t, *body.Report)
}

// checkDetail is one entry of a 422's details.
type checkDetail struct {
	Kind    string `json:"kind"`
	URL     string `json:"url"`
	Message string `json:"message"`
}

// TestRenderCheckFailed: with failOnConsoleErrors or failOnResourceErrors,
// a page with such errors is a 422 RENDER_CHECK_FAILED whose message counts
// them and whose details list them; no PDF is stored and the conversion is
// given back. A clean page passes both checks.
func TestRenderCheckFailed(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	all := []checkDetail{
		{"console", "", "first problem"},
		{"console", "", "Uncaught Error: boom (index.html:4)"},
		{"resource", "img/missing.png", "HTTP 404"},
		{"blocked", "http://169.254.169.254/x.png", "blocked by the egress rules"},
	}
	tests := []struct {
		name    string
		opts    map[string]any
		message string
	}{
		{"console errors", map[string]any{"failOnConsoleErrors": true}, "The page logged 2 console errors."},
		{"resource errors", map[string]any{"failOnResourceErrors": true}, "1 request failed; 1 request was blocked by the egress rules."},
		{"hosted", map[string]any{"failOnConsoleErrors": true, "host": true}, "The page logged 2 console errors."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.generate([]file{htmlFile("index.html", troubledHTML)}, tc.opts)
			e := expectError(t, resp, http.StatusUnprocessableEntity, apierr.RenderCheckFailed)
			if e.Message != tc.message {
				t.Errorf("message %q, want %q", e.Message, tc.message)
			}
			raw, _ := json.Marshal(e.Raw["details"])
			var details []checkDetail
			if err := json.Unmarshal(raw, &details); err != nil || !slices.Equal(details, all) {
				t.Errorf("details %s, want %+v", raw, all)
			}
		})
	}
	if got := c.usage(); got != 0 {
		t.Errorf("conversions used %d after failed checks, want 0", got)
	}
	if n := svc.hostedCount(t, c); n != 0 {
		t.Errorf("%d hosted files after a failed check", n)
	}
	pdf := c.generatePDF(twoPagesHTML, map[string]any{"failOnConsoleErrors": true, "failOnResourceErrors": true})
	if pi := info(t, pdf); pi.Pages != 2 {
		t.Errorf("clean page under both checks: %d pages", pi.Pages)
	}
}

// altHTML has an image without alt text, one with, a decorative one
// (alt=""), an element with role=img without a name and an SVG with
// role=img named by its <title>.
const altHTML = `<!doctype html><html lang="en"><body><h1>IMAGES</h1>
<img src="img/logo.png" width="20" height="20">
<img src="img/logo.png" alt="Logo" width="20" height="20">
<img src="img/logo.png" alt="" width="20" height="20">
<div id="chart" role="img" style="width:20px;height:20px;background:#08c"></div>
<svg role="img" width="20" height="20"><title>A square</title><rect width="20" height="20"/></svg>
</body></html>`

// TestAccessibilityCheck (DESIGN §8): the report lists the images without
// alternative text, by their file in the upload or, for an element
// without one, its description; with failOnAccessibilityErrors they are a
// 422 RENDER_CHECK_FAILED detailing each (kind accessibility), counting
// no conversion. A page whose images all have alt text passes the check.
func TestAccessibilityCheck(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	files := []file{htmlFile("index.html", altHTML), {Field: "files", Name: "img/logo.png", Type: "image/png", Data: tinyPNG(t)}}
	wantListed := []string{"img/logo.png", `<div id="chart" role="img">`}

	resp := c.generate(files, map[string]any{"host": true})
	mustStatus(t, resp, http.StatusOK)
	var body struct {
		Report *renderReport `json:"report"`
	}
	decode(t, resp, &body)
	if r := body.Report; r == nil || !slices.Equal(r.ImagesWithoutAlt, wantListed) || r.ImagesWithoutAltTotal != 2 {
		t.Fatalf("report %+v, want imagesWithoutAlt %q (total 2)", body.Report, wantListed)
	}

	resp = c.generate(files, map[string]any{"failOnAccessibilityErrors": true})
	e := expectError(t, resp, http.StatusUnprocessableEntity, apierr.RenderCheckFailed)
	if want := "2 images have no alternative text."; e.Message != want {
		t.Errorf("message %q, want %q", e.Message, want)
	}
	raw, _ := json.Marshal(e.Raw["details"])
	var details []checkDetail
	want := []checkDetail{
		{"accessibility", "img/logo.png", "image without alternative text"},
		{"accessibility", "", `<div id="chart" role="img"> has no alternative text`},
	}
	if err := json.Unmarshal(raw, &details); err != nil || !slices.Equal(details, want) {
		t.Errorf("details %s, want %+v", raw, want)
	}
	if got := c.usage(); got != 1 {
		t.Errorf("conversions used %d, want 1 (the failed check counts none)", got)
	}

	fixed := strings.Replace(altHTML, `<img src="img/logo.png" width`, `<img src="img/logo.png" alt="Logo" width`, 1)
	fixed = strings.Replace(fixed, `id="chart" role="img"`, `id="chart" role="img" aria-label="Sales"`, 1)
	files[0] = htmlFile("index.html", fixed)
	resp = c.generate(files, map[string]any{"failOnAccessibilityErrors": true})
	mustStatus(t, resp, http.StatusOK)
	if pi := info(t, readAll(t, resp)); pi.Pages != 1 {
		t.Errorf("the fixed page: %d pages", pi.Pages)
	}
}

// reportEntry is one document of a batch's report.json.
type reportEntry struct {
	FileName string `json:"fileName"`
	renderReport
}

// TestBatchReportJSON: a batch with report:true gets report.json in its
// ZIP, first, one entry per document in the ZIP's order under its entry
// name; without it, none.
func TestBatchReportJSON(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	ds := []map[string]any{
		{"fileName": "clean", "htmlContent": twoPagesHTML},
		{"fileName": "troubled", "htmlContent": troubledHTML},
		{"fileName": "clean", "htmlContent": docHTML("MARK-2")},
	}
	resp := c.batch(map[string]any{"documents": ds, "options": map[string]any{"report": true}})
	mustStatus(t, resp, http.StatusOK)
	names, entries := unzip(t, readAll(t, resp))
	if want := []string{"report.json", "clean.pdf", "troubled.pdf", "clean (2).pdf"}; !slices.Equal(names, want) {
		t.Fatalf("ZIP entries %q, want %q", names, want)
	}
	var report []reportEntry
	if err := json.Unmarshal(entries["report.json"], &report); err != nil {
		t.Fatalf("report.json: %v\n%s", err, entries["report.json"])
	}
	if len(report) != 3 {
		t.Fatalf("report.json has %d entries:\n%s", len(report), entries["report.json"])
	}
	for i, e := range report {
		if e.FileName != names[i+1] {
			t.Errorf("entry %d: fileName %q, want %q", i, e.FileName, names[i+1])
		}
		if pi := info(t, entries[e.FileName]); pi.Pages != e.Pages {
			t.Errorf("%s: pages %d in the report, %d in the PDF", e.FileName, e.Pages, pi.Pages)
		}
	}
	checkTroubled(t, report[1].renderReport)
	if r := report[0]; r.BlockedRequests == nil || r.FailedRequests == nil || r.ConsoleErrors == nil ||
		len(r.BlockedRequests)+len(r.FailedRequests)+len(r.ConsoleErrors) != 0 {
		t.Errorf("a clean document's entry: %s", entries["report.json"])
	}
	if !strings.Contains(string(entries["report.json"]), `"blockedRequests": []`) {
		t.Errorf("empty lists are not [] in report.json:\n%s", entries["report.json"])
	}

	resp = c.batch(map[string]any{"documents": docs(2, "plain")})
	mustStatus(t, resp, http.StatusOK)
	checkZip(t, readAll(t, resp), entryNames(2, "plain"), markers(2))
}
