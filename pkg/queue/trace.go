package queue

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
)

// A job's trace context travels in its message's headers (W3C traceparent,
// tracestate): the worker's span for the job is a child of the publishing
// span, itself a child of the request's, so one trace covers a request
// from the gateway through JetStream to the render's steps (DESIGN §7).

// Option configures a connection.
type Option func(*Conn)

// WithTracing makes the connection trace what it publishes and consumes
// with tp; without it, nothing is traced.
func WithTracing(tp trace.TracerProvider) Option {
	return func(c *Conn) { c.tracer = tp.Tracer(tracing.Scope) }
}

func noTracer() trace.Tracer { return noop.NewTracerProvider().Tracer(tracing.Scope) }

// headerCarrier reads and writes trace context in NATS headers, whose
// names are case-sensitive: written as the propagator names them
// (traceparent), read in any case (a publisher that canonicalised them).
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string {
	if v := nats.Header(h).Get(key); v != "" {
		return v
	}
	for k, vs := range h {
		if strings.EqualFold(k, key) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { nats.Header(h).Set(key, value) }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// InjectTrace writes ctx's span context into h.
func InjectTrace(ctx context.Context, h nats.Header) {
	tracing.Propagator().Inject(ctx, headerCarrier(h))
}

// ExtractTrace returns ctx with the remote span context h carries, if any.
func ExtractTrace(ctx context.Context, h nats.Header) context.Context {
	return tracing.Propagator().Extract(ctx, headerCarrier(h))
}

// jobKind names a job's kind in span names and attributes.
func jobKind(job *jobspb.Job) string { return job.Op() }

// jobAttributes are a job's span attributes: IDs and the kind, never what
// the job carries (a client's HTML, file names, URLs).
func (c *Conn) jobAttributes(job *jobspb.Job, op attribute.KeyValue) []attribute.KeyValue {
	lane := c.subjectFor(job)
	if job.GetBatchDocument() != nil || job.GetSlice() != nil {
		lane = c.batchLane(job.WorkerKind()) + "*" // an account's lane, the account not named
	}
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKey.String("nats"), op,
		semconv.MessagingDestinationNameKey.String(lane),
		semconv.MessagingMessageIDKey.String(job.Id),
		attribute.String("docrender.job.id", job.Id),
		attribute.String("docrender.job.kind", jobKind(job)),
		attribute.String("docrender.request.id", job.RequestId),
	}
	if id, i := job.BatchRef(); id != "" {
		attrs = append(attrs, attribute.String("docrender.batch.id", id))
		if job.GetBatchDocument() != nil {
			attrs = append(attrs, attribute.Int("docrender.batch.index", int(i)))
		}
	}
	return attrs
}

// startPublish starts the producer span of publishing job.
func (c *Conn) startPublish(ctx context.Context, job *jobspb.Job) (context.Context, trace.Span) {
	return c.tracer.Start(ctx, "publish "+jobKind(job), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(c.jobAttributes(job, semconv.MessagingOperationTypeSend)...))
}

// startProcess starts the consumer span of one try of job, a child of the
// span that published it.
func (c *Conn) startProcess(ctx context.Context, h nats.Header, job *jobspb.Job, d Delivery) (context.Context, trace.Span) {
	attrs := append(c.jobAttributes(job, semconv.MessagingOperationTypeProcess), attribute.Int("docrender.attempt", d.Attempt))
	return c.tracer.Start(ExtractTrace(ctx, h), "process "+jobKind(job), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attrs...))
}

// endProcess records how a try ended: a result's error kind, a failure to
// be retried, or a cancel by the job's client.
func endProcess(span trace.Span, res *jobspb.Result, err error, cancelled, last bool) {
	switch {
	case cancelled:
		span.SetAttributes(attribute.Bool("docrender.cancelled", true))
	case err != nil && !last:
		tracing.Fail(span, "retry")
	case err != nil:
		tracing.Fail(span, jobspb.ErrorKind_ERROR_KIND_INTERNAL.String())
	case res != nil && res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_NONE:
		tracing.Fail(span, res.ErrorKind.String())
	}
	span.End()
}
