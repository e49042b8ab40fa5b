package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestContextIDs(t *testing.T) {
	ctx := With(context.Background(), "request_id", "req1", "batch_id", "")
	ctx = With(ctx, "job_id", "job1")
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want map[string]string
		// absent keys must not appear at all
		absent []string
	}{
		{
			name:   "ids from the context",
			log:    func(l *slog.Logger) { l.InfoContext(ctx, "x") },
			want:   map[string]string{"request_id": "req1", "job_id": "job1", "component": "worker"},
			absent: []string{"batch_id"},
		},
		{
			name: "the record's own value wins",
			log:  func(l *slog.Logger) { l.InfoContext(ctx, "x", "job_id", "mine") },
			want: map[string]string{"job_id": "mine", "request_id": "req1"},
		},
		{
			name: "the logger's own value wins",
			log:  func(l *slog.Logger) { l.With("request_id", "bound").InfoContext(ctx, "x") },
			want: map[string]string{"request_id": "bound", "job_id": "job1"},
		},
		{
			name:   "no context, no ids",
			log:    func(l *slog.Logger) { l.Info("x") },
			absent: []string{"request_id", "job_id"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(NewTo(&buf, "info", "worker"))
			line := buf.String()
			for k := range tc.want {
				if n := strings.Count(line, `"`+k+`":`); n != 1 {
					t.Errorf("key %s appears %d times: %s", k, n, line)
				}
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatalf("not JSON: %s", line)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %s", k, got[k], v)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s present: %s", k, line)
				}
			}
		})
	}
}

// A logger re-tagged with a key it already has logs the key once, the
// latest value.
func TestWithReplaces(t *testing.T) {
	var buf bytes.Buffer
	NewTo(&buf, "info", "worker").With("component", "batch").With("a", "1").Info("x", "b", "2")
	line := buf.String()
	if strings.Count(line, `"component":`) != 1 || !strings.Contains(line, `"component":"batch"`) ||
		!strings.Contains(line, `"a":"1"`) || !strings.Contains(line, `"b":"2"`) {
		t.Fatalf("got %s", line)
	}
}

func TestGroups(t *testing.T) {
	var buf bytes.Buffer
	ctx := With(context.Background(), "job_id", "j")
	NewTo(&buf, "info", "w").WithGroup("g").InfoContext(ctx, "x", "k", "v")
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	g, _ := got["g"].(map[string]any)
	if got["component"] != "w" || g["k"] != "v" || g["job_id"] != "j" {
		t.Fatalf("got %s", buf.String())
	}
}
