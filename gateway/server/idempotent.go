package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/idempotency"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/batch"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/files"
)

// Idempotency-Key (DESIGN §4.20) on the routes that create work: the same
// key from the same account within 24 hours with the same request gets the
// same outcome, charged once; a different request under the key is a 409.
//
// The route's handler validates the request as usual, then calls
// s.beginIdempotent with the request's fingerprint: a kept outcome is
// answered again there, a running request is joined, and otherwise the
// request runs with its answer recorded (keepWriter) and kept just before
// its first byte goes out. A 4xx or 5xx is not kept.
const (
	headerIdempotencyKey = "Idempotency-Key"
	// headerReplayed marks an answer given again from a kept outcome.
	headerReplayed = "Idempotent-Replayed"
)

// keptHeaders are the headers of an answer that are answered again.
var keptHeaders = []string{
	echo.HeaderContentType, echo.HeaderContentDisposition, headerReport, headerCache,
	headerPdfID, headerPages, headerBatchID, "Link",
}

// ctxIdem holds the request's idempotency state in its echo.Context.
const ctxIdem = "docrender.idempotency"

// idemState is a keyed request's idempotency state.
type idemState struct {
	key   string
	claim *idempotency.Claim
	w     *keepWriter
}

// idempotent wraps a handler of a route that takes Idempotency-Key: it
// checks the header, and once the handler returned, forgets a claim whose
// request did not succeed.
func (s *Server) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		vals := c.Request().Header.Values(headerIdempotencyKey)
		if len(vals) == 0 {
			return next(c)
		}
		if len(vals) > 1 {
			return apierr.Invalid(headerIdempotencyKey, "send the header once")
		}
		if err := idempotency.CheckKey(vals[0]); err != nil {
			return apierr.Invalid(headerIdempotencyKey, strings.TrimPrefix(err.Error(), idempotency.ErrBadKey.Error()+": ")).
				WithHint("Use a unique ID per request, such as a UUID, of 1 to 255 printable ASCII characters.")
		}
		st := &idemState{key: vals[0]}
		c.Set(ctxIdem, st)
		// Deferred: a handler that panics (recovered further out) must
		// not leave its key claimed and renewed forever.
		defer func() {
			if st.w != nil {
				st.w.finish()
			}
			if st.claim != nil && !st.claim.Kept() {
				if derr := st.claim.Drop(c.Request().Context()); derr != nil {
					s.Log.Warn("forgetting a failed request's idempotency key", "err", derr)
				}
			}
		}()
		return next(c)
	}
}

// idemOf is the request's idempotency state, nil without a key.
func idemOf(c echo.Context) *idemState {
	st, _ := c.Get(ctxIdem).(*idemState)
	return st
}

// fingerprint hashes what a request asks for, in parts that the caller
// makes independent of how the request was encoded (multipart boundary,
// key order).
func fingerprint(route string, parts ...string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", route)
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// beginIdempotent starts a keyed request whose fingerprint is fp. It
// returns the outcome kept for the same request (answered again by the
// caller) or nil when this request is to run, its answer recorded. Without
// a key it returns nil and does nothing.
func (s *Server) beginIdempotent(c echo.Context, u *account.User, fp string) (*idempotency.Outcome, error) {
	st := idemOf(c)
	if st == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.requestHold())
	defer cancel()
	for range 3 {
		claim, o, err := s.idem.Begin(ctx, u.ID, st.key, fp)
		switch {
		case errors.Is(err, idempotency.ErrConflict):
			e := apierr.New(http.StatusConflict, "This Idempotency-Key was already used for a different request.").
				WithHint("Send a new Idempotency-Key for a new request; reuse a key only to retry the same request.")
			e.Extra = map[string]any{"field": headerIdempotencyKey}
			return nil, e
		case errors.Is(err, context.DeadlineExceeded) && c.Request().Context().Err() == nil:
			e := apierr.New(http.StatusServiceUnavailable, "The same request, sent earlier with this Idempotency-Key, is still running.").
				WithHint("Send it again later with the same Idempotency-Key to get its answer.")
			e.Header = map[string]string{"Retry-After": "5"}
			return nil, e
		case err != nil:
			return nil, err
		case claim != nil:
			st.claim = claim
			st.w = &keepWriter{ResponseWriter: c.Response().Writer, s: s, c: c, claim: claim}
			c.Response().Writer = st.w
			return nil, nil
		}
		live, err := s.outcomeLive(ctx, u, o)
		if err != nil {
			return nil, err
		}
		if live {
			return o, nil
		}
		// What it answered with is gone (deleted, expired) or its batch
		// failed: judged afresh.
		if err := s.idem.Forget(ctx, u.ID, st.key, o); err != nil {
			return nil, err
		}
	}
	return nil, apierr.New(http.StatusConflict, "This Idempotency-Key's request keeps changing; send a new key.")
}

// outcomeLive reports whether what o answered with can still be answered:
// its stored file, or its batch (running, or completed with its ZIP). Only
// a file or batch that is gone, or a batch that failed, is not; any other
// error is the store's and is returned, so a hiccup never runs (and
// charges) a request twice.
func (s *Server) outcomeLive(ctx context.Context, u *account.User, o *idempotency.Outcome) (bool, error) {
	fileLive := func(id string) (bool, error) {
		f, err := s.files.Get(ctx, id)
		if errors.Is(err, files.ErrNotFound) {
			return false, nil
		}
		return err == nil && f.OwnerID == u.ID, err
	}
	switch {
	case o.FileID != "":
		return fileLive(o.FileID)
	case o.BatchID != "":
		rec, err := s.batches.tracker.Get(ctx, o.BatchID)
		if errors.Is(err, batch.ErrNotFound) {
			return false, nil
		}
		if err != nil || rec.OwnerID != u.ID {
			return false, err
		}
		p, err := s.batches.tracker.Progress(ctx, rec)
		switch {
		case err != nil:
			return false, err
		case p.Status == batch.Error:
			return false, nil // a failed outcome is not kept (DESIGN §4.20)
		case p.Status == batch.Completed:
			return fileLive(rec.ZipID)
		}
	}
	return true, nil
}

// keepOutcome keeps o as the keyed request's outcome now (a batch, kept
// once started, so that a retry joins it while it runs).
func keepOutcome(c echo.Context, o idempotency.Outcome) error {
	st := idemOf(c)
	if st == nil || st.claim == nil {
		return nil
	}
	return st.claim.Keep(c.Request().Context(), o)
}

// answeredWithFile keeps a keyed request's outcome, the stored file id's
// bytes, at once: the file is committed and its conversion charged, so a
// retry from now on must get it, even if the answer never goes out.
func (s *Server) answeredWithFile(c echo.Context, id string) {
	o := idempotency.Outcome{Status: http.StatusOK, Header: keptHeaderValues(c.Response().Header()), FileID: id}
	if err := keepOutcome(c, o); err != nil {
		s.Log.Warn("keeping an idempotent answer failed", "err", err)
	}
}

// keptHeaderValues are h's headers worth answering again.
func keptHeaderValues(h http.Header) map[string]string {
	out := map[string]string{}
	for _, k := range keptHeaders {
		if v := h.Get(k); v != "" {
			out[k] = v
		}
	}
	return out
}

// replay answers a keyed request with its kept outcome.
func (s *Server) replay(c echo.Context, o *idempotency.Outcome) error {
	h := c.Response().Header()
	for k, v := range o.Header {
		h.Set(k, v)
	}
	h.Set(headerReplayed, "true")
	if o.FileID != "" {
		f, err := s.files.Get(c.Request().Context(), o.FileID)
		if err != nil {
			return err
		}
		disposition := "attachment"
		if cd := o.Header[echo.HeaderContentDisposition]; strings.HasPrefix(cd, "inline") {
			disposition = "inline"
		}
		return s.sendBlob(c, blob.FileKey(f.ID), f.Name, f.ContentType, disposition)
	}
	return c.Blob(o.Status, h.Get(echo.HeaderContentType), o.Body)
}

// keepWriter holds a keyed request's status until its first byte, keeps
// the answer as the outcome (a 2xx only), then lets the answer out: a
// client cut off mid-answer finds it kept on its retry.
type keepWriter struct {
	http.ResponseWriter
	s       *Server
	c       echo.Context
	claim   *idempotency.Claim
	status  int
	settled bool
}

func (w *keepWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *keepWriter) Write(p []byte) (int, error) {
	w.settle(p)
	return w.ResponseWriter.Write(p)
}

// Flush lets a flush through once the answer is settled.
func (w *keepWriter) Flush() {
	w.settle(nil)
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *keepWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish lets out a status that was never followed by a byte, and hands
// the writer back (an error's body is not recorded).
func (w *keepWriter) finish() {
	if w.status != 0 {
		w.settle(nil)
	}
	w.c.Response().Writer = w.ResponseWriter
}

// settle keeps a 2xx answer as the outcome, then writes its status.
func (w *keepWriter) settle(first []byte) {
	if w.settled {
		return
	}
	w.settled = true
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status < 300 && !w.claim.Kept() {
		if o, ok := w.outcome(first); ok {
			if err := w.claim.Keep(w.c.Request().Context(), o); err != nil {
				// The answer still goes out; a retry runs afresh once the
				// lease passes.
				w.s.Log.Warn("keeping an idempotent answer failed", "err", err)
			}
		}
	}
	w.ResponseWriter.WriteHeader(w.status)
}

// outcome is a JSON answer as kept, whole. Anything else not kept already
// (a file answer is kept by answeredWithFile) is not kept: the key is
// forgotten.
func (w *keepWriter) outcome(first []byte) (idempotency.Outcome, bool) {
	h := w.Header()
	o := idempotency.Outcome{Status: w.status, Header: keptHeaderValues(h)}
	if strings.HasPrefix(h.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) && len(first) <= idempotency.MaxBody {
		// c.JSON writes its body in one Write.
		o.Body = append([]byte(nil), first...)
		return o, true
	}
	return o, false
}

// keptFile is how long the stored file of a keyed answer lives: as long
// as its key, so that a retry within the window gets the same bytes.
func keptFile(spec StoreSpec) StoreSpec {
	spec.UserType = "registered" // the owner's alone: it was never hosted
	spec.KeepFor = idempotency.Window
	return spec
}
