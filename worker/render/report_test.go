package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
)

// troubled is a page with one of each thing a report lists: a console
// error, an uncaught exception, an image and a stylesheet missing from its
// bundle (404), and
// three addresses the egress rules refuse (plain http, https through a
// tunnel, and a local file, which Chromium refuses itself). scripts false leaves out the scripts, so that the page is
// written into the tab rather than navigated to.
func troubled(scripts bool) string {
	page := `<!doctype html><html><head><link rel="stylesheet" href="css/missing.css"></head><body><p>troubled</p>
<img src="img/missing.png">
<img src="http://169.254.169.254/x.png">
<img src="https://169.254.169.254/y.png">
<img src="file:///etc/passwd">`
	if scripts {
		page += `
<script>console.error("first problem", 42); console.log("fine"); console.warn("fine too");</script>
<script>throw new Error("boom")</script>`
	}
	return page + `</body></html>`
}

func renderReport(t *testing.T, r *Renderer, html string, pr *jobspb.Print) (Output, error) {
	t.Helper()
	rj := &jobspb.RenderJob{Entry: "index.html", Page: a4, Print: pr}
	return r.Render(context.Background(), egress.Bundle{"index.html": []byte(html)}, rj, 30*time.Second)
}

// TestReportListsWhatWentWrong: the report lists each console error and
// exception, the 404 by the file's name in the bundle, and each refused
// address by the URL the page asked for (not only the host the proxy saw
// of the https one), and nothing twice: a refused request is blocked, not
// failed. Both ways a page is loaded report the same.
func TestReportListsWhatWentWrong(t *testing.T) {
	r := testRenderer(t)
	for _, scripts := range []bool{true, false} {
		t.Run(fmt.Sprintf("scripts=%v", scripts), func(t *testing.T) {
			opened := r.Pool.Opened()
			out, err := renderReport(t, r, troubled(scripts), nil)
			if err != nil {
				t.Fatal(err)
			}
			if written := r.Pool.Opened() > opened; written == scripts {
				t.Fatalf("written into the tab: %v, want %v", written, !scripts)
			}
			rep := out.Report
			if !strings.HasPrefix(string(out.PDF), "%PDF-") {
				t.Fatal("no PDF: checks are off by default")
			}
			want := []*jobspb.FailedRequest{{Url: "css/missing.css", Status: 404}, {Url: "img/missing.png", Status: 404}}
			failed := slices.SortedFunc(slices.Values(rep.FailedRequests), func(a, b *jobspb.FailedRequest) int { return strings.Compare(a.Url, b.Url) })
			if !slices.EqualFunc(failed, want, sameFailure) {
				t.Errorf("failed %v, want %v", rep.FailedRequests, want)
			}
			blocked := slices.Sorted(slices.Values(rep.BlockedRequests))
			if want := []string{"file:///etc/passwd", "http://169.254.169.254/x.png", "https://169.254.169.254/y.png"}; !slices.Equal(blocked, want) {
				t.Errorf("blocked %q, want %q", blocked, want)
			}
			var console []string
			if scripts {
				console = []string{"first problem 42", "Uncaught Error: boom (index.html:7)"}
			}
			if !slices.Equal(rep.ConsoleErrors, console) {
				t.Errorf("console errors %q, want %q", rep.ConsoleErrors, console)
			}
			if rep.RenderMs <= 0 {
				t.Errorf("renderMs %d", rep.RenderMs)
			}
		})
	}
}

func sameFailure(a, b *jobspb.FailedRequest) bool {
	return a.Url == b.Url && a.Status == b.Status && a.Error == b.Error
}

// TestReportChecks: failOnConsoleErrors and failOnResourceErrors each fail
// the render on what they are about, with a message counting it and the
// report; neither is set off by what the other is about.
func TestReportChecks(t *testing.T) {
	r := testRenderer(t)
	consoleOnly := `<p>x</p><script>console.error("a"); console.error("b")</script>`
	tests := []struct {
		name  string
		html  string
		print *jobspb.Print
		want  string
	}{
		{"console errors", troubled(true), &jobspb.Print{FailOnConsoleErrors: true}, "The page logged 2 console errors."},
		{"resource errors", troubled(true), &jobspb.Print{FailOnResourceErrors: true}, "2 requests failed; 3 requests were blocked by the egress rules."},
		{"both", troubled(true), &jobspb.Print{FailOnConsoleErrors: true, FailOnResourceErrors: true},
			"The page logged 2 console errors; 2 requests failed; 3 requests were blocked by the egress rules."},
		{"resource check, console errors only", consoleOnly, &jobspb.Print{FailOnResourceErrors: true}, ""},
		{"console check, resource errors only", troubled(false), &jobspb.Print{FailOnConsoleErrors: true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := renderReport(t, r, tc.html, tc.print)
			var ce *CheckError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err %v, want none", err)
			case tc.want == "":
				if len(out.PDF) == 0 || out.Report == nil {
					t.Fatal("no PDF or no report")
				}
			case !errors.As(err, &ce):
				t.Fatalf("err %v, want *CheckError", err)
			case ce.Message != tc.want:
				t.Fatalf("message %q, want %q", ce.Message, tc.want)
			case ce.Report == nil || len(ce.Report.BlockedRequests) != 3 || len(ce.Report.FailedRequests) != 2:
				t.Fatalf("report %v", ce.Report)
			}
		})
	}
}

// TestReportMarksCannotBeSilenced: a page that replaces the console's
// methods still gets its errors reported, without the render waiting for a
// mark that never comes.
func TestReportMarksCannotBeSilenced(t *testing.T) {
	r := testRenderer(t)
	html := `<p>x</p><script>const e = console.error.bind(console);
for (const k of Object.keys(console)) console[k] = () => {};
e("still heard")</script>`
	out, err := renderReport(t, r, html, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"still heard"}; !slices.Equal(out.Report.ConsoleErrors, want) {
		t.Errorf("console errors %q, want %q", out.Report.ConsoleErrors, want)
	}
	if out.Report.RenderMs >= finishWait.Milliseconds() {
		t.Errorf("render took %d ms: the end mark was lost", out.Report.RenderMs)
	}
}

// TestReportOfReusedTab: a job on a tab whose last job logged errors all
// along and failed requests (and was cleaned, not replaced) reports none
// of them, whichever way either page was loaded.
func TestReportOfReusedTab(t *testing.T) {
	r := testRenderer(t)
	noisy := map[bool]string{
		true:  `<img src="gone.png"><script>console.error("early"); setInterval(() => console.error("still here"), 1)</script>`,
		false: `<img src="gone.png"><img src="gone-too.png">`,
	}
	clean := map[bool]string{true: `<p>clean</p><script>document.title = "x"</script>`, false: `<p>clean</p>`}
	for _, first := range []bool{true, false} {
		for _, second := range []bool{true, false} {
			t.Run(fmt.Sprintf("scripts %v then %v", first, second), func(t *testing.T) {
				out, err := renderReport(t, r, noisy[first], nil)
				if err != nil || len(out.Report.FailedRequests) == 0 || first && len(out.Report.ConsoleErrors) == 0 {
					t.Fatalf("first job: err %v, report %v", err, out.Report)
				}
				fresh := r.Pool.Fresh()
				out, err = renderReport(t, r, clean[second], &jobspb.Print{FailOnConsoleErrors: true, FailOnResourceErrors: true})
				if err != nil {
					t.Fatalf("second job: %v", err)
				}
				if rep := out.Report; len(rep.FailedRequests)+len(rep.BlockedRequests)+len(rep.ConsoleErrors) != 0 {
					t.Fatalf("second job's report has the first's: %v", rep)
				}
				if r.Pool.Fresh() != fresh {
					t.Fatal("the tab was replaced, not reused: this proves nothing")
				}
			})
		}
	}
}

// TestReportIsBounded: a page that logs 10,000 errors (some huge) and
// fails and is refused 150 requests gets a report of at most 100 entries
// a list, each at most 2 KiB, while the checks count everything.
func TestReportIsBounded(t *testing.T) {
	r := testRenderer(t)
	html := `<p>flood</p><script>
for (let i = 0; i < 150; i++) {
	const a = new Image(); a.src = "missing-" + i + ".png"; document.body.append(a);
	const b = new Image(); b.src = "http://169.254.169.254/" + i + "p".repeat(3000) + ".png"; document.body.append(b);
}
const huge = "é".repeat(100000);
for (let i = 0; i < 10000; i++) console.error(i < 5 ? huge : "error " + i);
</script>`
	start := time.Now()
	_, err := renderReport(t, r, html, &jobspb.Print{FailOnConsoleErrors: true, FailOnResourceErrors: true})
	t.Logf("rendered in %v", time.Since(start).Round(time.Millisecond))
	var ce *CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("err %v, want *CheckError", err)
	}
	if want := "The page logged 10000 console errors; 150 requests failed; 150 requests were blocked by the egress rules."; ce.Message != want {
		t.Errorf("message %q, want %q", ce.Message, want)
	}
	rep := ce.Report
	if len(rep.ConsoleErrors) != maxReportEntries || len(rep.FailedRequests) != maxReportEntries || len(rep.BlockedRequests) != maxReportEntries {
		t.Fatalf("%d console errors, %d failed, %d blocked; want %d each", len(rep.ConsoleErrors), len(rep.FailedRequests), len(rep.BlockedRequests), maxReportEntries)
	}
	if rep.ConsoleErrorsTotal != 10000 || rep.FailedTotal != 150 || rep.BlockedTotal != 150 {
		t.Errorf("totals %d console errors, %d failed, %d blocked; want 10000, 150, 150", rep.ConsoleErrorsTotal, rep.FailedTotal, rep.BlockedTotal)
	}
	strs := slices.Concat(rep.ConsoleErrors, rep.BlockedRequests)
	for _, f := range rep.FailedRequests {
		strs = append(strs, f.Url, f.Error)
	}
	for _, s := range strs {
		if len(s) > maxReportString || !utf8.ValidString(s) {
			t.Fatalf("entry of %d bytes (valid UTF-8: %v): %.80q", len(s), utf8.ValidString(s), s)
		}
	}
	if !strings.HasSuffix(rep.ConsoleErrors[0], "é…") || rep.ConsoleErrors[5] != "error 5" {
		t.Errorf("console errors %.80q ... %q", rep.ConsoleErrors[0], rep.ConsoleErrors[5])
	}
	if !strings.HasSuffix(rep.BlockedRequests[0], "…") {
		t.Errorf("a long URL not marked cut: %.80q", rep.BlockedRequests[0])
	}
}

// event decodes a CDP event's parameters.
func event[T any](t *testing.T, params string) *T {
	t.Helper()
	var e T
	if err := json.Unmarshal([]byte(params), &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

// TestCollectorFencesItsJob plays events at a collector as a reused tab
// could send them (what came before the job the pool's fence keeps from
// it: browser TestFenceHandsOutNoPastEvents): the outcome of a request
// whose start it did not hear does not count, nor another collector's
// mark, nor anything after its end mark; a request is reported once, the
// browser's own favicon request and a cancelled load not at all.
func TestCollectorFencesItsJob(t *testing.T) {
	c := &collector{end: markPrefix + "end", started: true, ended: make(chan struct{}),
		requests: map[proto.NetworkRequestID]string{}, tunnels: map[egress.Refusal]string{}}
	consoleError := func(msg string) {
		c.onConsole(event[proto.RuntimeConsoleAPICalled](t, `{"type":"error","args":[{"type":"string","value":"`+msg+`"}]}`))
	}
	mark := func(m string) {
		c.onConsole(event[proto.RuntimeConsoleAPICalled](t, `{"type":"debug","args":[{"type":"string","value":"`+m+`"}]}`))
	}
	request := func(id, url, typ string) {
		c.onRequest(event[proto.NetworkRequestWillBeSent](t, `{"requestId":"`+id+`","type":"`+typ+`","request":{"url":"`+url+`"}}`))
	}
	status := func(id string, code int) {
		c.onResponse(event[proto.NetworkResponseReceived](t, fmt.Sprintf(`{"requestId":%q,"response":{"status":%d}}`, id, code)))
	}
	failed := func(id string, canceled bool) {
		c.onFailed(event[proto.NetworkLoadingFailed](t, fmt.Sprintf(`{"requestId":%q,"errorText":"net::ERR_FAILED","canceled":%v}`, id, canceled)))
	}
	exception := func(text string) {
		c.onException(event[proto.RuntimeExceptionThrown](t, `{"exceptionDetails":{"text":"Uncaught","exception":{"type":"object","description":"Error: `+text+`\n    at x"}}}`))
	}

	// The end of a request of an earlier page, whose start this collector
	// did not hear, and another collector's mark.
	failed("old", false)
	status("old", 500)
	mark(markPrefix + "someone else's")

	request("r1", "http://a.example/500.png", "Image")
	status("r1", 500)
	failed("r1", false) // the same request, once
	request("r2", "http://a.example/gone.css", "Stylesheet")
	failed("r2", false)
	request("fav", "http://a.example/favicon.ico", "Other")
	status("fav", 404)
	request("stop", "http://a.example/stopped.png", "Image")
	failed("stop", true)
	request("ok", "http://a.example/fine.png", "Image")
	status("ok", 200)
	c.onFinished(event[proto.NetworkLoadingFinished](t, `{"requestId":"ok"}`))
	consoleError("this job")
	exception("this job")
	mark(c.end)
	consoleError("after the end")
	request("late", "http://a.example/late.png", "Image")
	status("late", 404)

	select {
	case <-c.ended:
	default:
		t.Fatal("the end mark was not noticed")
	}
	f := c.findings()
	want := []*jobspb.FailedRequest{{Url: "http://a.example/500.png", Status: 500}, {Url: "http://a.example/gone.css", Error: "net::ERR_FAILED"}}
	if !slices.EqualFunc(f.report.FailedRequests, want, sameFailure) {
		t.Errorf("failed %v, want %v", f.report.FailedRequests, want)
	}
	if console := []string{"this job", "Uncaught Error: this job"}; !slices.Equal(f.report.ConsoleErrors, console) {
		t.Errorf("console %q, want %q", f.report.ConsoleErrors, console)
	}
	if f.nFailed != 2 || f.nConsole != 2 || f.nBlocked != 0 || len(c.requests) != 0 {
		t.Errorf("counts %+v, %d requests still tracked", f, len(c.requests))
	}
}
