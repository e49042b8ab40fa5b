package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	// Every try may take the full render timeout; give up well after the last.
	wait := time.Duration(job.TimeoutMs)*time.Millisecond*queue.MaxDeliver + 30*time.Second
	ctx, cancel := context.WithTimeout(ctx, wait)
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

// runCharged runs job as one conversion of u's plan: reserved before the
// job is queued (429 when the month is used up), given back when the job
// produces nothing. Generate and merge run through it.
func (s *Server) runCharged(ctx context.Context, u *account.User, job *jobspb.Job) (*jobspb.Result, error) {
	charge, err := s.acct.ReserveConversions(ctx, u, 1)
	if err != nil {
		return nil, err
	}
	res, err := s.runJob(ctx, job)
	if err != nil {
		if rerr := s.acct.ReleaseConversions(context.WithoutCancel(ctx), charge); rerr != nil {
			s.Log.Warn("giving a conversion back failed", "job_id", job.Id, "err", rerr)
		}
		return nil, err
	}
	return res, nil
}

// resultError maps a worker's failure to the client's error.
func resultError(res *jobspb.Result) error {
	switch res.ErrorKind {
	case jobspb.ErrorKind_ERROR_KIND_NONE:
		return nil
	case jobspb.ErrorKind_ERROR_KIND_BAD_INPUT:
		return apierr.Bad("%s", res.ErrorMessage)
	case jobspb.ErrorKind_ERROR_KIND_TIMEOUT:
		return apierr.New(http.StatusInternalServerError, res.ErrorMessage).
			WithHint("Make the page finish loading sooner, or remove scripts that never end.")
	}
	return apierr.New(http.StatusInternalServerError, res.ErrorMessage)
}
