package server

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/proto/jobspb"
)

// The header counts everything the worker counted, beyond the first 100
// of each kind its lists keep.
func TestReportHeaderCountsAll(t *testing.T) {
	hundred := make([]string, 100)
	tests := []struct {
		name   string
		report *jobspb.Report
		want   string
	}{
		{"lists only (an older worker)", &jobspb.Report{Pages: 2, RenderMs: 40, BlockedRequests: []string{"a"}},
			"pages=2, renderMs=40, blocked=1, failed=0, consoleErrors=0"},
		{"more than the lists keep", &jobspb.Report{Pages: 1, RenderMs: 9, BlockedRequests: hundred, ConsoleErrors: hundred,
			BlockedTotal: 5000, FailedTotal: 3, ConsoleErrorsTotal: 250},
			"pages=1, renderMs=9, blocked=5000, failed=3, consoleErrors=250"},
		{"page references", &jobspb.Report{Pages: 4, RenderMs: 80, Passes: 2},
			"pages=4, renderMs=80, blocked=0, failed=0, consoleErrors=0, passes=2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest("GET", "/", nil), rec)
			setReportHeader(c, tc.report)
			if got := rec.Header().Get(headerReport); got != tc.want {
				t.Errorf("header = %q, want %q", got, tc.want)
			}
		})
	}
}

// A hosted answer's report lists the images without alternative text,
// never null; a 422 details each, by URL or, for an element without one,
// by its description.
func TestReportImagesWithoutAlt(t *testing.T) {
	b := newReportBody(&jobspb.Report{Pages: 1})
	if b.ImagesWithoutAlt == nil || b.ImagesWithoutAltTotal != 0 {
		t.Errorf("empty report: %+v", b)
	}
	r := &jobspb.Report{ImagesWithoutAlt: []string{"img/a.png", `<div id="chart" role="img">`}, ImagesWithoutAltTotal: 120}
	if b := newReportBody(r); len(b.ImagesWithoutAlt) != 2 || b.ImagesWithoutAltTotal != 120 {
		t.Errorf("report %+v", b)
	}
	e := checkFailed(&jobspb.Result{ErrorMessage: "120 images have no alternative text.", Report: r})
	want := []checkDetail{
		{Kind: "accessibility", URL: "img/a.png", Message: "image without alternative text"},
		{Kind: "accessibility", Message: `<div id="chart" role="img"> has no alternative text`},
	}
	if got, _ := e.Extra["details"].([]checkDetail); !slices.Equal(got, want) {
		t.Errorf("details %+v, want %+v", e.Extra["details"], want)
	}
}
