package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/pkg/apierr"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/proto/jobspb"
)

// newJob fills the fields every job carries.
func (s *Server) newJob(c echo.Context, u *account.User) *jobspb.Job {
	id := account.RandomID()
	return &jobspb.Job{
		Id:        id,
		RequestId: requestID(c),
		AccountId: u.ID,
		OutputKey: "jobs/" + id + "/out.pdf",
		TimeoutMs: s.Config.RenderTimeout.Milliseconds(),
	}
}

// queueError maps a failure to enqueue to its HTTP answer.
func queueError(err error) error {
	switch {
	case errors.Is(err, queue.ErrQueueFull):
		e := apierr.New(http.StatusTooManyRequests, "The render queue is full. Retry shortly.")
		e.Header = map[string]string{"Retry-After": "5"}
		e.Err = err
		return e
	case errors.Is(err, queue.ErrUnavailable):
		e := apierr.Wrap(http.StatusServiceUnavailable, "The job queue is unavailable. Retry shortly.", err)
		e.Header = map[string]string{"Retry-After": "2"}
		return e
	}
	return fmt.Errorf("enqueue: %w", err)
}

// runJob submits job and waits for its result; a failed job becomes the API
// error to answer with.
func (s *Server) runJob(ctx context.Context, job *jobspb.Job) (*jobspb.Result, error) {
	p, err := s.Queue.Submit(ctx, job)
	if err != nil {
		// A publish that timed out may still have been stored: make sure
		// the job, if it ever runs, is skipped.
		_ = s.Queue.CancelJob(job.Id)
		return nil, queueError(err)
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
