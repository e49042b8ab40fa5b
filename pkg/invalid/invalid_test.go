package invalid

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestMessages(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{Field("margin.top", "must not be negative"), "Invalid value for margin.top: must not be negative"},
		{Input("The request body must be a JSON object."), "The request body must be a JSON object."},
		{Input("Invalid JSON: %v", "unexpected EOF"), "Invalid JSON: unexpected EOF"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestFoundThroughWrapping(t *testing.T) {
	err := fmt.Errorf("pdfopts: %w", Field("format", "must be one of A4, Letter").WithHint("Use A4.").Because(io.EOF))
	var e *Error
	if !errors.As(err, &e) || e.Field != "format" || e.Hint != "Use A4." {
		t.Fatalf("errors.As: %#v", e)
	}
	if !errors.Is(err, io.EOF) {
		t.Fatal("the cause is lost")
	}
}
