package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/worker/browser"
)

// sseEvent is one server-sent event as read off the wire.
type sseEvent struct {
	Name string
	Data progressRecord
	At   time.Time
}

// slowDocs are documents that each hold a render slot for about ms
// milliseconds, so a batch lasts long enough to watch.
func slowDocs(n, ms int, name string) []map[string]any {
	out := docs(n, name)
	for i := range out {
		out[i]["htmlContent"] = fmt.Sprintf(`<script>const t0=Date.now(); while(Date.now()-t0<%d){}</script><h1>MARK-%d</h1>`, ms, i)
	}
	return out
}

// openStream opens the progress stream with the API key.
func (c *client) openStream(id string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest("GET", c.svc.URL+"/pdf/progress/"+id+"/stream", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// checkSSEHeaders checks what proxies and browsers need (spec 4.5).
func checkSSEHeaders(t testing.TB, resp *http.Response) {
	t.Helper()
	want := map[string]string{
		"Content-Type":      "text/event-stream",
		"Cache-Control":     "no-cache",
		"X-Accel-Buffering": "no",
		"Connection":        "keep-alive",
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream status %d", resp.StatusCode)
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
}

// readEvents reads events until the server closes the stream. Every line
// must be an event or data field or the blank line ending an event.
func readEvents(t testing.TB, resp *http.Response) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur = sseEvent{Name: strings.TrimPrefix(line, "event: ")}
		case strings.HasPrefix(line, "data: "):
			var raw map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &raw); err != nil || len(raw) != 4 {
				t.Fatalf("data line %q is not a progress record", line)
			}
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data)
		case line == "":
			if cur.Name == "" {
				t.Fatal("event without a name")
			}
			cur.At = time.Now()
			events = append(events, cur)
			cur = sseEvent{}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("stream ended with %v, want a clean close", err)
	}
	return events
}

func TestSSEProgressThenComplete(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	const n = 6
	id := c.startStream(map[string]any{"documents": slowDocs(n, 600, "sse")})
	resp := c.openStream(id)
	checkSSEHeaders(t, resp)
	events := readEvents(t, resp)

	last := events[len(events)-1]
	want := progressRecord{Total: n, Current: n, Status: "completed", Message: "Download URL: " + svc.baseURL() + "/pdf/download/" + id}
	if last.Name != "complete" || last.Data != want {
		t.Fatalf("last event %s %+v, want complete %+v", last.Name, last.Data, want)
	}
	progress := events[:len(events)-1]
	if len(progress) < 3 {
		t.Fatalf("only %d progress events before complete", len(progress))
	}
	prev := -1
	var gaps []time.Duration
	for i, e := range progress {
		if e.Name != "progress" || e.Data.Status != "processing" || e.Data.Total != n || e.Data.Current < prev || e.Data.Current > n ||
			e.Data.Message != fmt.Sprintf("Generated %d/%d PDFs", e.Data.Current, n) {
			t.Fatalf("event %d: %s %+v after current %d", i, e.Name, e.Data, prev)
		}
		prev = e.Data.Current
		if i > 0 {
			gaps = append(gaps, e.At.Sub(progress[i-1].At))
		}
	}
	// About every 500 ms: the median gap near it, none far off.
	slices.Sort(gaps)
	median := gaps[len(gaps)/2]
	if median < 400*time.Millisecond || median > 700*time.Millisecond || gaps[0] < 250*time.Millisecond || gaps[len(gaps)-1] > 2*time.Second {
		t.Errorf("gaps between progress events %v (median %s), want about 500ms", gaps, median)
	}
	t.Logf("%d progress events, median gap %s", len(progress), median)
}

func TestSSEUnknownBatch(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	resp := c.openStream("AAAAAAAAAAAAAAAAAAAAAA")
	checkSSEHeaders(t, resp)
	events := readEvents(t, resp)
	want := []sseEvent{{Name: "error", Data: progressRecord{Status: "not_found", Message: "Batch not found. It may have expired or never existed."}}}
	if len(events) != 1 || events[0].Name != want[0].Name || events[0].Data != want[0].Data {
		t.Fatalf("events %+v, want %+v", events, want)
	}
}

func TestSSEAccess(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	id := c.startStream(map[string]any{"documents": docs(1, "acc")})
	expectError(t, newClient(t, svc).openStream(id), http.StatusForbidden, "FORBIDDEN")
	anon, err := http.Get(svc.URL + "/pdf/progress/" + id + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, anon, http.StatusUnauthorized, "UNAUTHORIZED")
	c.waitBatch(id, 1, time.Minute)
}

func TestSSEClientLeavingFreesTheStream(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	before := svc.App.Server.ActiveProgressStreams()
	id := c.startStream(map[string]any{"documents": slowDocs(4, 800, "leave")})
	resp := c.openStream(id)
	checkSSEHeaders(t, resp)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "event: progress") {
		t.Fatalf("first line %q, %v", line, err)
	}
	if got := svc.App.Server.ActiveProgressStreams(); got != before+1 {
		t.Fatalf("open streams %d, want %d", got, before+1)
	}
	resp.Body.Close()
	deadline := time.Now().Add(3 * time.Second)
	for svc.App.Server.ActiveProgressStreams() != before {
		if time.Now().After(deadline) {
			t.Fatalf("stream still open %s after the client left", 3*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.waitBatch(id, 4, 2*time.Minute)
}

// TestSSEInBrowser follows a batch with a real EventSource in headless
// Chromium, authenticated by the session cookie as a dashboard page would be.
func TestSSEInBrowser(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	bin, err := browser.FindChromium(svc.App.Config.ChromiumPath)
	if err != nil {
		t.Fatal(err)
	}
	// Never downloads a browser: the machine's Chromium, and no leakless helper.
	l := launcher.New().Bin(bin).Headless(true).Leakless(false).Set("no-sandbox").Set("disable-gpu")
	u, err := l.Launch()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Cleanup()
	defer l.Kill()
	b := rod.New().ControlURL(u).Context(t.Context())
	if err := b.Connect(); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	page, err := b.Page(proto.TargetCreateTarget{URL: svc.URL + "/healthz"})
	if err != nil {
		t.Fatal(err)
	}
	if err := page.WaitLoad(); err != nil {
		t.Fatal(err)
	}
	err = page.SetCookies([]*proto.NetworkCookieParam{{Name: "docrender_session", Value: c.Token, URL: svc.URL}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	id := c.startStream(map[string]any{"documents": slowDocs(n, 500, "browser")})
	res, err := page.Timeout(2*time.Minute).Eval(`(path) => new Promise((resolve) => {
		const events = [];
		const es = new EventSource(path);
		const keep = (name) => (e) => {
			events.push({name, data: e.data ? JSON.parse(e.data) : null});
			if (name !== 'progress') { es.close(); resolve(events); }
		};
		es.addEventListener('progress', keep('progress'));
		es.addEventListener('complete', keep('complete'));
		es.addEventListener('error', keep('error'));
	})`, "/pdf/progress/"+id+"/stream")
	if err != nil {
		t.Fatal(err)
	}
	var events []struct {
		Name string          `json:"name"`
		Data *progressRecord `json:"data"`
	}
	if err := json.Unmarshal([]byte(res.Value.JSON("", "")), &events); err != nil {
		t.Fatal(err)
	}
	if len(events) < 2 {
		t.Fatalf("browser saw %d events", len(events))
	}
	last := events[len(events)-1]
	want := progressRecord{Total: n, Current: n, Status: "completed", Message: "Download URL: " + svc.baseURL() + "/pdf/download/" + id}
	if last.Name != "complete" || last.Data == nil || *last.Data != want {
		t.Fatalf("browser's last event %s %+v, want complete %+v", last.Name, last.Data, want)
	}
	for _, e := range events[:len(events)-1] {
		if e.Name != "progress" || e.Data == nil || e.Data.Status != "processing" {
			t.Fatalf("browser event %s %+v", e.Name, e.Data)
		}
	}
	t.Logf("browser EventSource saw %d progress events, then complete", len(events)-1)
}

// TestSSEEndsOnShutdown: a gateway shutting down ends its open progress
// streams at once (the client's EventSource reconnects elsewhere) instead
// of waiting for their batches.
func TestSSEEndsOnShutdown(t *testing.T) {
	svc, stop, err := launch(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, svc)
	id := c.startStream(map[string]any{"documents": slowDocs(8, 2500, "shutdown")})
	resp := c.openStream(id)
	checkSSEHeaders(t, resp)
	done := make(chan []sseEvent)
	go func() { done <- readEvents(t, resp) }()
	time.Sleep(700 * time.Millisecond)
	start := time.Now()
	stop()
	select {
	case events := <-done:
		for _, e := range events {
			if e.Name != "progress" {
				t.Errorf("event %s before the shutdown closed the stream", e.Name)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream still open 5s after shutdown began")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("shutdown took %s", d)
	}
}
