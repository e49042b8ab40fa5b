package server

import (
	"net/http/httptest"
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
