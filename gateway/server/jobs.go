package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/proto/jobspb"
)

// newJob fills the fields every job carries.
func (s *Server) newJob(c echo.Context, u *account.User) *jobspb.Job {
	id := ids.New()
	return &jobspb.Job{
		Id:        id,
		RequestId: requestID(c),
		AccountId: u.ID,
		OutputKey: blob.JobResult(id),
		TimeoutMs: s.Config.RenderTimeout.Milliseconds(),
	}
}

// runJob submits job and waits for its result; a failed job becomes the API
// error to answer with.
func (s *Server) runJob(ctx context.Context, job *jobspb.Job) (*jobspb.Result, error) {
	p, err := s.Queue.Submit(ctx, job)
	if err != nil {
		// A publish that timed out may still have been stored: make sure
		// the job, if it ever runs, is skipped.
		_ = s.Queue.CancelJob(job.Id)
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, jobWait(job))
	defer cancel()
	res, err := p.Wait(ctx)
	if err != nil {
		// Nobody will read the result: the worker holding the job (or the
		// one about to take it) stops it and frees its slot.
		if cerr := s.Queue.CancelJob(job.Id); cerr != nil {
			s.Log.Warn("cancel notice not sent", "job_id", job.Id, "err", cerr)
		}
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, apierr.Wrap(http.StatusInternalServerError, "Rendering timed out.", err)
	}
	return res, resultError(res)
}

// runCharged runs job as its conversions of u's plan (one, or one per
// office document: job.Conversions): reserved before the
// job is queued (429 when the month is used up), given back when the job
// produces nothing, kept when it succeeds. A gateway that dies in between
// leaves the reservation pending; it is given back once its hold, longer
// than any wait here, has passed. Generate and merge run through it.
func (s *Server) runCharged(ctx context.Context, u *account.User, job *jobspb.Job) (*jobspb.Result, error) {
	hold := s.requestHold()
	charge, err := s.acct.ReserveConversions(ctx, u, job.Id, int64(job.Conversions()), hold, hold)
	if err != nil {
		return nil, err
	}
	res, err := s.runJob(ctx, job)
	bg := context.WithoutCancel(ctx)
	if err != nil {
		if rerr := s.acct.ReleaseConversions(bg, charge); rerr != nil {
			s.Log.Warn("giving a conversion back failed", "job_id", job.Id, "err", rerr)
		}
		return nil, err
	}
	if cerr := s.acct.CommitConversions(bg, charge); cerr != nil {
		// Left pending, the conversion is given back by the sweeper: the
		// client gets its answer either way.
		s.Log.Warn("keeping a conversion failed", "job_id", job.Id, "err", cerr)
	}
	return res, nil
}

// pendingMargin is how long past a request's longest wait what it reserved
// (a conversion, a hosted slot) stays pending before it counts as the
// reservation of a gateway that died.
const pendingMargin = 5 * time.Minute

// requestHold is how long a request running one job may hold a reservation
// before committing it.
func (s *Server) requestHold() time.Duration {
	return jobWait(&jobspb.Job{TimeoutMs: s.Config.RenderTimeout.Milliseconds()}) + pendingMargin
}

// jobWait is how long a client waits for job: every try may take the full
// render timeout; give up well after the last.
func jobWait(job *jobspb.Job) time.Duration {
	return time.Duration(job.TimeoutMs)*time.Millisecond*queue.MaxDeliver + 30*time.Second
}

// resultError maps a worker's failure to the client's error.
func resultError(res *jobspb.Result) error {
	switch res.ErrorKind {
	case jobspb.ErrorKind_ERROR_KIND_NONE:
		return nil
	case jobspb.ErrorKind_ERROR_KIND_BAD_INPUT:
		e := apierr.Bad("%s", res.ErrorMessage)
		if res.ErrorField != "" {
			// The field the worker blamed, as the gateway's own refusals name theirs.
			e.Extra = map[string]any{"field": res.ErrorField}
		}
		return e
	case jobspb.ErrorKind_ERROR_KIND_CHECK_FAILED:
		return checkFailed(res)
	case jobspb.ErrorKind_ERROR_KIND_TOO_LARGE:
		return &apierr.Error{Status: http.StatusUnprocessableEntity, Code: apierr.DocumentTooLarge, Message: res.ErrorMessage,
			Hint: "Render the document in parts (pageRanges, or fewer rows per document), or use a plan with a higher page bound."}
	case jobspb.ErrorKind_ERROR_KIND_TIMEOUT:
		return apierr.New(http.StatusInternalServerError, res.ErrorMessage).WithHint(timeoutHint(res.ErrorMessage))
	}
	return apierr.New(http.StatusInternalServerError, res.ErrorMessage)
}

// timeoutHint says what to change about a render that ran out of time. The
// worker's message names the wait it was in (DESIGN §6: "... waiting for
// waitForSelector \"#ready\"."); the hint names that option.
func timeoutHint(msg string) string {
	_, wait, ok := strings.Cut(msg, " waiting for ")
	if !ok {
		return "Make the page finish loading sooner, or remove scripts that never end."
	}
	option, _, _ := strings.Cut(wait, " ")
	switch option {
	case "waitForSelector":
		return "waitForSelector never matched an element before the render timeout: check the selector against the page, or have the page add the element sooner."
	case "waitForExpression":
		return "waitForExpression never became truthy before the render timeout: check that the page ever makes it true, or wait for something else."
	case "waitDelay":
		return "waitDelay did not end before the render timeout: make it shorter than the render timeout, less the page's own load time."
	}
	return "The wait never came true before the render timeout: check that the page ever meets it."
}
