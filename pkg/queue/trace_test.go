package queue

import (
	"context"
	"net/textproto"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/docrender/docrender/proto/jobspb"
)

// The trace context survives NATS headers: written under the W3C names,
// read back with the same trace and span IDs and sampling flag, also from
// a publisher that canonicalised the names; no context reads as none.
func TestTraceContextRoundTripsThroughHeaders(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	defer span.End()
	want := span.SpanContext()

	canonical := func(h nats.Header) nats.Header {
		out := nats.Header{}
		for k, v := range h {
			out[textproto.CanonicalMIMEHeaderKey(k)] = v
		}
		return out
	}
	tests := []struct {
		name string
		h    func(nats.Header) nats.Header
	}{
		{"as written", func(h nats.Header) nats.Header { return h }},
		{"canonical names", canonical},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := nats.Header{}
			InjectTrace(ctx, h)
			if h.Get("traceparent") == "" {
				t.Fatalf("no traceparent header in %v", h)
			}
			got := trace.SpanContextFromContext(ExtractTrace(context.Background(), tc.h(h)))
			if got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() || got.IsSampled() != want.IsSampled() || !got.IsRemote() {
				t.Fatalf("extracted %+v, want the remote twin of %+v", got, want)
			}
		})
	}

	h := nats.Header{}
	InjectTrace(context.Background(), h)
	if len(h) != 0 {
		t.Fatalf("a context without a span wrote headers %v", h)
	}
	if sc := trace.SpanContextFromContext(ExtractTrace(context.Background(), h)); sc.IsValid() {
		t.Fatalf("extracted %+v from no headers", sc)
	}
}

// Through a real NATS (the embedded one and the machine's): the worker's
// span for a job is a child of the span that published it, itself a child
// of the request's, all in the request's trace; the handler's context
// carries that span. An untraced connection hands its handler no trace.
func TestJobCarriesItsTrace(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			c := srv.connect(t, 10)
			WithTracing(tp)(c)

			seen := make(chan trace.SpanContext, 1)
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			go func() {
				_ = c.Consume(ctx, 1, func(ctx context.Context, job *jobspb.Job, d Delivery) (*jobspb.Result, error) {
					seen <- trace.SpanContextFromContext(ctx)
					return &jobspb.Result{ErrorKind: jobspb.ErrorKind_ERROR_KIND_TIMEOUT}, nil
				}, nil)
			}()

			rctx, req := tp.Tracer("test").Start(context.Background(), "request")
			job := renderJob("traced-1")
			job.RequestId = "req-1"
			p, err := c.Submit(rctx, job)
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := p.Wait(wctx); err != nil {
				t.Fatal(err)
			}
			req.End()
			handlerSC := <-seen

			spans := map[string]tracetest.SpanStub{}
			waitFor(t, "the job's spans", func() bool {
				for _, s := range exp.GetSpans() {
					spans[s.Name] = s
				}
				return len(spans) >= 3
			})
			request, publish, process := spans["request"], spans["publish render"], spans["process render"]
			traceID := request.SpanContext.TraceID()
			for _, s := range []tracetest.SpanStub{publish, process} {
				if s.SpanContext.TraceID() != traceID {
					t.Fatalf("span %q in trace %s, want the request's %s (spans %v)", s.Name, s.SpanContext.TraceID(), traceID, names(spans))
				}
			}
			if publish.Parent.SpanID() != request.SpanContext.SpanID() || publish.SpanKind != trace.SpanKindProducer {
				t.Fatalf("publish: parent %s kind %s, want the request's %s, producer", publish.Parent.SpanID(), publish.SpanKind, request.SpanContext.SpanID())
			}
			if process.Parent.SpanID() != publish.SpanContext.SpanID() || !process.Parent.IsRemote() || process.SpanKind != trace.SpanKindConsumer {
				t.Fatalf("process: parent %+v kind %s, want the publish span %s, remote, consumer", process.Parent, process.SpanKind, publish.SpanContext.SpanID())
			}
			if handlerSC.SpanID() != process.SpanContext.SpanID() {
				t.Fatalf("the handler's span %s is not the process span %s", handlerSC.SpanID(), process.SpanContext.SpanID())
			}
			attrs := map[string]string{}
			for _, a := range process.Attributes {
				attrs[string(a.Key)] = a.Value.String()
			}
			if attrs["docrender.job.id"] != "traced-1" || attrs["docrender.request.id"] != "req-1" || attrs["error.type"] != "ERROR_KIND_TIMEOUT" {
				t.Fatalf("process attributes %v: want the job and request IDs and the result's error kind", attrs)
			}
			if process.Status.Description != "ERROR_KIND_TIMEOUT" {
				t.Fatalf("process status %+v, want an error naming the kind", process.Status)
			}
		})
	}
}

func names(spans map[string]tracetest.SpanStub) []string {
	var out []string
	for n := range spans {
		out = append(out, n)
	}
	return out
}

// Without WithTracing nothing is traced: the handler's context has no span.
func TestUntracedConnCarriesNoTrace(t *testing.T) {
	c := embedded(t, 10)
	seen := make(chan trace.SpanContext, 1)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		_ = c.Consume(ctx, 1, func(ctx context.Context, job *jobspb.Job, d Delivery) (*jobspb.Result, error) {
			seen <- trace.SpanContextFromContext(ctx)
			return &jobspb.Result{}, nil
		}, nil)
	}()
	p, err := c.Submit(context.Background(), renderJob("untraced-1"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	if sc := <-seen; sc.IsValid() {
		t.Fatalf("untraced job handled with span %+v", sc)
	}
}
