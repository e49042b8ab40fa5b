// Package health answers the probes of every process: /readyz runs named
// checks at once and never waits past its deadline (a check that has not
// answered by then is failing), /healthz fails only for what a restart
// would mend.
package health

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"
)

// Timeout bounds one readiness probe.
const Timeout = 3 * time.Second

// Check is one readiness check.
type Check func(context.Context) error

// ErrNoAnswer is the failure of a check still running at the deadline.
var ErrNoAnswer = errors.New("health: no answer within the probe's time")

// Report is a probe's answer: its status and the spec-style body.
type Report struct {
	Status int
	Body   map[string]any
	// Failed are the failing checks' errors, for the log.
	Failed map[string]error
}

// Ready runs every check concurrently, each with ctx bounded by Timeout,
// and reports 200 only when all pass. It returns by the deadline even if a
// check ignores its context.
func Ready(ctx context.Context, checks map[string]Check) Report {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(checks))
	for name, check := range checks {
		go func() { results <- result{name, check(ctx)} }()
	}
	errs := map[string]error{}
	for name := range checks {
		errs[name] = ErrNoAnswer
	}
	for range checks {
		select {
		case r := <-results:
			errs[r.name] = r.err
			continue
		case <-ctx.Done():
		}
		break
	}
	names := make([]string, 0, len(errs))
	for name := range errs {
		names = append(names, name)
	}
	sort.Strings(names)
	rep := Report{Status: http.StatusOK, Failed: map[string]error{}}
	out := map[string]string{}
	for _, name := range names {
		if err := errs[name]; err != nil {
			out[name] = "failing"
			rep.Status = http.StatusServiceUnavailable
			rep.Failed[name] = err
			continue
		}
		out[name] = "ok"
	}
	rep.Body = map[string]any{"status": http.StatusText(rep.Status), "checks": out}
	return rep
}

// Live reports 200 unless one of the liveness checks fails (a worker whose
// browser has been gone too long): the orchestrator restarts the process.
func Live(checks ...func() error) Report {
	for _, c := range checks {
		if c == nil {
			continue
		}
		if err := c(); err != nil {
			return Report{Status: http.StatusServiceUnavailable, Body: map[string]any{"status": "failing", "error": err.Error()},
				Failed: map[string]error{"live": err}}
		}
	}
	return Report{Status: http.StatusOK, Body: map[string]any{"status": "ok"}}
}
