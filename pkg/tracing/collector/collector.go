// Package collector is a minimal OTLP/HTTP trace receiver on 127.0.0.1 for
// tests: it takes what an OTLP exporter sends to /v1/traces (protobuf,
// plain or gzip) and keeps the spans, so a test proves the whole path from
// OTEL_EXPORTER_OTLP_ENDPOINT to the wire.
package collector

import (
	"compress/gzip"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	collpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, IDs in hex.
type Span struct {
	Service  string
	Name     string
	Kind     tracepb.Span_SpanKind
	TraceID  string
	SpanID   string
	ParentID string
	// Links are the span IDs of linked spans, with their trace IDs.
	Links []Link
	Attrs map[string]string
	// Error is set when the span's status is Error; Message is its description.
	Error   bool
	Message string
	// StartNano and EndNano are Unix times in nanoseconds.
	StartNano, EndNano uint64
}

// Link is a span link.
type Link struct{ TraceID, SpanID string }

// Collector receives spans until Close.
type Collector struct {
	srv *http.Server
	ln  net.Listener

	mu       sync.Mutex
	spans    []Span
	requests int
}

// Start listens on a free port of 127.0.0.1.
func Start() (*Collector, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return StartOn(ln), nil
}

// StartOn serves on ln (a test that must own a given port).
func StartOn(ln net.Listener) *Collector {
	c := &Collector{ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", c.receive)
	c.srv = &http.Server{Handler: mux}
	go func() { _ = c.srv.Serve(ln) }()
	return c
}

// Endpoint is the base URL to give OTEL_EXPORTER_OTLP_ENDPOINT.
func (c *Collector) Endpoint() string { return "http://" + c.ln.Addr().String() }

// Close stops listening.
func (c *Collector) Close() error { return c.srv.Close() }

// Spans returns every span received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Requests is how many export requests arrived, well-formed or not.
func (c *Collector) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

func (c *Collector) receive(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
	req, err := decode(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Service: service, Name: s.GetName(), Kind: s.GetKind(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Attrs: attrs(s.GetAttributes()),
					Error:   s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					Message: s.GetStatus().GetMessage(), StartNano: s.GetStartTimeUnixNano(), EndNano: s.GetEndTimeUnixNano()}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				got = append(got, sp)
			}
		}
	}
	c.mu.Lock()
	c.spans = append(c.spans, got...)
	c.mu.Unlock()
	body, _ := proto.Marshal(&collpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(body)
}

func decode(r *http.Request) (*collpb.ExportTraceServiceRequest, error) {
	if r.Header.Get("Content-Type") != "application/x-protobuf" {
		return nil, errors.New("want application/x-protobuf")
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		body = gz
	}
	data, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		return nil, err
	}
	req := &collpb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(data, req); err != nil {
		return nil, err
	}
	return req, nil
}

// attrs flattens attributes to strings (numbers and booleans as written).
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = strconv.FormatInt(x.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = strconv.FormatBool(x.BoolValue)
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}
