package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/tracing/collector"
)

// Traces (DESIGN §7) are proven on the wire: an OTLP/HTTP receiver on
// 127.0.0.1 (pkg/tracing/collector) is named by OTEL_EXPORTER_OTLP_ENDPOINT,
// read by config as the service reads it, and the exporter the service
// builds sends it the spans.

// otelSettings are the tracing settings of env, parsed as at start.
func otelSettings(t testing.TB, env map[string]string) config.Tracing {
	t.Helper()
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c.Tracing
}

func startCollector(t testing.TB) *collector.Collector {
	t.Helper()
	col, err := collector.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { col.Close() })
	return col
}

// traces indexes received spans.
type traces []collector.Span

// waitTrace waits until the trace of the server span named name with
// request ID rid holds spans with every one of names, and returns that
// trace's spans and its server span.
func waitTrace(t testing.TB, col *collector.Collector, name, rid string, names ...string) (traces, collector.Span) {
	t.Helper()
	return waitTraceUntil(t, col, name, rid, fmt.Sprint("every one of ", names), func(tr traces) bool { return tr.hasAll(names) })
}

// waitTraceUntil is waitTrace until done says the trace is complete.
func waitTraceUntil(t testing.TB, col *collector.Collector, name, rid, want string, done func(traces) bool) (traces, collector.Span) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all := traces(col.Spans())
		if root, ok := all.find(func(s collector.Span) bool { return s.Name == name && s.Attrs["docrender.request.id"] == rid }); ok {
			tr := all.inTrace(root.TraceID)
			if done(tr) {
				return tr, root
			}
			if time.Now().After(deadline) {
				t.Fatalf("trace of %s %s has %v, want %s", name, rid, tr.names(), want)
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("no span %q with request ID %s among %v", name, rid, all.names())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (ts traces) find(f func(collector.Span) bool) (collector.Span, bool) {
	for _, s := range ts {
		if f(s) {
			return s, true
		}
	}
	return collector.Span{}, false
}

func (ts traces) inTrace(id string) traces {
	var out traces
	for _, s := range ts {
		if s.TraceID == id {
			out = append(out, s)
		}
	}
	return out
}

func (ts traces) named(name string) traces {
	var out traces
	for _, s := range ts {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func (ts traces) names() []string {
	var out []string
	for _, s := range ts {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func (ts traces) hasAll(names []string) bool {
	have := ts.names()
	for _, n := range names {
		if !slices.Contains(have, n) {
			return false
		}
	}
	return true
}

// one returns the single span named name, a child of parent.
func (ts traces) one(t testing.TB, name string, parent collector.Span) collector.Span {
	t.Helper()
	var found traces
	for _, s := range ts.named(name) {
		if s.ParentID == parent.SpanID {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q under %q (%s); the trace has %v", len(found), name, parent.Name, parent.SpanID, ts.names())
	}
	return found[0]
}

// tracedCall sends a keyed request with a caller's own traceparent and
// returns the response and its request ID.
func (c *client) tracedCall(method, path string, b body, traceparent string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.svc.URL+path, b.r)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", b.ctype)
	req.Header.Set("X-API-Key", c.Key)
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, resp.Header.Get("X-Request-ID")
}

// Embedded mode: one generate is one trace from the gateway's server span
// through publishing and the worker's span for the job to every step of
// the render, each span the child of the one before; a failed render and a
// refused request say why by kind; a batch's documents and its ZIP are in
// the batch request's trace, and so are a merge's steps in its own.
func TestTraceEmbedded(t *testing.T) {
	// Read by the SDK's span processor: export every 100 ms, not 5 s.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	col := startCollector(t)
	svc := startService(t, func(c *config.Config) {
		c.Tracing = otelSettings(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint()})
		c.WebhookAllowHosts = []string{"127.0.0.1"}
	})
	if !svc.App.Tracing.Enabled() {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	c := newClient(t, svc)

	t.Run("generate", func(t *testing.T) {
		const secret = "TRACESECRET"
		caller := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		opts := map[string]any{"watermark": map[string]any{"text": "DRAFT"}, "metadata": map[string]any{"title": secret},
			"encryption": map[string]any{"ownerPassword": "owner-" + secret}}
		resp, rid := c.tracedCall("POST", "/pdf/generate",
			multipartBody([]file{htmlFile(secret+".html", "<h1>"+secret+"</h1>")}, opts), caller)
		mustStatus(t, resp, http.StatusOK)
		readAll(t, resp)

		steps := []string{"chromium tab", "chromium load", "chromium wait", "page hooks", "chromium print"}
		tr, root := waitTrace(t, col, "POST /pdf/generate", rid,
			append([]string{"publish render", "process render", "load bundle", "chromium render", "watermark", "metadata", "encrypt", "store"}, steps...)...)
		if root.Kind.String() != "SPAN_KIND_SERVER" || root.ParentID != "" || root.Attrs["http.route"] != "/pdf/generate" ||
			root.Attrs["http.response.status_code"] != "200" || root.Service != "docrender-gateway" {
			t.Fatalf("server span %+v: want a root server span of docrender-gateway with route and status", root)
		}
		// The caller's context is linked, not continued: the API is public.
		if root.TraceID == "0af7651916cd43dd8448eb211c80319c" || len(root.Links) != 1 || root.Links[0].SpanID != "b7ad6b7169203331" {
			t.Fatalf("server span %+v: want a trace of its own linking the caller's span", root)
		}
		publish := tr.one(t, "publish render", root)
		process := tr.one(t, "process render", publish)
		if publish.Kind.String() != "SPAN_KIND_PRODUCER" || process.Kind.String() != "SPAN_KIND_CONSUMER" {
			t.Fatalf("publish kind %s, process kind %s", publish.Kind, process.Kind)
		}
		// The in-process workers export as a worker process does.
		if publish.Service != "docrender-gateway" || process.Service != "docrender-worker" {
			t.Fatalf("publish exported by %q, process by %q: want docrender-gateway, docrender-worker", publish.Service, process.Service)
		}
		if process.Attrs["docrender.request.id"] != rid || process.Attrs["docrender.job.id"] == "" || process.Attrs["messaging.system"] != "nats" {
			t.Fatalf("process attributes %v: want the request and job IDs", process.Attrs)
		}
		for _, name := range []string{"load bundle", "watermark", "metadata", "encrypt", "store"} {
			tr.one(t, name, process)
		}
		if lb := tr.one(t, "load bundle", process); lb.Attrs["docrender.files"] != "1" {
			t.Errorf("load bundle attributes %v: want the file count", lb.Attrs)
		}
		// Chromium's steps, under the render, one after another.
		render := tr.one(t, "chromium render", process)
		var prevEnd uint64
		for _, name := range steps {
			s := tr.one(t, name, render)
			if s.StartNano < prevEnd || s.EndNano < s.StartNano || s.StartNano < render.StartNano || s.EndNano > render.EndNano {
				t.Errorf("step %s [%d, %d] out of order (previous ended %d, render [%d, %d])", name, s.StartNano, s.EndNano, prevEnd, render.StartNano, render.EndNano)
			}
			prevEnd = s.EndNano
		}
		for _, s := range tr {
			if s.Error {
				t.Errorf("span %s failed: %s", s.Name, s.Message)
			}
			// Bounded attributes: none of the client's content, names or passwords.
			if strings.Contains(fmt.Sprint(s.Attrs), secret) || strings.Contains(s.Name, secret) {
				t.Errorf("span %s carries the client's content: %v", s.Name, s.Attrs)
			}
		}
	})

	t.Run("failures by kind", func(t *testing.T) {
		// The worker refuses: a console error with failOnConsoleErrors.
		resp, rid := c.tracedCall("POST", "/pdf/generate", multipartBody([]file{htmlFile("index.html",
			`<script>console.error("boom")</script><p>x</p>`)}, map[string]any{"failOnConsoleErrors": true}), "")
		mustStatus(t, resp, http.StatusUnprocessableEntity)
		tr, root := waitTrace(t, col, "POST /pdf/generate", rid, "process render")
		process := tr.one(t, "process render", tr.one(t, "publish render", root))
		if !process.Error || process.Message != "ERROR_KIND_CHECK_FAILED" || process.Attrs["error.type"] != "ERROR_KIND_CHECK_FAILED" {
			t.Fatalf("process span %+v: want an error of kind ERROR_KIND_CHECK_FAILED", process)
		}
		// A 4xx is named on the server span but is not the server's failure.
		if root.Error || root.Attrs["error.type"] != apierr.RenderCheckFailed || root.Attrs["http.response.status_code"] != "422" {
			t.Fatalf("server span %+v: want error.type %s, status unset", root, apierr.RenderCheckFailed)
		}
		// Refused at the gateway: no job, no worker span.
		resp, rid = c.tracedCall("POST", "/pdf/generate", multipartBody(nil, nil), "")
		mustStatus(t, resp, http.StatusBadRequest)
		tr, root = waitTrace(t, col, "POST /pdf/generate", rid)
		if root.Attrs["error.type"] != apierr.BadRequest || len(tr) != 1 {
			t.Fatalf("refused request: server span %+v, trace %v", root, tr.names())
		}
	})

	t.Run("batch", func(t *testing.T) {
		resp, rid := c.tracedCall("POST", "/pdf/generate-batch", jsonBody(map[string]any{"documents": docs(3, "traced")}), "")
		mustStatus(t, resp, http.StatusOK)
		readAll(t, resp)
		tr, root := waitTraceUntil(t, col, "POST /pdf/generate-batch", rid, "3 documents and the ZIP", func(tr traces) bool {
			return len(tr.named("publish batch-document")) == 3 && len(tr.named("process batch-document")) == 3 &&
				len(tr.named("chromium render")) == 3 && tr.hasAll([]string{"process zip", "zip"})
		})
		indexes := map[string]bool{}
		for _, p := range tr.named("publish batch-document") {
			if p.ParentID != root.SpanID {
				t.Errorf("document published under %s, not the request's span", p.ParentID)
			}
			doc := tr.one(t, "process batch-document", p)
			indexes[doc.Attrs["docrender.batch.index"]] = true
			tr.one(t, "chromium render", doc)
			if doc.Attrs["docrender.batch.id"] == "" || doc.Attrs["docrender.request.id"] != rid {
				t.Errorf("document span attributes %v: want the batch and request IDs", doc.Attrs)
			}
		}
		if len(indexes) != 3 {
			t.Errorf("documents' indexes %v, want 0, 1 and 2", indexes)
		}
		// The last document queued the ZIP: same trace.
		zip := tr.named("process zip")
		if len(zip) != 1 {
			t.Fatalf("%d ZIP jobs in the trace, want 1", len(zip))
		}
		tr.one(t, "zip", zip[0])
	})

	// A batch's webhook: queued in the batch request's trace, one consumer
	// span per try under it (a failed try says so), and the receiver, a
	// client's server, is not sent the trace.
	t.Run("webhook", func(t *testing.T) {
		recv := newHookReceiver(t, func(n int) int {
			if n == 1 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		resp, rid := c.tracedCall("POST", "/pdf/generate-batch", jsonBody(map[string]any{"documents": docs(1, "hooked"),
			"webhook": map[string]any{"url": recv.URL + "/hook"}, "stream": true}), "")
		mustStatus(t, resp, http.StatusOK)
		readAll(t, resp)
		calls := recv.waitCalls(t, 2, time.Minute)
		for i, call := range calls {
			if tp := call.Header.Get("traceparent"); tp != "" {
				t.Errorf("try %d sent the receiver traceparent %q", i+1, tp)
			}
		}
		tr, _ := waitTraceUntil(t, col, "POST /pdf/generate-batch", rid, "two webhook tries", func(tr traces) bool {
			return len(tr.named("deliver webhook")) == 2
		})
		// A redelivered batch step queues the notification again: the
		// stream drops that copy, and its span says so.
		var pub traces
		for _, p := range tr.named("publish webhook") {
			if p.Attrs["docrender.duplicate"] != "true" {
				pub = append(pub, p)
			}
		}
		if len(pub) != 1 || pub[0].Kind.String() != "SPAN_KIND_PRODUCER" || pub[0].Attrs["docrender.webhook.event"] != "batch.completed" {
			t.Fatalf("publish webhook spans %+v: want one producer span of batch.completed", pub)
		}
		var outcomes []string
		for _, d := range tr.named("deliver webhook") {
			if d.ParentID != pub[0].SpanID || d.Kind.String() != "SPAN_KIND_CONSUMER" || d.Service != "docrender-worker" {
				t.Errorf("deliver span %+v: want a worker's consumer span under the publish", d)
			}
			if strings.Contains(fmt.Sprint(d.Attrs), "/hook") {
				t.Errorf("deliver span attributes %v name the receiver's URL", d.Attrs)
			}
			outcomes = append(outcomes, d.Attrs["docrender.attempt"]+":"+d.Attrs["error.type"])
		}
		slices.Sort(outcomes)
		if want := []string{"1:retry", "2:"}; !slices.Equal(outcomes, want) {
			t.Errorf("tries %v, want %v", outcomes, want)
		}
	})

	t.Run("merge", func(t *testing.T) {
		a, b := c.generatePDF("<p>A</p>", nil), c.generatePDF("<p>B</p>", nil)
		resp, rid := c.tracedCall("POST", "/pdf/merge", multipartBody([]file{pdfFile("a.pdf", a), pdfFile("b.pdf", b)}, nil), "")
		mustStatus(t, resp, http.StatusOK)
		readAll(t, resp)
		tr, root := waitTrace(t, col, "POST /pdf/merge", rid, "process merge", "load inputs", "merge", "store")
		process := tr.one(t, "process merge", tr.one(t, "publish merge", root))
		for _, name := range []string{"load inputs", "merge", "store"} {
			tr.one(t, name, process)
		}
		if li := tr.one(t, "load inputs", process); li.Attrs["docrender.files"] != "2" {
			t.Errorf("load inputs attributes %v: want the file count", li.Attrs)
		}
	})
}

// Without an endpoint nothing is installed and nothing is exported, not
// even to the exporter's default address (127.0.0.1:4318 listened on here
// when free), while the service renders and shuts down.
func TestTraceOffExportsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:4318")
	if err != nil && !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatal(err)
	}
	var col *collector.Collector
	if ln != nil {
		col = collector.StartOn(ln)
		defer col.Close()
	} else {
		t.Log("127.0.0.1:4318 is taken: checking only that nothing is installed")
	}
	svc, stop, err := launch(t.TempDir(), func(c *config.Config) {
		// OTEL_ variables that do not turn tracing on.
		c.Tracing = otelSettings(t, map[string]string{"OTEL_SERVICE_NAME": "docrender-off", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	if svc.App.Tracing.Enabled() {
		t.Fatal("tracing on without an endpoint")
	}
	cl := newClient(t, svc)
	if pdf := cl.generatePDF("<p>untraced</p>", nil); !bytes.HasPrefix(pdf, []byte("%PDF")) {
		t.Fatal("no PDF")
	}
	// Stopping flushes whatever a provider holds.
	stop()
	stopped = true
	if col != nil && col.Requests() != 0 {
		t.Fatalf("%d export requests with tracing off: %v", col.Requests(), col.Spans())
	}
}

// Split mode, the real binaries against the machine's NATS: the trace
// context crosses a real NATS from bin/gateway to bin/worker, each
// exporting under its own service name, and the worker's job span is the
// child of the gateway's publish span.
func TestTraceSplit(t *testing.T) {
	gwBin, wkBin := binaries(t)
	col := startCollector(t)
	ns := namespace(t)
	data := t.TempDir()
	otel := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint(), "OTEL_BSP_SCHEDULE_DELAY": "200"}
	addr := freePort(t)
	url := "http://" + addr
	gwEnv := splitEnv(ns, data, otel)
	gwEnv["DOCRENDER_ADDR"], gwEnv["DOCRENDER_BASE_URL"] = addr, url
	gw := startProc(t, gwBin, gwEnv)
	waitReady(t, url, gw)
	startProc(t, wkBin, splitEnv(ns, data, otel))

	c := newClient(t, &service{URL: url})
	resp, rid := c.tracedCall("POST", "/pdf/generate", multipartBody([]file{htmlFile("index.html", "<h1>split</h1>")}, nil), "")
	mustStatus(t, resp, http.StatusOK)
	readAll(t, resp)
	tr, root := waitTrace(t, col, "POST /pdf/generate", rid, "publish render", "process render", "chromium print", "store")
	publish := tr.one(t, "publish render", root)
	process := tr.one(t, "process render", publish)
	printed := tr.one(t, "chromium print", tr.one(t, "chromium render", process))
	for _, s := range []collector.Span{root, publish} {
		if s.Service != "docrender-gateway" {
			t.Errorf("%s exported by %q, want docrender-gateway", s.Name, s.Service)
		}
	}
	for _, s := range []collector.Span{process, printed} {
		if s.Service != "docrender-worker" {
			t.Errorf("%s exported by %q, want docrender-worker", s.Name, s.Service)
		}
	}
}
