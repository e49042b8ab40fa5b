package server

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
)

// Every domain refusal has its status, code and words, whatever wraps it.
func TestHTTPErrorTable(t *testing.T) {
	tests := []struct {
		err              error
		status           int
		code, msg, field string
		hint, retryAfter string
	}{
		{invalid.Field("margin.top", "must not be negative"), 400, apierr.BadRequest, "Invalid value for margin.top: must not be negative", "margin.top", "", ""},
		{invalid.Input("Invalid JSON: x").WithHint("Send a JSON object."), 400, apierr.BadRequest, "Invalid JSON: x", "", "Send a JSON object.", ""},
		{files.ErrNotFound, 404, apierr.NotFound, "PDF not found. It may have expired or been deleted.", "", "", ""},
		{files.ErrPrivate, 401, apierr.Unauthorized, "This PDF is private. Send the owner's API key or session.", "", "", ""},
		{files.ErrForeign, 403, apierr.Forbidden, "This PDF belongs to another account.", "", "", ""},
		{&files.HostedLimitError{Limit: 10}, 429, apierr.HostedLimit, "The plan's maximum of 10 hosted files is reached.", "", "Delete a hosted PDF or change plan.", ""},
		{&account.QuotaError{Plan: "hobby", Used: 99, Limit: 100, Need: 4}, 429, apierr.QuotaExceeded,
			"Monthly conversion limit of the hobby plan reached (99 of 100 used; this request needs 4).", "", "Wait for next month or change plan.", ""},
		{&account.PlanNotOfferedError{Plan: "enterprise", Offered: []string{"hobby", "pro"}}, 403, apierr.Forbidden,
			"The enterprise plan cannot be chosen here.", "", "Plans open to everyone: hobby, pro. Ask the operator for the others.", ""},
		{account.ErrEmailTaken, 409, apierr.Conflict, "An account with this email already exists.", "", "", ""},
		{account.ErrDisabled, 401, apierr.Unauthorized, "This account is disabled. Contact the operator of this service.", "", "", ""},
		{account.ErrBadLogin, 401, apierr.Unauthorized, "Invalid email or password.", "", "", ""},
		{account.ErrKeyNotFound, 404, apierr.NotFound, "API key not found.", "", "", ""},
		{account.ErrNoKey, 401, apierr.Unauthorized, "API key required. Send it in the X-API-Key header or as Authorization: Bearer <key>.", "", "", ""},
		{account.ErrMalformedKey, 401, apierr.Unauthorized, "Malformed API key.", "", "", ""},
		{account.ErrInvalidKey, 401, apierr.Unauthorized, "Invalid or expired API key.", "", "", ""},
		{account.ErrRevokedKey, 401, apierr.Unauthorized, "API key has been revoked.", "", "", ""},
		{queue.ErrQueueFull, 429, apierr.RateLimited, "The render queue is full. Retry shortly.", "", "", "5"},
		{fmt.Errorf("enqueue: %w", queue.ErrUnavailable), 503, apierr.Unavailable, "The job queue is unavailable. Retry shortly.", "", "", "2"},
		{fmt.Errorf("%w: lookup example.com: i/o timeout", netguard.ErrResolver), 503, apierr.Unavailable, "The address's host could not be looked up. Retry shortly.", "", "", "5"},
		{fmt.Errorf("redisstate: get x: %w", state.ErrUnavailable), 503, apierr.Unavailable, "The state store is unavailable. Retry shortly.", "", "", "2"},
		{&http.MaxBytesError{Limit: 1024}, 413, apierr.PayloadTooLarge, "Request body exceeds the limit of 1024 bytes.", "", "", ""},
		{errors.New("disk on fire"), 500, apierr.Internal, "Internal server error.", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.code+" "+tc.msg, func(t *testing.T) {
			// Wrapped as domain code wraps them: the answer is the same.
			e := httpError(fmt.Errorf("somewhere: %w", tc.err))
			field, _ := e.Extra["field"].(string)
			if e.Status != tc.status || e.Code != tc.code || e.Message != tc.msg || field != tc.field || e.Hint != tc.hint ||
				e.Header["Retry-After"] != tc.retryAfter {
				t.Fatalf("httpError(%v) = %d %s %q field %q hint %q retry %q", tc.err, e.Status, e.Code, e.Message, field, e.Hint, e.Header["Retry-After"])
			}
		})
	}
}
