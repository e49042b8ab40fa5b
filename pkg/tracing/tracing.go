// Package tracing sets up OpenTelemetry traces for a process (DESIGN §7):
// one trace per request across gateway → JetStream → worker → Chromium.
// A process builds one Provider at start and hands it to what starts traces
// or continues them from a message (the HTTP server, the queue); the steps
// below those start their spans from the context (Child), so a render's
// code needs no tracer passed in. With tracing off the provider is
// OpenTelemetry's no-op one: spans cost a context lookup.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/docrender/docrender/pkg/config"
)

// Scope is the instrumentation scope of docrender's own spans.
const Scope = "github.com/docrender/docrender"

// Provider is a process's tracer provider.
type Provider struct {
	trace.TracerProvider
	sdk *sdktrace.TracerProvider
}

// Off is the provider of a process without tracing: nothing is recorded.
func Off() *Provider { return &Provider{TracerProvider: noop.NewTracerProvider()} }

// New builds the provider cfg asks for, exporting over OTLP as service
// (cfg.ServiceName wins); with tracing off it is Off(). Building it does
// not connect: an unreachable collector costs dropped spans, never a start.
func New(ctx context.Context, cfg config.Tracing, service string, log *slog.Logger) (*Provider, error) {
	if !cfg.Enabled() {
		return Off(), nil
	}
	if cfg.ServiceName != "" {
		service = cfg.ServiceName
	}
	var exp sdktrace.SpanExporter
	var err error
	if cfg.GRPC {
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.URL))
	} else {
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.URL))
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter: %w", err)
	}
	// OTEL_RESOURCE_ATTRIBUTES first, so that the service name is ours.
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(service)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	protocol := "http/protobuf"
	if cfg.GRPC {
		protocol = "grpc"
	}
	log.Info("tracing on", "endpoint", redacted(cfg.URL), "protocol", protocol, "service", service)
	return &Provider{TracerProvider: sdk, sdk: sdk}, nil
}

// redacted is an endpoint URL fit for a log: without credentials in it.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// Enabled reports whether spans are exported.
func (p *Provider) Enabled() bool { return p.sdk != nil }

// Shutdown exports the spans still buffered and stops the exporter; ctx
// bounds how long a collector that does not answer may hold the process.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// Propagator carries trace context across processes: W3C traceparent and
// tracestate, nothing else (no baggage: nothing of a client's travels).
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// Child starts a span for one step under ctx's span, with the provider that
// made that span: a job or request traced gets its steps traced, anything
// else gets no-op spans. End it with End.
func Child(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return From(ctx).Start(ctx, name, trace.WithAttributes(attrs...))
}

// From is the tracer of the provider that made ctx's span (a no-op one
// when ctx has none), for steps that need more than Child's options.
func From(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(Scope)
}

// End ends span, failed when err is not nil. Only err's type is recorded,
// never its text: messages may name a client's files or pages.
func End(span trace.Span, err error) {
	if err != nil {
		Fail(span, errorKind(err))
	}
	span.End()
}

// errorKind names err without its text: a timeout, a cancel, or the type
// of the innermost error in its chain that has a type of its own
// (*fs.PathError, say, where fmt's wrappers and errors.New say nothing).
func errorKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	kind := "error"
	for ; err != nil; err = errors.Unwrap(err) {
		switch k := fmt.Sprintf("%T", err); k {
		case "*errors.errorString", "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
		default:
			kind = k
		}
	}
	return kind
}

// Fail marks span failed with kind, a bounded name of what went wrong (an
// error kind, a status code), as its status and error.type.
func Fail(span trace.Span, kind string) {
	span.SetAttributes(semconv.ErrorTypeKey.String(kind))
	span.SetStatus(codes.Error, kind)
}
