package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/tracing"
)

// traceRequests starts each request's server span (DESIGN §7), named by
// its route's template ("POST /pdf/generate"); the jobs it queues are its
// children (pkg/queue). The API is public: a caller's traceparent is
// linked, not continued, so no client chooses our trace IDs or sampling.
// It runs inside logRequests, so it sees the handler's error before that
// is written, and records the API's error code, never a message.
func (s *Server) traceRequests(next echo.HandlerFunc) echo.HandlerFunc {
	tp := s.Tracing
	if tp == nil {
		return next
	}
	tracer := tp.Tracer(tracing.Scope)
	return func(c echo.Context) (err error) {
		req := c.Request()
		route := s.routeLabel(c)
		name := req.Method
		if route != "unmatched" {
			name += " " + route
		}
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithNewRoot(),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(req.Method), semconv.HTTPRouteKey.String(route),
				attribute.String("docrender.request.id", c.Response().Header().Get(echo.HeaderXRequestID)))}
		caller := trace.SpanContextFromContext(tracing.Propagator().Extract(req.Context(), propagation.HeaderCarrier(req.Header)))
		if caller.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
		}
		ctx, span := tracer.Start(req.Context(), name, opts...)
		defer func() {
			if r := recover(); r != nil {
				tracing.Fail(span, "panic")
				span.End()
				panic(r)
			}
		}()
		c.SetRequest(req.WithContext(ctx))
		err = next(c)
		status, code := c.Response().Status, ""
		if err != nil {
			status, code = errorAnswer(err)
		} else if status >= 400 {
			code = strconv.Itoa(status)
		}
		span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(status))
		switch {
		case status >= 500:
			tracing.Fail(span, code)
		case code != "":
			// The client's mistake: named, but not the server's failure.
			span.SetAttributes(semconv.ErrorTypeKey.String(code))
		}
		span.End()
		return err
	}
}

// errorAnswer is the status and API error code writeError answers err with.
func errorAnswer(err error) (int, string) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if he.Code >= 500 {
			return http.StatusInternalServerError, apierr.Internal
		}
		return he.Code, apierr.New(he.Code, "").Code
	}
	ae := httpError(err)
	return ae.Status, ae.Code
}
