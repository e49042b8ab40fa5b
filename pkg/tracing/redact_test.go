package tracing

import "testing"

func TestRedactedEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:s3cret@collector.example:4318/v1/traces": "https://user:xxxxx@collector.example:4318/v1/traces",
		"http://127.0.0.1:4318":                                "http://127.0.0.1:4318",
	} {
		if got := redacted(in); got != want {
			t.Errorf("redacted(%q) = %q, want %q", in, got, want)
		}
	}
}
