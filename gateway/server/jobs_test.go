package server

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/proto/jobspb"
)

// A render that ran out of time in one of the job's waits answers 500 with
// a hint naming that option (DESIGN §6).
func TestTimeoutHintNamesTheWait(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{`Rendering exceeded the time limit of 3s waiting for waitForSelector "#ready".`, "waitForSelector never matched"},
		{`Rendering exceeded the time limit of 3s waiting for waitForExpression "window.done".`, "waitForExpression never became truthy"},
		{`Rendering exceeded the time limit of 3s waiting for waitDelay 5s.`, "waitDelay did not end"},
		{`Rendering exceeded the time limit of 3s.`, "Make the page finish loading sooner"},
	} {
		err := resultError(&jobspb.Result{ErrorKind: jobspb.ErrorKind_ERROR_KIND_TIMEOUT, ErrorMessage: tc.msg})
		var e *apierr.Error
		if !errors.As(err, &e) || e.Status != http.StatusInternalServerError || e.Message != tc.msg || !strings.HasPrefix(e.Hint, tc.want) {
			t.Errorf("%s: got %#v, want a 500 whose hint starts %q", tc.msg, err, tc.want)
		}
	}
}

// A document past its plan's page bound answers 422 DOCUMENT_TOO_LARGE
// (DESIGN §10) with the worker's message.
func TestTooLargeIs422(t *testing.T) {
	msg := "The document has more than 3 pages, the most the hobby plan renders."
	err := resultError(&jobspb.Result{ErrorKind: jobspb.ErrorKind_ERROR_KIND_TOO_LARGE, ErrorMessage: msg})
	var e *apierr.Error
	if !errors.As(err, &e) || e.Status != http.StatusUnprocessableEntity || e.Code != apierr.DocumentTooLarge || e.Message != msg || e.Hint == "" {
		t.Errorf("got %#v, want a 422 DOCUMENT_TOO_LARGE with the message and a hint", err)
	}
}
