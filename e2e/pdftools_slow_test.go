package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/testenv/rawpdf"
)

// TestPDFToolsSlowPage: a page that keeps PDFium (Markdown) or pdftotext
// (plain text) busy past the job's time (512 MiB of content inflated and
// parsed, seconds in one PDFium call, which cannot stop there) fails that
// request alone, answered at the time limit (its PDFium child or its
// pdftotext killed), and the next text is read by a new child; nothing is
// counted for it.
func TestPDFToolsSlowPage(t *testing.T) {
	svc := startService(t, func(c *config.Config) {
		c.WorkerKinds = []string{"pdf"}
		c.RenderTimeout = time.Second
	})
	c := newClient(t, svc)
	small := func(word string) []file {
		content := "BT /F1 24 Tf 72 720 Td (" + word + ") Tj ET"
		return []file{pdfFile("small.pdf", rawpdf.Build(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
			"<< /Length "+strconv.Itoa(len(content))+" >>\nstream\n"+content+"\nendstream",
			"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		))}
	}
	markdown := map[string]any{"format": "markdown"}
	// A first request starts PDFium's children; on a machine that never
	// compiled PDFium that takes longer than this test's time limit.
	var resp *http.Response
	for deadline := time.Now().Add(time.Minute); ; {
		resp = c.tool("text", small("WARMUP"), markdown)
		if resp.StatusCode == http.StatusOK || time.Now().After(deadline) {
			break
		}
		readAll(t, resp)
		time.Sleep(100 * time.Millisecond)
	}
	mustStatus(t, resp, http.StatusOK)
	readAll(t, resp)
	used := c.usage()
	killed := metricValue(scrape(t, svc.URL), "docrender_pdfium_replacements_total", "reason", "deadline")

	// 512 MiB of zeros inflated and parsed (a 0.5 MB file): seconds in
	// either engine.
	slow := rawpdf.SlowPages(1, 512<<20)
	for _, tc := range []struct {
		engine  string
		options any
	}{{"PDFium", markdown}, {"pdftotext", nil}} {
		start := time.Now()
		e := expectError(t, c.tool("text", []file{pdfFile("slow.pdf", slow)}, tc.options), http.StatusInternalServerError, "INTERNAL_SERVER_ERROR")
		took := time.Since(start)
		t.Logf("%s, slow page: %q after %v", tc.engine, e.Message, took)
		if !strings.Contains(e.Message, "time limit") {
			t.Errorf("%s, slow page: %q, want the time limit named", tc.engine, e.Message)
		}
		// In-process, PDFium would finish the page first (2.5–3 s here).
		if took > 2500*time.Millisecond {
			t.Errorf("%s, slow page answered after %v, the time limit is 1 s", tc.engine, took)
		}
		resp = c.tool("text", small("NEXTTEXT"), tc.options)
		mustStatus(t, resp, http.StatusOK)
		if got := string(readAll(t, resp)); !strings.Contains(got, "NEXTTEXT") {
			t.Errorf("%s, next text %q", tc.engine, got)
		}
		used++
		if n := c.usage(); n != used {
			t.Errorf("%s: conversions %d, want %d: the slow page is not counted", tc.engine, n, used)
		}
	}
	// The operator sees the kill (DESIGN §7: /metrics).
	m := scrape(t, svc.URL)
	if v := metricValue(m, "docrender_pdfium_replacements_total", "reason", "deadline"); v != killed+1 {
		t.Errorf("docrender_pdfium_replacements_total{reason=deadline} = %v, want %v", v, killed+1)
	}
	if v := metricValue(m, "docrender_pdfium_replacements_total", "reason", "failed"); v != 0 || !strings.Contains(m, `docrender_pdfium_replacements_total{reason="failed"} 0`) {
		t.Errorf("failed replacements %v, or the series is missing", v)
	}
}
