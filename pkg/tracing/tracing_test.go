package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/pkg/tracing/collector"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func load(t *testing.T, env map[string]string) config.Tracing {
	t.Helper()
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c.Tracing
}

// From OTEL_EXPORTER_OTLP_ENDPOINT to the wire: spans reach an OTLP/HTTP
// receiver under the service's name, a step a child of its parent, a
// failed step marked with its error's kind and not its text, all flushed
// by Shutdown.
func TestSpansReachTheEndpoint(t *testing.T) {
	col, err := collector.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	tests := []struct {
		name, service string
		env           map[string]string
	}{
		{"default service name", "docrender-test", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint()}},
		{"OTEL_SERVICE_NAME", "pdf-eu", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": col.Endpoint() + "/v1/traces", "OTEL_SERVICE_NAME": "pdf-eu"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tracing.New(context.Background(), load(t, tc.env), "docrender-test", quiet())
			if err != nil {
				t.Fatal(err)
			}
			if !p.Enabled() {
				t.Fatal("tracing off with an endpoint set")
			}
			ctx, root := p.Tracer("test").Start(context.Background(), "root-"+tc.name)
			_, step := tracing.Child(ctx, "step-"+tc.name)
			secret := &fs.PathError{Op: "open", Path: "/secret/client-file.html", Err: fs.ErrNotExist}
			tracing.End(step, fmt.Errorf("load: %w", secret))
			root.End()
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Shutdown(sctx); err != nil {
				t.Fatal(err)
			}
			byName := map[string]collector.Span{}
			for _, s := range col.Spans() {
				byName[s.Name] = s
			}
			r, s := byName["root-"+tc.name], byName["step-"+tc.name]
			if r.SpanID == "" || s.SpanID == "" {
				t.Fatalf("spans received: %v", col.Spans())
			}
			if r.Service != tc.service || s.TraceID != r.TraceID || s.ParentID != r.SpanID {
				t.Fatalf("root %+v, step %+v: want service %s, the step a child of the root", r, s, tc.service)
			}
			if !s.Error || s.Attrs["error.type"] != "*fs.PathError" || strings.Contains(fmt.Sprint(s), "secret") {
				t.Fatalf("failed step %+v: want error.type *fs.PathError and no error text", s)
			}
		})
	}
}

// Without an endpoint nothing is installed: a no-op provider, steps that
// record nothing, and nothing to shut down.
func TestOffRecordsNothing(t *testing.T) {
	for _, env := range []map[string]string{nil, {"OTEL_SERVICE_NAME": "x"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}} {
		p, err := tracing.New(context.Background(), load(t, env), "docrender-test", quiet())
		if err != nil {
			t.Fatal(err)
		}
		ctx, root := p.Tracer("test").Start(context.Background(), "root")
		_, step := tracing.Child(ctx, "step")
		if p.Enabled() || root.IsRecording() || step.IsRecording() {
			t.Fatalf("env %v: enabled %v, recording %v %v", env, p.Enabled(), root.IsRecording(), step.IsRecording())
		}
		tracing.End(step, errors.New("x"))
		root.End()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// A step with no span above it is no span either.
	if _, s := tracing.Child(context.Background(), "orphan"); s.IsRecording() || s.SpanContext().IsValid() {
		t.Fatalf("orphan step %+v records", s.SpanContext())
	}
}
