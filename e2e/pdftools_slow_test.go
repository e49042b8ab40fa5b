package e2e

import (
	"bytes"
	"compress/zlib"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/config"
)

// TestPDFToolsSlowPage: a page that keeps PDFium busy past the job's time
// (200 MB of content inflated and parsed, seconds in one PDFium call,
// which cannot stop there) fails that request alone, answered at the time
// limit (its PDFium child is killed), and the next text is read by a new
// child; nothing is counted for it.
func TestPDFToolsSlowPage(t *testing.T) {
	svc := startService(t, func(c *config.Config) {
		c.WorkerKinds = []string{"pdf"}
		c.RenderTimeout = time.Second
	})
	c := newClient(t, svc)
	// A first request starts PDFium's children, so the slow one is timed
	// from a warm worker.
	small := func(word string) []file {
		content := "BT /F1 24 Tf 72 720 Td (" + word + ") Tj ET"
		return []file{pdfFile("small.pdf", rawPDF([]string{
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
			"<< /Length " + strconv.Itoa(len(content)) + " >>\nstream\n" + content + "\nendstream",
			"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		}))}
	}
	resp := c.tool("text", small("WARMUP"), nil)
	mustStatus(t, resp, http.StatusOK)
	readAll(t, resp)
	used := c.usage()

	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zero := make([]byte, 1<<20)
	for range 200 {
		zw.Write(zero)
	}
	zw.Close()
	slow := rawPDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		"<< /Filter /FlateDecode /Length " + strconv.Itoa(z.Len()) + " >>\nstream\n" + z.String() + "\nendstream",
	})
	start := time.Now()
	e := expectError(t, c.tool("text", []file{pdfFile("slow.pdf", slow)}, nil), http.StatusInternalServerError, "INTERNAL_SERVER_ERROR")
	took := time.Since(start)
	t.Logf("slow page: %q after %v", e.Message, took)
	if !strings.Contains(e.Message, "time limit") {
		t.Errorf("slow page: %q, want the time limit named", e.Message)
	}
	// In-process, PDFium would finish the page first (2.5–3 s here).
	if took > 2500*time.Millisecond {
		t.Errorf("slow page answered after %v, the time limit is 1 s", took)
	}
	resp = c.tool("text", small("NEXTTEXT"), nil)
	mustStatus(t, resp, http.StatusOK)
	if got := string(readAll(t, resp)); !strings.Contains(got, "NEXTTEXT") {
		t.Errorf("next text %q", got)
	}
	if n := c.usage(); n != used+1 {
		t.Errorf("conversions %d, want %d: the slow page is not counted", n, used+1)
	}
	// The operator sees the kill (DESIGN §7: /metrics).
	m := scrape(t, svc.URL)
	if v := metricValue(m, "docrender_pdfium_replacements_total", "reason", "deadline"); v != 1 {
		t.Errorf("docrender_pdfium_replacements_total{reason=deadline} = %v, want 1", v)
	}
	if v := metricValue(m, "docrender_pdfium_replacements_total", "reason", "failed"); v != 0 || !strings.Contains(m, `docrender_pdfium_replacements_total{reason="failed"} 0`) {
		t.Errorf("failed replacements %v, or the series is missing", v)
	}
}
