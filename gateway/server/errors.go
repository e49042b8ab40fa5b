package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/gateway/templates"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
)

// Domain packages refuse with plain errors (sentinels, typed errors,
// *invalid.Error) and never speak HTTP. This is the one place where a
// refusal becomes a status, a code and the words a client reads; writeError
// sends it. Handlers build *apierr.Error themselves only for what is HTTP's
// own (a missing form part, a body that is not JSON).

// answer is the HTTP answer to one sentinel error.
type answer struct {
	err    error
	status int
	msg    string
	// retryAfter, in seconds, for a refusal that passes.
	retryAfter string
}

var answers = []answer{
	{files.ErrNotFound, http.StatusNotFound, "PDF not found. It may have expired or been deleted.", ""},
	{files.ErrPrivate, http.StatusUnauthorized, "This PDF is private. Send the owner's API key or session.", ""},
	{files.ErrForeign, http.StatusForbidden, "This PDF belongs to another account.", ""},
	{templates.ErrNotFound, http.StatusNotFound, "Template not found.", ""},
	{account.ErrEmailTaken, http.StatusConflict, "An account with this email already exists.", ""},
	{account.ErrDisabled, http.StatusUnauthorized, "This account is disabled. Contact the operator of this service.", ""},
	{account.ErrBadLogin, http.StatusUnauthorized, "Invalid email or password.", ""},
	{account.ErrKeyNotFound, http.StatusNotFound, "API key not found.", ""},
	{account.ErrNoKey, http.StatusUnauthorized, "API key required. Send it in the X-API-Key header or as Authorization: Bearer <key>.", ""},
	{account.ErrMalformedKey, http.StatusUnauthorized, "Malformed API key.", ""},
	{account.ErrInvalidKey, http.StatusUnauthorized, apierr.InvalidKey().Message, ""},
	{account.ErrRevokedKey, http.StatusUnauthorized, "API key has been revoked.", ""},
	{queue.ErrQueueFull, http.StatusTooManyRequests, "The render queue is full. Retry shortly.", "5"},
	{queue.ErrUnavailable, http.StatusServiceUnavailable, "The job queue is unavailable. Retry shortly.", "2"},
	// A URL field's host could not be looked up (DNS down): no verdict yet.
	{netguard.ErrResolver, http.StatusServiceUnavailable, "The address's host could not be looked up. Retry shortly.", "5"},
	// Redis restarting: worth a retry in a moment, like a NATS outage.
	{state.ErrUnavailable, http.StatusServiceUnavailable, "The state store is unavailable. Retry shortly.", "2"},
}

// httpError is the answer to err: its own if it is an *apierr.Error, the
// domain refusal's otherwise, a 500 for anything else.
func httpError(err error) *apierr.Error {
	var (
		ae      *apierr.Error
		bad     *invalid.Error
		hosted  *files.HostedLimitError
		quota   *account.QuotaError
		offered *account.PlanNotOfferedError
		signer  *account.SigningRefusedError
		mbe     *http.MaxBytesError
		tpls    *templates.LimitError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &bad):
		if bad.Field != "" {
			ae = apierr.Invalid(bad.Field, bad.Problem)
		} else {
			ae = apierr.Bad("%s", bad.Problem)
		}
		ae.Hint, ae.Err = bad.Hint, err
		return ae
	case errors.As(err, &mbe):
		return apierr.Newf(http.StatusRequestEntityTooLarge, "Request body exceeds the limit of %d bytes.", mbe.Limit)
	case errors.As(err, &hosted):
		e := apierr.HostedLimitReached(fmt.Sprintf("The plan's maximum of %d hosted files is reached.", hosted.Limit))
		e.Err = err
		return e
	case errors.As(err, &tpls):
		e := apierr.Newf(http.StatusForbidden, "The plan's maximum of %d templates is reached.", tpls.Limit)
		e.Hint, e.Err = "Delete a template, upload a new version of a stored one (same name), or change plan.", err
		return e
	case errors.As(err, &quota):
		e := apierr.Quota(fmt.Sprintf("Monthly conversion limit of the %s plan reached (%d of %d used; this request needs %d).",
			quota.Plan, quota.Used, quota.Limit, quota.Need))
		e.Hint, e.Err = "Wait for next month or change plan.", err
		return e
	case errors.As(err, &signer):
		e := apierr.Newf(http.StatusForbidden, "The signing identity %q is not available to this account.", signer.Identity)
		e.Hint, e.Err = "Ask the operator of this service to grant it.", err
		return e
	case errors.As(err, &offered):
		return apierr.Newf(http.StatusForbidden, "The %s plan cannot be chosen here.", offered.Plan).
			WithHint("Plans open to everyone: " + strings.Join(offered.Offered, ", ") + ". Ask the operator for the others.")
	}
	for _, a := range answers {
		if errors.Is(err, a.err) {
			e := apierr.Wrap(a.status, a.msg, err)
			if a.retryAfter != "" {
				e.Header = map[string]string{"Retry-After": a.retryAfter}
			}
			return e
		}
	}
	return apierr.As(err)
}
