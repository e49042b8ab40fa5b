package config

import (
	"slices"
	"strings"
	"testing"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// A setting that cannot work refuses the start, naming the variable, and
// every problem is listed at once.
func TestBadSettingsRefuseToStart(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string // each must appear in the error
	}{
		{"zero conversions", map[string]string{"DOCRENDER_PLAN_HOBBY_CONVERSIONS": "0"}, []string{"DOCRENDER_PLAN_HOBBY_CONVERSIONS", "at least 1"}},
		{"negative hosted", map[string]string{"DOCRENDER_PLAN_PRO_HOSTED": "-1"}, []string{"DOCRENDER_PLAN_PRO_HOSTED"}},
		{"negative templates", map[string]string{"DOCRENDER_PLAN_HOBBY_TEMPLATES": "-1"}, []string{"DOCRENDER_PLAN_HOBBY_TEMPLATES", "at least 0"}},
		{"zero batch", map[string]string{"DOCRENDER_PLAN_ENTERPRISE_MAX_BATCH": "0"}, []string{"DOCRENDER_PLAN_ENTERPRISE_MAX_BATCH"}},
		{"zero concurrency", map[string]string{"DOCRENDER_PLAN_HOBBY_CONCURRENCY": "0"}, []string{"DOCRENDER_PLAN_HOBBY_CONCURRENCY"}},
		{"zero rate", map[string]string{"DOCRENDER_PLAN_PRO_RATE": "0"}, []string{"DOCRENDER_PLAN_PRO_RATE"}},
		{"negative retention", map[string]string{"DOCRENDER_PLAN_HOBBY_RETENTION": "-1h"}, []string{"DOCRENDER_PLAN_HOBBY_RETENTION", "positive"}},
		{"retention not a duration", map[string]string{"DOCRENDER_PLAN_HOBBY_RETENTION": "3 days"}, []string{"DOCRENDER_PLAN_HOBBY_RETENTION", "Go duration"}},
		{"zero render timeout", map[string]string{"DOCRENDER_RENDER_TIMEOUT": "0s"}, []string{"DOCRENDER_RENDER_TIMEOUT"}},
		{"zero sweep", map[string]string{"DOCRENDER_SWEEP_INTERVAL": "0s"}, []string{"DOCRENDER_SWEEP_INTERVAL"}},
		{"zero pages", map[string]string{"DOCRENDER_PLAN_PRO_MAX_PAGES": "0"}, []string{"DOCRENDER_PLAN_PRO_MAX_PAGES", "at least 1"}},
		{"tiny output", map[string]string{"DOCRENDER_MAX_OUTPUT_BYTES": "10"}, []string{"DOCRENDER_MAX_OUTPUT_BYTES"}},
		{"tiny upload", map[string]string{"DOCRENDER_MAX_UPLOAD_BYTES": "10"}, []string{"DOCRENDER_MAX_UPLOAD_BYTES"}},
		{"zero queue", map[string]string{"DOCRENDER_MAX_QUEUE": "0"}, []string{"DOCRENDER_MAX_QUEUE"}},
		{"zero streams", map[string]string{"DOCRENDER_MAX_STREAMS_PER_ACCOUNT": "0"}, []string{"DOCRENDER_MAX_STREAMS_PER_ACCOUNT", "at least 1"}},
		{"workers not a number", map[string]string{"DOCRENDER_WORKERS": "four"}, []string{"DOCRENDER_WORKERS", "an integer"}},
		{"replicas", map[string]string{"DOCRENDER_JOB_REPLICAS": "7"}, []string{"DOCRENDER_JOB_REPLICAS"}},
		{"unknown worker kind", map[string]string{"DOCRENDER_WORKER_KINDS": "chromium,word"}, []string{"DOCRENDER_WORKER_KINDS", "chromium, pdf, office"}},
		{"worker kind twice", map[string]string{"DOCRENDER_WORKER_KINDS": "pdf,pdf"}, []string{"DOCRENDER_WORKER_KINDS", "each once"}},
		{"zero slice pages", map[string]string{"DOCRENDER_SLICE_PAGES": "0"}, []string{"DOCRENDER_SLICE_PAGES", "at least 1"}},
		{"base URL without scheme", map[string]string{"DOCRENDER_BASE_URL": "docs.example.com"}, []string{"DOCRENDER_BASE_URL", "http, https"}},
		{"base URL of another scheme", map[string]string{"DOCRENDER_BASE_URL": "ftp://docs.example.com"}, []string{"DOCRENDER_BASE_URL"}},
		{"NATS URL without scheme", map[string]string{"DOCRENDER_NATS_URL": "127.0.0.1:4222", "DOCRENDER_REDIS_URL": "redis://127.0.0.1:6379/0"}, []string{"DOCRENDER_NATS_URL"}},
		{"Redis URL without scheme", map[string]string{"DOCRENDER_REDIS_URL": "127.0.0.1:6379"}, []string{"DOCRENDER_REDIS_URL"}},
		{"scaled out without Redis", map[string]string{"DOCRENDER_NATS_URL": "nats://127.0.0.1:4222"}, []string{"DOCRENDER_REDIS_URL", "share one state store"}},
		{"S3 endpoint with scheme", map[string]string{"DOCRENDER_S3_ENDPOINT": "http://minio:9000", "DOCRENDER_S3_ACCESS_KEY": "a", "DOCRENDER_S3_SECRET_KEY": "b"}, []string{"DOCRENDER_S3_ENDPOINT", "without scheme"}},
		{"S3 without keys", map[string]string{"DOCRENDER_S3_ENDPOINT": "minio:9000"}, []string{"DOCRENDER_S3_ACCESS_KEY"}},
		{"every problem at once", map[string]string{"DOCRENDER_WORKERS": "0", "DOCRENDER_BASE_URL": "x", "DOCRENDER_PLAN_HOBBY_RATE": "-5"},
			[]string{"DOCRENDER_WORKERS", "DOCRENDER_BASE_URL", "DOCRENDER_PLAN_HOBBY_RATE"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.env))
			if err == nil {
				t.Fatalf("Load(%v) succeeded", tc.env)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestGoodSettingsLoad(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"defaults", nil},
		{"scaled out", map[string]string{"DOCRENDER_NATS_URL": "nats://a:4222, nats://b:4222", "DOCRENDER_REDIS_URL": "rediss://r:6380/1",
			"DOCRENDER_S3_ENDPOINT": "minio:9000", "DOCRENDER_S3_ACCESS_KEY": "a", "DOCRENDER_S3_SECRET_KEY": "b", "DOCRENDER_JOB_REPLICAS": "3"}},
		{"hosting off", map[string]string{"DOCRENDER_PLAN_HOBBY_HOSTED": "0", "DOCRENDER_BASE_URL": "https://pdf.example.com/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if p := c.Plans["hobby"]; p.Concurrency != 2 || p.Rate != 60 {
				t.Errorf("hobby concurrency %d, rate %d: want DESIGN §2's 2 and 60", p.Concurrency, p.Rate)
			}
			for plan, want := range map[string]int64{"hobby": 5, "pro": 100, "enterprise": 1000} {
				if got := c.Plans[plan].Templates; got != want {
					t.Errorf("%s templates %d: want DESIGN §2's %d", plan, got, want)
				}
			}
			if !slices.Equal(c.WorkerKinds, []string{"chromium", "pdf", "office"}) {
				t.Errorf("worker kinds %v: want DESIGN §2's chromium,pdf,office", c.WorkerKinds)
			}
			if c.MaxStreamsPerAccount != 20 {
				t.Errorf("streams per account %d: want DESIGN §2's 20", c.MaxStreamsPerAccount)
			}
		})
	}
}

// A misspelt variable is named with the setting it most likely meant;
// the repository's own tool variables are not settings and pass quietly.
func TestUnknownNamesWarn(t *testing.T) {
	c, err := LoadEnviron([]string{"DOCRENDER_WORKER=4", "DOCRENDER_REDIS_URI=redis://x", "DOCRENDER_TEST_REDIS_URL=x",
		"DOCRENDER_CACHE=/tmp", "DOCRENDER_PLAN_HOBBY_CONVERSION=5", "DOCRENDER_WORKERS=2", "DOCRENDER_MAX_STREAMS_PER_ACCOUNT=5", "PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"DOCRENDER_PLAN_HOBBY_CONVERSION is not a docrender setting and is ignored; did you mean DOCRENDER_PLAN_HOBBY_CONVERSIONS?",
		"DOCRENDER_REDIS_URI is not a docrender setting and is ignored; did you mean DOCRENDER_REDIS_URL?",
		"DOCRENDER_WORKER is not a docrender setting and is ignored; did you mean DOCRENDER_WORKERS?",
	}
	if strings.Join(c.Warnings, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings\n%s\nwant\n%s", strings.Join(c.Warnings, "\n"), strings.Join(want, "\n"))
	}
	if c.Workers != 2 || c.MaxStreamsPerAccount != 5 {
		t.Errorf("workers %d, streams per account %d: want 2 and 5", c.Workers, c.MaxStreamsPerAccount)
	}
}
