package config

import (
	"net/url"
	"strings"
)

// Tracing says where a process sends its traces: OpenTelemetry's standard
// variables, not DOCRENDER_ ones, so an operator's usual setup applies
// (DESIGN §7). Only what decides whether, where and as whom is read here;
// the SDK reads the rest itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _CERTIFICATE, _COMPRESSION, OTEL_TRACES_SAMPLER, OTEL_BSP_*,
// OTEL_RESOURCE_ATTRIBUTES).
type Tracing struct {
	// URL is where spans are exported: for http/protobuf the whole URL
	// (…/v1/traces), for grpc the collector's address. "": tracing is off.
	URL string
	// GRPC exports over OTLP/gRPC instead of OTLP/HTTP with protobuf.
	GRPC bool
	// ServiceName is OTEL_SERVICE_NAME; "": the process's own default
	// (docrender-gateway, docrender-worker).
	ServiceName string
}

// Enabled reports whether spans are recorded and exported.
func (t Tracing) Enabled() bool { return t.URL != "" }

// tracing reads the OTEL_ variables. Tracing is on when an endpoint is set
// and neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER=none turns it off.
func (p *parser) tracing() Tracing {
	base := p.str("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	signal := p.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	protoName := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := strings.ToLower(p.str(protoName, ""))
	if protocol == "" {
		protoName = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = strings.ToLower(p.str(protoName, "http/protobuf"))
	}
	exporter := strings.ToLower(p.str("OTEL_TRACES_EXPORTER", "otlp"))
	disabled := p.boolean("OTEL_SDK_DISABLED", false)
	t := Tracing{ServiceName: p.str("OTEL_SERVICE_NAME", "")}
	switch protocol {
	case "http/protobuf":
	case "grpc":
		t.GRPC = true
	default:
		p.fail(protoName, protocol, "http/protobuf or grpc (the Go SDK has no http/json)")
	}
	if exporter != "otlp" && exporter != "none" {
		p.fail("OTEL_TRACES_EXPORTER", exporter, "otlp or none")
	}
	if base != "" {
		p.url("OTEL_EXPORTER_OTLP_ENDPOINT", base, "http", "https")
	}
	if signal != "" {
		p.url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", signal, "http", "https")
	}
	switch {
	case disabled || exporter == "none":
	case signal != "":
		t.URL = signal // used as it is (the specification's rule)
	case base != "" && t.GRPC:
		t.URL = base
	case base != "":
		// The base endpoint gets the signal's path (the specification's rule).
		if u, err := url.Parse(base); err == nil {
			u.Path = strings.TrimRight(u.Path, "/") + "/v1/traces"
			t.URL = u.String()
		}
	}
	return t
}
