// Package apierr defines the API's error values and the two body shapes of
// spec §7. Handlers return *Error; the gateway turns it into a body in one place.
package apierr

import (
	"errors"
	"fmt"
	"net/http"
)

// Codes beyond the spec's table are DESIGN §4.12's.
const (
	BadRequest       = "BAD_REQUEST"
	Unauthorized     = "UNAUTHORIZED"
	Forbidden        = "FORBIDDEN"
	NotFound         = "NOT_FOUND"
	MethodNotAllowed = "METHOD_NOT_ALLOWED"
	Conflict         = "CONFLICT"
	PayloadTooLarge  = "PAYLOAD_TOO_LARGE"
	QuotaExceeded    = "QUOTA_EXCEEDED"
	HostedLimit      = "HOSTED_PDF_LIMIT_REACHED"
	RateLimited      = "RATE_LIMITED"
	Internal         = "INTERNAL_SERVER_ERROR"
	Unavailable      = "SERVICE_UNAVAILABLE"
	// RenderCheckFailed: a check the client asked for (DESIGN §6) failed.
	RenderCheckFailed = "RENDER_CHECK_FAILED"
	// DocumentTooLarge: the rendered document passed the plan's page bound
	// or the service's output size bound (DESIGN §10).
	DocumentTooLarge = "DOCUMENT_TOO_LARGE"
)

// Error is an API error. Status 401 is written as shape B, every other status as shape A.
type Error struct {
	Status  int
	Code    string
	Message string
	Hint    string
	// Extra fields merged into a shape A body (e.g. receivedFiles).
	Extra map[string]any
	// Header values to set on the response (e.g. Retry-After).
	Header map[string]string
	// Err is the cause, logged but never sent.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %s: %v", e.Status, e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// WithHint returns e with a hint.
func (e *Error) WithHint(h string) *Error { e.Hint = h; return e }

// New makes an error of the given status; the code follows from the status.
func New(status int, msg string) *Error {
	return &Error{Status: status, Code: codeFor(status), Message: msg}
}

// Newf is New with formatting.
func Newf(status int, format string, args ...any) *Error {
	return New(status, fmt.Sprintf(format, args...))
}

// Wrap is New with a cause that is logged but not sent.
func Wrap(status int, msg string, cause error) *Error {
	e := New(status, msg)
	e.Err = cause
	return e
}

// Bad is a 400 BAD_REQUEST.
func Bad(format string, args ...any) *Error { return Newf(http.StatusBadRequest, format, args...) }

// Invalid is a 400 naming the offending field.
func Invalid(field, problem string) *Error {
	e := Bad("Invalid value for %s: %s", field, problem)
	e.Extra = map[string]any{"field": field}
	return e
}

// Unauth is a 401 with the given message.
func Unauth(msg string) *Error { return New(http.StatusUnauthorized, msg) }

// InvalidKey is spec §5.4's exact 401.
func InvalidKey() *Error { return Unauth("Invalid or expired API key.") }

// Quota is spec §8's 429 for conversions.
func Quota(msg string) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: QuotaExceeded, Message: msg}
}

// HostedLimitReached is spec §8's 429 for hosting.
func HostedLimitReached(msg string) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: HostedLimit, Message: msg,
		Hint: "Delete a hosted PDF or change plan."}
}

func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return BadRequest
	case http.StatusUnauthorized:
		return Unauthorized
	case http.StatusForbidden:
		return Forbidden
	case http.StatusNotFound:
		return NotFound
	case http.StatusMethodNotAllowed:
		return MethodNotAllowed
	case http.StatusConflict:
		return Conflict
	case http.StatusRequestEntityTooLarge:
		return PayloadTooLarge
	case http.StatusTooManyRequests:
		return RateLimited
	case http.StatusServiceUnavailable:
		return Unavailable
	}
	return Internal
}

// As returns the *Error in err's chain, or a 500 wrapping err.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Wrap(http.StatusInternalServerError, "Internal server error.", err)
}

// Body returns the JSON body for e: shape B for 401, shape A otherwise.
func (e *Error) Body() map[string]any {
	if e.Status == http.StatusUnauthorized {
		return map[string]any{"success": false, "message": e.Message}
	}
	b := make(map[string]any, 4+len(e.Extra))
	for k, v := range e.Extra {
		b[k] = v
	}
	b["statusCode"] = e.Status
	b["code"] = e.Code
	b["message"] = e.Message
	if e.Hint != "" {
		b["hint"] = e.Hint
	}
	return b
}
