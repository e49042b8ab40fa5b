package e2e

import (
	"github.com/docrender/docrender/pkg/testenv/rawpdf"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWorkerKindsScaleApart (DESIGN §1, §11, issue 25 item 1): a worker
// of the pdf kind alone starts no browser and takes the merges; a worker
// of the chromium kind takes the renders; neither takes the other's jobs,
// and a render waits, rather than fail, while no chromium worker runs.
func TestWorkerKindsScaleApart(t *testing.T) {
	ns := namespace(t)
	data := t.TempDir()
	url, _ := startSplitGateway(t, ns, data)
	pdfEnv := splitEnv(ns, data, map[string]string{"DOCRENDER_WORKER_KINDS": "pdf"})
	pdfWorkers, _ := startSplitWorkers(t, 1, pdfEnv)
	pw := pdfWorkers[0]
	c := newClient(t, &service{URL: url})

	// A render queued while only a pdf worker runs: it waits in its lane.
	rendered := make(chan *http.Response, 1)
	go func() { rendered <- c.generate([]file{htmlFile("index.html", `<h1>KINDS</h1>`)}, nil) }()

	one := blankPDF(t)
	resp := c.merge([]file{pdfFile("a.pdf", one), pdfFile("b.pdf", one)}, nil)
	mustStatus(t, resp, http.StatusOK)
	if got := pdfInfoFields(t, readAll(t, resp), "")["Pages"]; got != "2" {
		t.Errorf("merge: %s pages, want 2", got)
	}
	out := pw.out.String()
	if strings.Contains(out, "chromium started") {
		t.Error("a worker of the pdf kind started Chromium")
	}
	if !strings.Contains(out, `"msg":"job done"`) {
		t.Errorf("the pdf worker did not do the merge:\n%s", tail(out, 2000))
	}
	select {
	case <-rendered:
		t.Fatal("a render was answered while no chromium worker ran")
	case <-time.After(time.Second):
	}
	startSplitWorkers(t, 1, splitEnv(ns, data, map[string]string{"DOCRENDER_WORKER_KINDS": "chromium"}))
	select {
	case resp := <-rendered:
		mustStatus(t, resp, http.StatusOK)
		if !strings.Contains(text(t, readAll(t, resp)), "KINDS") {
			t.Error("the render lacks its text")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the waiting render was not done by the chromium worker")
	}
	if n := strings.Count(pw.out.String(), `"msg":"job done"`); n != 1 {
		t.Errorf("the pdf worker did %d jobs, want the merge alone", n)
	}
}

// blankPDF is a one-page PDF made without the service (a page of nothing,
// its cross-reference table counted here), checked by qpdf.
func blankPDF(t testing.TB) []byte {
	t.Helper()
	objs := []string{"<</Type/Catalog/Pages 2 0 R>>", "<</Type/Pages/Kids[3 0 R]/Count 1>>", "<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>"}
	pdf := rawpdf.Build(objs...)
	run(t, "qpdf", "--check", writeTemp(t, pdf, ".pdf"))
	return pdf
}
