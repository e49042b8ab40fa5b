package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Error codes the service answers with (spec §7, DESIGN §4.12, §6).
const (
	CodeBadRequest        = "BAD_REQUEST"
	CodeUnauthorized      = "UNAUTHORIZED"
	CodeForbidden         = "FORBIDDEN"
	CodeNotFound          = "NOT_FOUND"
	CodeMethodNotAllowed  = "METHOD_NOT_ALLOWED"
	CodeConflict          = "CONFLICT"
	CodePayloadTooLarge   = "PAYLOAD_TOO_LARGE"
	CodeQuotaExceeded     = "QUOTA_EXCEEDED"
	CodeHostedLimit       = "HOSTED_PDF_LIMIT_REACHED"
	CodeRateLimited       = "RATE_LIMITED"
	CodeInternal          = "INTERNAL_SERVER_ERROR"
	CodeUnavailable       = "SERVICE_UNAVAILABLE"
	CodeRenderCheckFailed = "RENDER_CHECK_FAILED"
	// CodeDocumentTooLarge: the document passed the plan's page bound or
	// the service's output size bound (422).
	CodeDocumentTooLarge = "DOCUMENT_TOO_LARGE"
)

// Error is every refusal of the service, whichever of the spec's two body
// shapes it came in (shape A: statusCode, code, message, hint and extra
// fields; shape B, every 401: success false and message). A body that is
// neither (a proxy's HTML page, say) still gives an Error: the code
// follows from the status and the message is the body's text.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the machine-readable code (CodeBadRequest, ...); a shape B
	// body, which has none, gets the code of its status.
	Code    string
	Message string
	// Hint says what to do about it, when the service knows.
	Hint string
	// Field names the bad field of a 400, when one is to blame.
	Field string
	// Details lists what failed the checks of a 422 RENDER_CHECK_FAILED.
	Details []CheckDetail
	// ReceivedFiles are the uploads of a 400 that found no HTML (or PDF) among them.
	ReceivedFiles []ReceivedFile
	// Extra holds every other field of the body, as sent.
	Extra map[string]json.RawMessage
	// RetryAfter is the answer's Retry-After (0 when absent).
	RetryAfter time.Duration
	// RequestID is the answer's X-Request-ID, for the operator's logs.
	RequestID string
}

// CheckDetail is one failed check of a 422 (DESIGN §6, §8, §9): kind is
// "console", "resource", "blocked", "accessibility", "pdfa", "pdfua" or
// "template".
type CheckDetail struct {
	Kind    string `json:"kind"`
	URL     string `json:"url,omitempty"`
	Message string `json:"message"`
	// Line and Path place a "template" failure: the template's line (1
	// on), the data's path ("items[1].price"; empty when no value is to
	// blame).
	Line int    `json:"line,omitempty"`
	Path string `json:"path,omitempty"`
}

// ReceivedFile is an upload as the service saw it.
type ReceivedFile struct {
	Name     string `json:"name"`
	MimeType string `json:"mimetype"`
}

// Error reads "docrender: <status> <code>: <message> (hint: <hint>)".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "docrender: %d %s: %s", e.StatusCode, e.Code, e.Message)
	if e.Hint != "" {
		fmt.Fprintf(&b, " (hint: %s)", e.Hint)
	}
	return b.String()
}

// Is makes errors.Is(err, &client.Error{Code: client.CodeNotFound}) match
// by code (or by status when the target has no code).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	if t.Code != "" {
		return t.Code == e.Code
	}
	return t.StatusCode != 0 && t.StatusCode == e.StatusCode
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// decodeError reads a failed answer into an *Error and closes its body.
func decodeError(resp *http.Response) *Error {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{
		StatusCode: resp.StatusCode,
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()),
		RequestID:  resp.Header.Get("X-Request-ID"),
	}
	e.fill(raw)
	if e.Code == "" {
		e.Code = codeFor(resp.StatusCode)
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// fill reads body into e: shape A, shape B, or plain text.
func (e *Error) fill(body []byte) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		text := strings.TrimSpace(string(body))
		if len(text) > 500 {
			text = text[:500] + "..."
		}
		e.Message = text
		return
	}
	take := func(name string, v any) {
		if r, ok := fields[name]; ok {
			_ = json.Unmarshal(r, v)
			delete(fields, name)
		}
	}
	var status int
	take("statusCode", &status)
	take("code", &e.Code)
	take("message", &e.Message)
	take("hint", &e.Hint)
	take("field", &e.Field)
	take("details", &e.Details)
	take("receivedFiles", &e.ReceivedFiles)
	delete(fields, "success")
	if len(fields) > 0 {
		e.Extra = fields
	}
}

// codeFor is the code of a status, for bodies that carry none.
func codeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case http.StatusTooManyRequests:
		return CodeRateLimited
	case http.StatusServiceUnavailable:
		return CodeUnavailable
	}
	if status >= 500 {
		return CodeInternal
	}
	return fmt.Sprintf("HTTP_%d", status)
}
