package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/pkg/batch"
)

// SSE event names (spec §6).
const (
	eventProgress = "progress"
	eventComplete = "complete"
	eventError    = "error"
)

// ActiveProgressStreams is the number of progress streams this server has
// open, so a test (or an operator's debugger) can see that a client
// leaving frees its stream.
func (s *Server) ActiveProgressStreams() int64 {
	if s.batches == nil {
		return 0
	}
	return s.batches.streams.Load()
}

// StopStreams ends every open progress stream, without a final event: the
// client's EventSource reconnects, to this gateway's successor or any other
// (progress lives in the state store). The HTTP server calls it when it
// shuts down, which would otherwise wait for every stream's batch to end.
func (s *Server) StopStreams() {
	if s.batches != nil {
		s.batches.closeOnce.Do(func() { close(s.batches.closing) })
	}
}

// stream is GET /pdf/progress/:batchId/stream (spec 4.5, §6): a progress
// event every 500 ms while the batch runs, then one complete or error
// event, then the connection closes. An unknown batch gets one error event
// carrying the not_found record (DESIGN 4.10). Progress comes from the
// batch's watcher, which reads only the state store, so any gateway can
// serve any batch; the stream ends with the client's connection. An
// account holds at most DOCRENDER_MAX_STREAMS_PER_ACCOUNT streams at once,
// over every gateway.
func (b *batchAPI) stream(c echo.Context) error {
	rec, err := b.ownBatch(c)
	if err != nil {
		return err
	}
	if rec != nil {
		// Before any header: a refusal is an ordinary 429 answer.
		release, err := b.s.takeStreamSlot(c.Request().Context(), rec.OwnerID, b.s.Config.MaxStreamsPerAccount)
		if err != nil {
			return err
		}
		defer release()
	}
	// The stream lasts as long as the batch: each event, not the whole,
	// must reach the client within the write timeout.
	streamWrites(c)
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set(echo.HeaderConnection, "keep-alive")
	// nginx and similar proxies buffer responses unless told not to.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	b.streams.Add(1)
	defer b.streams.Add(-1)
	if rec == nil {
		return writeEvent(w, eventError, batch.NotFoundProgress())
	}
	return b.pushProgress(c.Request().Context(), w, rec)
}

// pushProgress writes an event for each reading of the batch's watcher
// until the batch ends, the client leaves, the server closes, or the
// state store keeps failing. A client slower than the readings skips some:
// it gets the latest, and never holds up the watcher.
func (b *batchAPI) pushProgress(ctx context.Context, w *echo.Response, rec *batch.Record) error {
	sub := b.watch.subscribe(rec)
	defer sub.close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.closing:
			return nil
		case u := <-sub.C:
			if u.Err != nil {
				p := batch.Progress{Total: rec.Total, Status: batch.Error, Message: "Progress is unavailable right now. Poll " +
					rec.BaseURL + "/pdf/progress/" + rec.ID + " to follow the batch."}
				return writeEvent(w, eventError, p)
			}
			if err := writeEvent(w, eventName(u.Progress), u.Progress); err != nil || u.Progress.Terminal() {
				return nil
			}
		}
	}
}

func eventName(p batch.Progress) string {
	switch p.Status {
	case batch.Completed:
		return eventComplete
	case batch.Error:
		return eventError
	}
	return eventProgress
}

// writeEvent writes one event and flushes it past every buffer.
func writeEvent(w *echo.Response, name string, p batch.Progress) error {
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("sse: %w", err)
	}
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return fmt.Errorf("sse: %w", err)
	}
	w.Flush()
	return nil
}
