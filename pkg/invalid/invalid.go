// Package invalid is how a domain package says that a client's input cannot
// be used, without knowing it will become an HTTP answer: the gateway turns
// an *Error into a 400 naming the field (gateway/server/errors.go), the
// worker into a job failure the client reads. Packages under pkg/ and
// worker/ never speak HTTP.
package invalid

import "fmt"

// Error is input that cannot be used: one field of it, or the whole of it
// when Field is empty.
type Error struct {
	// Field names what was wrong in the API's own terms ("margin.top",
	// "documents[3].fileName", "data-qr-size"); empty: the input as a whole.
	Field string
	// Problem says what is wrong with the field ("must be between 0 and 1"),
	// or, without a field, the whole message.
	Problem string
	// Hint says how to fix it, when that is not obvious.
	Hint string
	// Err is the cause, for logs.
	Err error
}

// Field is a problem with one field.
func Field(field, problem string) *Error { return &Error{Field: field, Problem: problem} }

// Input is a problem with the input as a whole.
func Input(format string, args ...any) *Error {
	return &Error{Problem: fmt.Sprintf(format, args...)}
}

// WithHint returns e with a hint.
func (e *Error) WithHint(h string) *Error { e.Hint = h; return e }

// Because returns e with its cause.
func (e *Error) Because(err error) *Error { e.Err = err; return e }

// Error is the message a client reads: "Invalid value for <field>:
// <problem>", or the problem alone.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Problem
	}
	return "Invalid value for " + e.Field + ": " + e.Problem
}

func (e *Error) Unwrap() error { return e.Err }
