package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/proto/jobspb"
)

// headerReport carries the render report's counts on every generated PDF
// answer (DESIGN §6).
const headerReport = "Docrender-Render-Report"

// reportBody is the render report of a hosted answer (DESIGN §6).
type reportBody struct {
	Pages           int32           `json:"pages"`
	RenderMs        int64           `json:"renderMs"`
	BlockedRequests []string        `json:"blockedRequests"`
	FailedRequests  []failedRequest `json:"failedRequests"`
	ConsoleErrors   []string        `json:"consoleErrors"`
	// DESIGN §8: images without alternative text (the first 100) and how
	// many there were.
	ImagesWithoutAlt      []string `json:"imagesWithoutAlt"`
	ImagesWithoutAltTotal int      `json:"imagesWithoutAltTotal"`
	// DESIGN §10: how many times the page was printed to settle its page
	// references; 1 without them.
	Passes int32 `json:"passes"`
	// DESIGN §10: the slices a long page was printed in; absent: in one piece.
	Slices int32 `json:"slices,omitempty"`
}

type failedRequest struct {
	URL    string `json:"url"`
	Status int32  `json:"status"`
	Error  string `json:"error,omitempty"`
}

// newReportBody is r as JSON; nil when the answer had no render (a cache hit).
func newReportBody(r *jobspb.Report) *reportBody {
	if r == nil {
		return nil
	}
	b := &reportBody{Pages: r.Pages, RenderMs: r.RenderMs, BlockedRequests: r.BlockedRequests,
		FailedRequests: []failedRequest{}, ConsoleErrors: r.ConsoleErrors,
		ImagesWithoutAlt: r.ImagesWithoutAlt, ImagesWithoutAltTotal: total(r.ImagesWithoutAltTotal, len(r.ImagesWithoutAlt)),
		Passes: passes(r), Slices: slicesOf(r)}
	if b.BlockedRequests == nil {
		b.BlockedRequests = []string{}
	}
	if b.ConsoleErrors == nil {
		b.ConsoleErrors = []string{}
	}
	if b.ImagesWithoutAlt == nil {
		b.ImagesWithoutAlt = []string{}
	}
	for _, f := range r.FailedRequests {
		b.FailedRequests = append(b.FailedRequests, failedRequest{URL: f.Url, Status: f.Status, Error: f.Error})
	}
	return b
}

// setReportHeader puts r's counts in the answer's headers: all there were,
// beyond the first ones its lists keep.
func setReportHeader(c echo.Context, r *jobspb.Report) {
	if r == nil {
		return
	}
	v := fmt.Sprintf("pages=%d, renderMs=%d, blocked=%d, failed=%d, consoleErrors=%d",
		r.Pages, r.RenderMs, total(r.BlockedTotal, len(r.BlockedRequests)), total(r.FailedTotal, len(r.FailedRequests)),
		total(r.ConsoleErrorsTotal, len(r.ConsoleErrors)))
	if n := passes(r); n > 1 {
		// DESIGN §10: only a page that needed more than one print says so,
		// so every other answer keeps §6's header as it was.
		v += fmt.Sprintf(", passes=%d", n)
	}
	if n := slicesOf(r); n > 1 {
		v += fmt.Sprintf(", slices=%d", n)
	}
	c.Response().Header().Set(headerReport, v)
}

// passes is how many times the render printed its page (DESIGN §10): 1
// from a worker that did not count.
func passes(r *jobspb.Report) int32 {
	return max(r.GetPasses(), 1)
}

// slicesOf is how many slices the render printed its page in (DESIGN
// §10); 0 for a page printed in one piece.
func slicesOf(r *jobspb.Report) int32 {
	if n := r.GetSlices(); n > 1 {
		return n
	}
	return 0
}

// total is a report's count of something: what the worker counted, or
// (from a worker that counted nothing beyond its lists) the list's length.
func total(counted int32, listed int) int {
	return max(int(counted), listed)
}

// checkDetail is one entry of a 422's details (DESIGN §6).
type checkDetail struct {
	Kind    string `json:"kind"`
	URL     string `json:"url,omitempty"`
	Message string `json:"message"`
	// Line and Path place a template error (DESIGN §9): the template's
	// line, the data's path.
	Line int32  `json:"line,omitempty"`
	Path string `json:"path,omitempty"`
}

// checkFailed is the 422 of a render whose checks failed: every console
// error and failed or blocked request the checks asked about, and, when
// failOnAccessibilityErrors asked about them (the worker lists them in a
// failure only then), every image without alternative text.
func checkFailed(res *jobspb.Result) *apierr.Error {
	r := res.GetReport()
	var details []checkDetail
	for _, m := range r.GetConsoleErrors() {
		details = append(details, checkDetail{Kind: "console", Message: m})
	}
	for _, f := range r.GetFailedRequests() {
		msg := f.Error
		if f.Status > 0 {
			msg = fmt.Sprintf("HTTP %d", f.Status)
		}
		details = append(details, checkDetail{Kind: "resource", URL: f.Url, Message: msg})
	}
	for _, u := range r.GetBlockedRequests() {
		details = append(details, checkDetail{Kind: "blocked", URL: u, Message: "blocked by the egress rules"})
	}
	for _, img := range r.GetImagesWithoutAlt() {
		details = append(details, accessibilityDetail(img))
	}
	hint := "Fix what details lists, or turn failOnConsoleErrors / failOnResourceErrors / failOnAccessibilityErrors off."
	for _, te := range r.GetTemplateErrors() {
		details = append(details, checkDetail{Kind: "template", Line: te.Line, Path: te.Path, Message: te.Message})
		hint = "Fix the template at the line details names, or the data at its path; a missing field renders empty."
	}
	for _, v := range r.GetConformanceViolations() {
		kind := "pdfa"
		if strings.HasPrefix(v, "UA ") {
			kind = "pdfua"
		}
		details = append(details, checkDetail{Kind: kind, Message: v})
		hint = "The input cannot be made the PDF/A or PDF/UA level asked for (details names veraPDF's rules): fix the input (embed its fonts, tag it), or ask for no level."
	}
	if details == nil {
		details = []checkDetail{}
	}
	e := &apierr.Error{Status: http.StatusUnprocessableEntity, Code: apierr.RenderCheckFailed, Message: res.ErrorMessage, Hint: hint}
	e.Extra = map[string]any{"details": details}
	return e
}

// accessibilityDetail is the 422 detail of an image without alternative
// text, as the report names it: by its URL, or (an element that has none,
// such as a <div role="img">) by a description starting with "<", which no
// URL does.
func accessibilityDetail(img string) checkDetail {
	if strings.HasPrefix(img, "<") {
		return checkDetail{Kind: "accessibility", Message: img + " has no alternative text"}
	}
	return checkDetail{Kind: "accessibility", URL: img, Message: "image without alternative text"}
}
