package worker

import (
	"archive/zip"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/docrender/docrender/pkg/batch"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/filename"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
)

// handleZip assembles a batch whose documents are all done into its ZIP,
// stores it as a file and completes the batch. A redelivered ZIP job of a
// completed batch only re-queues the webhook (deduplicated).
func (w *Worker) handleZip(ctx context.Context, zj *jobspb.ZipJob, d queue.Delivery) (*jobspb.Result, error) {
	if w.batch == nil {
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, errNoSharedState), nil
	}
	bt := w.batch.batches
	var (
		r *batch.Record
		p batch.Progress
	)
	err := w.patiently(ctx, "reading the batch", func() (err error) {
		if r, err = bt.Get(ctx, zj.BatchId); err != nil {
			return err
		}
		p, err = bt.Progress(ctx, r)
		return err
	})
	if errors.Is(err, batch.ErrNotFound) {
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The batch is gone."), nil
	}
	if err != nil {
		return nil, err
	}
	if p.Terminal() {
		return &jobspb.Result{}, w.patiently(ctx, "announcing the batch", func() error { return bt.Notify(ctx, r) })
	}
	zctx, span := tracing.Child(ctx, "zip", attribute.Int("docrender.documents", r.Total))
	size, err := w.buildZip(zctx, r)
	tracing.End(span, err)
	if err != nil {
		if !d.Last {
			return nil, err
		}
		w.log.ErrorContext(ctx, "batch ZIP failed on its last try", "batch_id", r.ID, "err", err)
		if ferr := w.patiently(ctx, "failing the batch", func() error {
			return w.failZip(ctx, r, "The ZIP archive could not be assembled.")
		}); ferr != nil {
			return nil, ferr
		}
		return failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The ZIP archive could not be assembled."), nil
	}
	zip := bt.ZipFile(r, size)
	if err := w.patiently(ctx, "completing the batch", func() error {
		_, err := bt.Complete(ctx, r, zip)
		return err
	}); err != nil {
		return nil, err
	}
	return &jobspb.Result{OutputKey: blob.FileKey(r.ZipID), Size: size}, nil
}

// failZip ends a batch whose ZIP could not be built in error, with msg.
func (w *Worker) failZip(ctx context.Context, r *batch.Record, msg string) error {
	_ = w.blobs.Delete(context.WithoutCancel(ctx), blob.FileKey(r.ZipID))
	_, err := w.batch.batches.Fail(ctx, r, msg)
	return err
}

// buildZip streams the batch's PDFs through a ZIP writer into the blob
// store: at most one PDF's copy buffer is in memory at a time, whatever
// the batch's size.
func (w *Worker) buildZip(ctx context.Context, r *batch.Record) (int64, error) {
	names, err := w.batch.batches.EntryNamesOf(ctx, r)
	if err != nil {
		return 0, err
	}
	pr, pw := io.Pipe()
	cw := &countingWriter{w: pw}
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			// A panic here would take the process down: fail the ZIP instead.
			if r := recover(); r != nil {
				err = fmt.Errorf("zip writer panicked: %v", r)
			}
			pw.CloseWithError(err)
			done <- err
		}()
		err = w.writeZip(ctx, cw, r, names)
	}()
	err = w.blobs.Put(ctx, blob.FileKey(r.ZipID), pr, -1)
	// Unblock the writer if Put stopped reading early.
	pr.CloseWithError(fmt.Errorf("zip upload ended: %v", err))
	if werr := <-done; werr != nil {
		return 0, fmt.Errorf("worker: zip: %w", werr)
	}
	if err != nil {
		return 0, fmt.Errorf("worker: zip: store: %w", err)
	}
	return cw.n, nil
}

// writeZip writes the ZIP of the batch's PDFs to out.
func (w *Worker) writeZip(ctx context.Context, out io.Writer, r *batch.Record, names []string) error {
	zw := newZipWriter(out)
	now := time.Now()
	if r.Report {
		if err := w.addReport(ctx, zw, r, names, now); err != nil {
			return err
		}
	}
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.addEntry(ctx, zw, blob.BatchPDF(r.ID, i), name, now); err != nil {
			return err
		}
	}
	return zw.Close()
}

func (w *Worker) addEntry(ctx context.Context, zw *zip.Writer, key, name string, mod time.Time) error {
	rc, _, err := w.blobs.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	defer rc.Close()
	// Names are cleaned when the batch is made (pdfopts.FileName); again
	// here for batches made before that.
	return addZipEntry(zw, filename.Clean(name), rc, mod)
}

// newZipWriter is a ZIP writer whose deflate is the fastest level: the
// entries are mostly compressed already (PDFs, images), so more effort
// gains what little there is to gain and takes CPU from the other jobs.
func newZipWriter(out io.Writer) *zip.Writer {
	zw := zip.NewWriter(out)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestSpeed)
	})
	return zw
}

// addZipEntry writes r to zw as the deflated entry name.
func addZipEntry(zw *zip.Writer, name string, r io.Reader, mod time.Time) error {
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: mod})
	if err != nil {
		return fmt.Errorf("entry %s: %w", name, err)
	}
	if _, err := io.Copy(fw, r); err != nil {
		return fmt.Errorf("entry %s: %w", name, err)
	}
	return nil
}

// countingWriter counts the bytes of the ZIP as they pass.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
