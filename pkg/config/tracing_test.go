package config

import (
	"strings"
	"testing"
)

// Tracing follows OpenTelemetry's variables: on only with an endpoint, the
// base endpoint gets /v1/traces for OTLP/HTTP, the traces endpoint is used
// as it is, and the standard switches turn it off.
func TestTracingSettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Tracing
	}{
		{"off by default", nil, Tracing{}},
		{"service name alone is not on", map[string]string{"OTEL_SERVICE_NAME": "pdf"}, Tracing{ServiceName: "pdf"}},
		{"base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318"},
			Tracing{URL: "http://otel:4318/v1/traces"}},
		{"base endpoint with a path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://gw.example.com/otlp/"},
			Tracing{URL: "https://gw.example.com/otlp/v1/traces"}},
		{"traces endpoint wins, as it is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:9999/custom"},
			Tracing{URL: "http://b:9999/custom"}},
		{"grpc takes the address", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_SERVICE_NAME": "x"},
			Tracing{URL: "http://otel:4317", GRPC: true, ServiceName: "x"}},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
			Tracing{URL: "http://otel:4318/v1/traces"}},
		{"SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318", "OTEL_SDK_DISABLED": "true"}, Tracing{}},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318", "OTEL_TRACES_EXPORTER": "none"}, Tracing{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.Tracing != tc.want {
				t.Fatalf("tracing %+v, want %+v", c.Tracing, tc.want)
			}
			if c.Tracing.Enabled() != (tc.want.URL != "") {
				t.Fatalf("enabled %v with URL %q", c.Tracing.Enabled(), c.Tracing.URL)
			}
		})
	}
}

func TestBadTracingSettingsRefuseToStart(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"endpoint without scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "otel:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"traces endpoint of another scheme", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "udp://otel:4318"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{"http/json", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"traces protocol", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{"another exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load(%v) = %v, want an error naming %s", tc.env, err, tc.want)
			}
		})
	}
}
