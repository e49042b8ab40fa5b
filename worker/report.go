package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docrender/docrender/pkg/batch"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfedit"
	"github.com/docrender/docrender/worker/render"
)

// The render report (DESIGN §6): every Result of a render carries it; a
// batch with report:true gathers its documents' into report.json in its ZIP.

// checkFailure is the Result of a render whose checks failed: no PDF is
// stored, and the report says what failed.
func checkFailure(e *render.CheckError) *jobspb.Result {
	res := failure(jobspb.ErrorKind_ERROR_KIND_CHECK_FAILED, e.Message)
	res.Report = e.Report
	return res
}

// storeRendered stores a render's finished PDF (out.PDF, with whatever was
// done to it after printing) and returns its Result, with the page count
// and the render report.
func (w *Worker) storeRendered(ctx context.Context, job *jobspb.Job, pdf []byte, out render.Output, after int) (*jobspb.Result, error) {
	// Counted on the printed PDF: what was done to it since keeps its
	// pages (an encrypted one could not be read), unless a pages step
	// counted them anew.
	pages := int32(after)
	if pages == 0 {
		pages = w.pageCount(ctx, out.PDF)
	}
	res, err := w.store(ctx, job, pdf)
	if err != nil {
		return nil, err
	}
	res.Pages, res.Report = pages, out.Report
	if res.Report != nil {
		res.Report.Pages = pages
	}
	return res, nil
}

// pageCount is the number of pages of a PDF Chromium printed; 0 when
// pdfcpu cannot tell (the PDF is stored all the same: a report without its
// page count beats no PDF).
func (w *Worker) pageCount(ctx context.Context, pdf []byte) int32 {
	n, err := pdfedit.PageCount(ctx, pdf)
	if err != nil {
		w.log.WarnContext(ctx, "counting the rendered pages failed", "err", err)
		return 0
	}
	return int32(n)
}

// reportEntry is one document of a batch's report.json: the hosted
// answer's report object (DESIGN §6) with the document's name in the ZIP.
type reportEntry struct {
	FileName        string          `json:"fileName"`
	Pages           int32           `json:"pages"`
	RenderMs        int64           `json:"renderMs"`
	BlockedRequests []string        `json:"blockedRequests"`
	FailedRequests  []failedRequest `json:"failedRequests"`
	ConsoleErrors   []string        `json:"consoleErrors"`
	// DESIGN §8: images without alternative text, the first 100, and how
	// many there were.
	ImagesWithoutAlt      []string `json:"imagesWithoutAlt"`
	ImagesWithoutAltTotal int32    `json:"imagesWithoutAltTotal"`
	// DESIGN §10: how many times the page was printed (page references);
	// left out of an entry without a report.
	Passes int32 `json:"passes,omitempty"`
	// DESIGN §10: the slices of a long page printed in slices.
	Slices int32 `json:"slices,omitempty"`
	// Error says why the document has no report (rendered by a worker
	// that kept none, say).
	Error string `json:"error,omitempty"`
}

type failedRequest struct {
	URL    string `json:"url"`
	Status int32  `json:"status"`
	Error  string `json:"error,omitempty"`
}

// newReportEntry is r as an entry; lists are never null, so a reader can
// iterate them without checking.
func newReportEntry(r *jobspb.Report) reportEntry {
	e := reportEntry{Pages: r.GetPages(), RenderMs: r.GetRenderMs(), BlockedRequests: r.GetBlockedRequests(),
		FailedRequests: []failedRequest{}, ConsoleErrors: r.GetConsoleErrors(), ImagesWithoutAlt: r.GetImagesWithoutAlt(),
		ImagesWithoutAltTotal: max(r.GetImagesWithoutAltTotal(), int32(len(r.GetImagesWithoutAlt()))),
		Passes:                r.GetPasses(), Slices: r.GetSlices()}
	if r != nil {
		e.Passes = max(e.Passes, 1)
	}
	if e.BlockedRequests == nil {
		e.BlockedRequests = []string{}
	}
	if e.ConsoleErrors == nil {
		e.ConsoleErrors = []string{}
	}
	if e.ImagesWithoutAlt == nil {
		e.ImagesWithoutAlt = []string{}
	}
	for _, f := range r.GetFailedRequests() {
		e.FailedRequests = append(e.FailedRequests, failedRequest{URL: f.Url, Status: f.Status, Error: f.Error})
	}
	return e
}

// keepDocReport stores document i's report in the batch's folder, where the
// ZIP job finds it. Written before the document counts as done, so it is
// there when the last one queues the ZIP; a redelivery writes it again.
func (w *Worker) keepDocReport(ctx context.Context, r *batch.Record, i int, rep *jobspb.Report) error {
	b, err := json.Marshal(newReportEntry(rep))
	if err != nil {
		return fmt.Errorf("worker: report: %w", err)
	}
	if err := w.blobs.Put(ctx, blob.BatchReport(r.ID, i), bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("worker: keep report: %w", err)
	}
	return nil
}

// reportName is report.json's name in the ZIP; no document's can be it
// (theirs end in .pdf).
const reportName = "report.json"

// maxDocReport bounds what is read of one document's kept report. The
// report's lists are bounded (package render); this is far above them.
const maxDocReport = 8 << 20

// addReport writes report.json into zw: one entry per document, in the
// ZIP's order, read one at a time. Every document of a ZIP rendered: a
// failed one fails the batch, which then has no ZIP.
func (w *Worker) addReport(ctx context.Context, zw *zip.Writer, r *batch.Record, names []string, mod time.Time) error {
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: reportName, Method: zip.Deflate, Modified: mod})
	if err != nil {
		return fmt.Errorf("entry %s: %w", reportName, err)
	}
	io.WriteString(fw, "[")
	for i, name := range names {
		e, err := w.docReport(ctx, r, i)
		if err != nil {
			return err
		}
		e.FileName = name
		b, err := json.MarshalIndent(e, "  ", "  ")
		if err != nil {
			return fmt.Errorf("entry %s: %w", reportName, err)
		}
		sep := ",\n  "
		if i == 0 {
			sep = "\n  "
		}
		io.WriteString(fw, sep)
		if _, err := fw.Write(b); err != nil {
			return fmt.Errorf("entry %s: %w", reportName, err)
		}
	}
	_, err = io.WriteString(fw, "\n]\n")
	return err
}

// docReport reads the report document i kept.
func (w *Worker) docReport(ctx context.Context, r *batch.Record, i int) (reportEntry, error) {
	rc, _, err := w.blobs.Get(ctx, blob.BatchReport(r.ID, i))
	if errors.Is(err, blob.ErrNotFound) {
		e := newReportEntry(nil)
		e.Error = "No render report was kept for this document."
		return e, nil
	}
	if err != nil {
		return reportEntry{}, fmt.Errorf("read report %d: %w", i, err)
	}
	defer rc.Close()
	var e reportEntry
	if err := json.NewDecoder(io.LimitReader(rc, maxDocReport)).Decode(&e); err != nil {
		// Not worth the batch's PDFs: the entry says so instead.
		w.log.ErrorContext(ctx, "a batch document's report is unreadable", "batch_id", r.ID, "index", i, "err", err)
		e = newReportEntry(nil)
		e.Error = "The render report of this document could not be read."
	}
	if e.ImagesWithoutAlt == nil {
		e.ImagesWithoutAlt = []string{} // kept by a worker before DESIGN §8
	}
	return e, nil
}
