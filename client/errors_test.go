package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestErrorDecoding(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    Error
		details int
	}{
		{
			name: "shape A with hint and field", status: 400,
			body: `{"statusCode":400,"code":"BAD_REQUEST","message":"Invalid value for scale: must be 0.1 to 2","hint":"Use 1.","field":"scale"}`,
			want: Error{StatusCode: 400, Code: CodeBadRequest, Message: "Invalid value for scale: must be 0.1 to 2", Hint: "Use 1.", Field: "scale"},
		},
		{
			name: "shape A 422 with details", status: 422,
			body: `{"statusCode":422,"code":"RENDER_CHECK_FAILED","message":"checks failed","details":[{"kind":"console","message":"boom"},{"kind":"resource","url":"http://x/a.css","message":"HTTP 404"}]}`,
			want: Error{StatusCode: 422, Code: CodeRenderCheckFailed, Message: "checks failed"}, details: 2,
		},
		{
			name: "shape B 401", status: 401,
			body: `{"success":false,"message":"Invalid or expired API key."}`,
			want: Error{StatusCode: 401, Code: CodeUnauthorized, Message: "Invalid or expired API key."},
		},
		{
			name: "429 with Retry-After and request ID", status: 429, header: map[string]string{"Retry-After": "7", "X-Request-ID": "req-1"},
			body: `{"statusCode":429,"code":"RATE_LIMITED","message":"slow down"}`,
			want: Error{StatusCode: 429, Code: CodeRateLimited, Message: "slow down", RetryAfter: 7 * time.Second, RequestID: "req-1"},
		},
		{
			name: "not JSON (a proxy's page)", status: 502,
			body: "<html>Bad Gateway</html>\n",
			want: Error{StatusCode: 502, Code: CodeInternal, Message: "<html>Bad Gateway</html>"},
		},
		{
			name: "empty body", status: 404,
			want: Error{StatusCode: 404, Code: CodeNotFound, Message: "Not Found"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, WithRetry(RetryPolicy{MaxAttempts: 1}))
			_, err := c.Usage(context.Background())
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not *Error", err, err)
			}
			if e.StatusCode != tt.want.StatusCode || e.Code != tt.want.Code || e.Message != tt.want.Message ||
				e.Hint != tt.want.Hint || e.Field != tt.want.Field || e.RetryAfter != tt.want.RetryAfter || e.RequestID != tt.want.RequestID {
				t.Errorf("got %+v, want %+v", *e, tt.want)
			}
			if len(e.Details) != tt.details {
				t.Errorf("details %+v, want %d", e.Details, tt.details)
			}
			if !errors.Is(err, &Error{Code: tt.want.Code}) || errors.Is(err, &Error{Code: "OTHER"}) {
				t.Errorf("errors.Is by code does not match")
			}
		})
	}
}

func TestErrorExtraFields(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		w.Write([]byte(`{"statusCode":400,"code":"BAD_REQUEST","message":"No HTML file found among the uploaded files.","hint":"Include index.html","receivedFiles":[{"name":"a.txt","mimetype":"text/plain"}],"other":1}`))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	_, err := c.Generate(context.Background(), GenerateRequest{Files: []Upload{UploadBytes("a.txt", []byte("x"))}})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	if len(e.ReceivedFiles) != 1 || e.ReceivedFiles[0].Name != "a.txt" || e.ReceivedFiles[0].MimeType != "text/plain" {
		t.Errorf("receivedFiles %+v", e.ReceivedFiles)
	}
	if string(e.Extra["other"]) != "1" || len(e.Extra) != 1 {
		t.Errorf("extra %v", e.Extra)
	}
	if got := e.Error(); got != "docrender: 400 BAD_REQUEST: No HTML file found among the uploaded files. (hint: Include index.html)" {
		t.Errorf("Error() = %q", got)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		h    string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"-1", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := retryAfter(tt.h, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

func newTestClient(t *testing.T, url string, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{WithAPIKey("drk_test"), WithSessionToken("sess")}, opts...)
	c, err := New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
