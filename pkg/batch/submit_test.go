package batch

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/usage"
	"github.com/docrender/docrender/proto/jobspb"
)

// refusingQueue takes `accept` jobs and refuses the rest.
type refusingQueue struct {
	accept int
	jobs   []*jobspb.Job
}

var errFull = errors.New("queue full")

func (q *refusingQueue) Publish(_ context.Context, job *jobspb.Job) error {
	if len(q.jobs) >= q.accept {
		return errFull
	}
	q.jobs = append(q.jobs, job)
	return nil
}

func (q *refusingQueue) Admit(context.Context, string, int) error { return nil }

func (q *refusingQueue) PublishWebhook(context.Context, *jobspb.WebhookDelivery) error { return nil }

// Submit queues one document job per document, with its own inputs; a queue
// that refuses part-way fails the batch and gives back what was never queued.
func TestSubmit(t *testing.T) {
	const total = 5
	tests := []struct {
		name       string
		accept     int
		wantStatus string
		// wantUsed is the account's usage right after Submit: the queued
		// documents stay charged until each one is run (or skipped).
		wantUsed string
	}{
		{"all queued", total, Processing, "5"},
		{"refused part-way", 2, Error, "2"},
		{"refused at once", 0, Error, "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			q := &refusingQueue{accept: tc.accept}
			f.tr.q = q
			ctx := context.Background()
			id := ids.New()
			r := &Record{ID: id, OwnerID: "u1", Name: "b", Total: total, ZipID: id, Retention: time.Hour, CreatedAt: time.Now()}
			var err error
			if r.Charge, err = usage.New(f.st).Reserve(ctx, usage.Ask{ID: r.ID, Account: r.OwnerID, N: total, Limit: 100, Hold: time.Hour, Life: r.TTL()}); err != nil {
				t.Fatal(err)
			}
			docs := make([]Document, total)
			for i := range docs {
				docs[i] = Document{EntryName: "d" + strconv.Itoa(i) + ".pdf", HTML: "<p>doc " + strconv.Itoa(i)}
			}
			page := &jobspb.Page{WidthIn: 8.27, HeightIn: 11.69}
			err = f.tr.Submit(ctx, r, docs, &jobspb.RenderJob{Page: page}, 30*time.Second)
			if (err != nil) != (tc.accept < total) || (err != nil && !errors.Is(err, errFull)) {
				t.Fatalf("Submit: %v", err)
			}
			if len(q.jobs) != tc.accept {
				t.Fatalf("%d jobs queued, want %d", len(q.jobs), tc.accept)
			}
			for i, job := range q.jobs {
				doc := job.GetBatchDocument()
				if doc == nil || doc.BatchId != id || int(doc.Index) != i || job.OutputKey != blob.BatchPDF(id, i) ||
					doc.Render.BundlePrefix != blob.BatchInputs(id, i) || doc.Render.Page != page || job.TimeoutMs != 30000 {
					t.Fatalf("job %d = %v", i, job)
				}
				if bid, idx := job.BatchRef(); bid != id || int(idx) != i {
					t.Fatalf("job %d BatchRef = %s, %d", i, bid, idx)
				}
			}
			p, err := f.tr.Progress(ctx, r)
			if err != nil || p.Status != tc.wantStatus {
				t.Fatalf("progress %+v (%v), want %s", p, err, tc.wantStatus)
			}
			if got := f.usage(t, r); got != tc.wantUsed {
				t.Fatalf("usage %s, want %s", got, tc.wantUsed)
			}
			// Skipping the queued documents of a failed batch gives the rest back.
			for i := range q.jobs {
				if tc.wantStatus == Error {
					if err := f.tr.DocNotDone(ctx, r, i); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.wantStatus == Error {
				if got := f.usage(t, r); got != "0" {
					t.Fatalf("usage %s after the queued documents were skipped, want 0", got)
				}
				if _, err := f.tr.blobs.Stat(ctx, blob.BatchInputs(id, total-1)+"index.html"); !errors.Is(err, blob.ErrNotFound) {
					t.Fatalf("inputs of a failed batch remain: %v", err)
				}
			} else if _, err := f.tr.blobs.Stat(ctx, blob.BatchInputs(id, total-1)+"index.html"); err != nil {
				t.Fatalf("inputs not written: %v", err)
			}
		})
	}
}

// A batch whose record cannot be stored queues nothing and gives back its
// conversions and its hosted slot.
func TestSubmitAbandonsWhatItCannotStart(t *testing.T) {
	f := newFixture(t)
	q := &refusingQueue{accept: 10}
	f.tr.q = q
	ctx := context.Background()
	id := ids.New()
	r := &Record{ID: id, OwnerID: "u1", Name: "b", Total: 2, ZipID: ids.New(), Host: true,
		HostedExpiresAt: time.Now().Add(time.Hour), Retention: time.Hour, CreatedAt: time.Now()}
	var err error
	if r.Charge, err = usage.New(f.st).Reserve(ctx, usage.Ask{ID: r.ID, Account: r.OwnerID, N: 2, Limit: 100, Hold: time.Hour, Life: r.TTL()}); err != nil {
		t.Fatal(err)
	}
	if err := f.tr.files.ReserveHosted(ctx, r.OwnerID, r.ZipID, r.HostedExpiresAt, 1); err != nil {
		t.Fatal(err)
	}
	// One document for a total of two: refused before anything is stored.
	if err := f.tr.Submit(ctx, r, []Document{{EntryName: "a.pdf", HTML: "a"}}, &jobspb.RenderJob{}, time.Second); err == nil {
		t.Fatal("Submit of a short batch succeeded")
	}
	// Now a failure after the inputs were written: the record cannot be stored.
	r.Total = 1
	f.tr.st = refusingSets{f.st}
	if err := f.tr.Submit(ctx, r, []Document{{EntryName: "a.pdf", HTML: "a"}}, &jobspb.RenderJob{}, time.Second); err == nil {
		t.Fatal("Submit without a state store succeeded")
	}
	if len(q.jobs) != 0 {
		t.Fatalf("%d jobs queued", len(q.jobs))
	}
	if _, err := f.tr.blobs.Stat(ctx, blob.BatchInputs(id, 0)+"index.html"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("inputs of an abandoned batch remain: %v", err)
	}
	if got := f.usage(t, r); got != "0" {
		t.Fatalf("usage %s after an abandoned batch, want 0", got)
	}
	if n, err := f.tr.files.HostedCount(ctx, r.OwnerID); err != nil || n != 0 {
		t.Fatalf("hosted slots %d (%v) after an abandoned batch, want 0", n, err)
	}
}

// refusingSets is a state store that cannot store values.
type refusingSets struct{ state.Store }

func (refusingSets) Set(context.Context, string, []byte, time.Duration) error {
	return errors.New("state store refuses")
}

// An office document is stored under its inputs and queued as an office
// conversion with the batch's options (orientation, page ranges, steps),
// on the office kind's lane; an HTML document beside it stays a render.
func TestSubmitOfficeDocument(t *testing.T) {
	f := newFixture(t)
	q := &refusingQueue{accept: 10}
	f.tr.q = q
	ctx := context.Background()
	id := ids.New()
	r := &Record{ID: id, OwnerID: "u1", Name: "b", Total: 2, ZipID: id, Retention: time.Hour, CreatedAt: time.Now()}
	docx := []byte("PK\x03\x04 a docx")
	docs := []Document{{EntryName: "a.pdf", HTML: "<p>a"}, {EntryName: "report.pdf", Office: &OfficeFile{Name: "report.docx", Content: docx}}}
	render := &jobspb.RenderJob{Page: &jobspb.Page{Landscape: true}, Print: &jobspb.Print{PageRanges: "1-2"},
		Info: &jobspb.DocInfo{Title: "T"}, MaxPages: 50}
	if err := f.tr.Submit(ctx, r, docs, render, time.Second); err != nil {
		t.Fatal(err)
	}
	if len(q.jobs) != 2 {
		t.Fatalf("%d jobs queued", len(q.jobs))
	}
	if k := q.jobs[0].WorkerKind(); k != jobspb.KindChromium || q.jobs[0].GetBatchDocument().GetOffice() != nil {
		t.Fatalf("the HTML document went to %s: %v", k, q.jobs[0])
	}
	job := q.jobs[1]
	oj := job.GetBatchDocument().GetOffice()
	if job.WorkerKind() != jobspb.KindOffice || oj == nil || job.GetBatchDocument().GetRender() != nil {
		t.Fatalf("office document job = %v", job)
	}
	if job.OutputKey != blob.BatchPDF(id, 1) || len(oj.InputKeys) != 1 || len(oj.InputNames) != 1 || oj.InputNames[0] != "report.docx" ||
		!oj.Landscape || oj.PageRanges != "1-2" || oj.GetInfo().GetTitle() != "T" || oj.MaxPages != 50 {
		t.Fatalf("office job = %v", oj)
	}
	if !strings.HasPrefix(oj.InputKeys[0], blob.BatchInputs(id, 1)) {
		t.Fatalf("office file at %s, not under the document's inputs", oj.InputKeys[0])
	}
	rc, _, err := f.tr.blobs.Get(ctx, oj.InputKeys[0])
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); string(got) != string(docx) {
		t.Fatalf("stored %q", got)
	}
}

// A PDF document is stored under its inputs and queued as its tool's job
// on the pdf kind's lane, with the batch's steps; without a tool, a job
// with none (the PDF as sent through the steps).
func TestSubmitPDFDocument(t *testing.T) {
	f := newFixture(t)
	q := &refusingQueue{accept: 10}
	f.tr.q = q
	ctx := context.Background()
	id := ids.New()
	r := &Record{ID: id, OwnerID: "u1", Name: "b", Total: 2, ZipID: id, Retention: time.Hour, CreatedAt: time.Now()}
	pdf := []byte("%PDF-1.7 a PDF")
	tool := &jobspb.ToolJob{Tool: &jobspb.ToolJob_Flatten{Flatten: &jobspb.FlattenTool{}}}
	docs := []Document{{EntryName: "a.pdf", PDF: &PDFFile{Name: "form.pdf", Content: pdf, Tool: tool}}, {EntryName: "b.pdf", PDF: &PDFFile{Content: pdf}}}
	render := &jobspb.RenderJob{Info: &jobspb.DocInfo{Title: "T"}, Stages: []string{"metadata"}, StepsOrdered: true}
	if err := f.tr.Submit(ctx, r, docs, render, time.Second); err != nil {
		t.Fatal(err)
	}
	if len(q.jobs) != 2 {
		t.Fatalf("%d jobs queued", len(q.jobs))
	}
	for i, job := range q.jobs {
		tj := job.GetBatchDocument().GetTool()
		if job.WorkerKind() != jobspb.KindPDF || tj == nil || job.GetBatchDocument().GetRender() != nil {
			t.Fatalf("PDF document %d job = %v", i, job)
		}
		if job.OutputKey != blob.BatchPDF(id, i) || !strings.HasPrefix(tj.InputKey, blob.BatchInputs(id, i)) ||
			tj.GetInfo().GetTitle() != "T" || !tj.StepsOrdered || len(tj.Stages) != 1 {
			t.Fatalf("tool job %d = %v", i, tj)
		}
		rc, _, err := f.tr.blobs.Get(ctx, tj.InputKey)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != string(pdf) {
			t.Fatalf("stored %q", got)
		}
	}
	if q.jobs[0].GetBatchDocument().GetTool().GetFlatten() == nil || q.jobs[0].GetBatchDocument().GetTool().InputName != "form.pdf" {
		t.Errorf("the first document's tool: %v", q.jobs[0].GetBatchDocument().GetTool())
	}
	if q.jobs[1].GetBatchDocument().GetTool().GetTool() != nil || tool.InputKey != "" {
		t.Errorf("the second has a tool, or the document's tool was changed: %v", q.jobs[1])
	}
}
