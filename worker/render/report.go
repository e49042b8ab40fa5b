package render

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
)

// Bounds of a render report (DESIGN §6). A hostile page may log a million
// errors or ask for a million addresses: the report keeps the first ones,
// each cut short, and the checks count them all.
const (
	maxReportEntries = 100
	maxReportString  = 2 << 10
	// maxTracked bounds the page's requests whose outcome is awaited at once.
	maxTracked = 4096
	// finishWait bounds the wait for the events of the page up to printing.
	finishWait = 2 * time.Second
)

// markPrefix starts the console messages that fence a job's events in.
const markPrefix = "docrender-report-"

// writeMark writes mark to the console. After a page's scripts ran, from a
// world of its own, where they cannot silence it by replacing
// console.debug; on a written page the page's world is ours, and creating
// a world, a V8 context, is a cost per job. It works with scripts off.
func writeMark(page *rod.Page, mark string, scriptsRan bool) error {
	var world proto.RuntimeExecutionContextID
	if scriptsRan {
		w, err := proto.PageCreateIsolatedWorld{FrameID: page.FrameID, WorldName: "docrender-report"}.Call(page)
		if err != nil {
			return fmt.Errorf("isolated world: %w", err)
		}
		world = w.ExecutionContextID
	}
	res, err := proto.RuntimeEvaluate{Expression: "console.debug(" + strconv.Quote(mark) + ")", ContextID: world}.Call(page)
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("mark: %s", res.ExceptionDetails.Text)
	}
	return nil
}

// collector gathers what a render's report lists from its tab's events: the
// page's failed requests and console errors, and (from the site's lane)
// what the egress rules refused it.
//
// Tabs are reused, so it must not hear anything of an earlier job: the
// pool hands a tab out only once every event of its past has been handed
// to rod's subscribers (browser.Tab), so a collector subscribed at the
// job's start hears the job's events only, and ignores the outcome of any
// request whose start it did not hear. A session's events come in the
// order they happened: the end mark, written after printing, follows
// everything the page did before it, and once it arrives the report is
// complete.
type collector struct {
	page  *rod.Page
	site  egress.Site
	end   string
	stop  context.CancelFunc
	done  chan struct{}
	ended chan struct{}

	mu sync.Mutex
	// started is true until the end mark arrives.
	started  bool
	requests map[proto.NetworkRequestID]string
	failed   []*jobspb.FailedRequest
	console  []string
	// tunnels is the first URL the page saw refused for each refused
	// tunnel: the lane knows only its host and port.
	tunnels map[egress.Refusal]string
	// files are the file: URLs the browser refused the page (DESIGN
	// §4.19): blocked, though not by the lane.
	files []string
	// Totals, beyond what the lists keep.
	nFailed, nConsole, nFiles int
	// slices is what the other slices of a page cut before loading
	// (cut.go) found in their own tabs (absorb): refused requests and
	// images without alternative text, their addresses relative already.
	slices struct {
		blocked, noAlt   []string
		nBlocked, nNoAlt int
	}
}

// heardReport is what a slice's tab heard (c, finished) and its hooks
// found (hooked) as a report, its addresses relative as the job's own
// report gives them: what absorb adds to the job's collector, in this
// worker or, sent with the slice's PDF, in another (farm.go).
func heardReport(c *collector, hooked *jobspb.Report) *jobspb.Report {
	f := c.findings()
	rep := f.report
	noAlt := hooked.GetImagesWithoutAlt()
	for _, u := range noAlt[:min(len(noAlt), maxReportEntries)] {
		rep.ImagesWithoutAlt = append(rep.ImagesWithoutAlt, truncate(c.site.Relative(u)))
	}
	rep.ImagesWithoutAltTotal = int32(max(int(hooked.GetImagesWithoutAltTotal()), len(noAlt)))
	return rep
}

// absorb adds to c what another slice of the same page, loaded in a tab
// of its own (cut.go), heard and its hooks found (heardReport): the
// page's report covers every slice, and its checks fail on a request any
// slice lost. What every slice loads (the head's stylesheets and fonts)
// is one request of the page: an entry c has already is not counted
// again.
func (c *collector) absorb(rep *jobspb.Report) {
	// Totals beyond the lists: a report from another worker is read with
	// care (a total below its list counts the list).
	beyond := func(total int32, listed int) int { return max(int(total)-listed, 0) }
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, r := range c.failed {
		seen["f\x00"+r.Url+"\x00"+r.Error] = true
	}
	for _, m := range c.console {
		seen["c\x00"+m] = true
	}
	for _, b := range c.slices.blocked {
		seen["b\x00"+b] = true
	}
	for _, u := range c.slices.noAlt {
		seen["a\x00"+u] = true
	}
	c.nFailed += beyond(rep.GetFailedTotal(), len(rep.GetFailedRequests()))
	for _, r := range rep.GetFailedRequests() {
		if key := "f\x00" + r.GetUrl() + "\x00" + r.GetError(); !seen[key] {
			seen[key] = true
			c.nFailed++
			if len(c.failed) < maxReportEntries {
				c.failed = append(c.failed, r)
			}
		}
	}
	c.nConsole += beyond(rep.GetConsoleErrorsTotal(), len(rep.GetConsoleErrors()))
	for _, m := range rep.GetConsoleErrors() {
		if key := "c\x00" + m; !seen[key] {
			seen[key] = true
			c.nConsole++
			if len(c.console) < maxReportEntries {
				c.console = append(c.console, m)
			}
		}
	}
	c.slices.nBlocked += beyond(rep.GetBlockedTotal(), len(rep.GetBlockedRequests()))
	for _, b := range rep.GetBlockedRequests() {
		if key := "b\x00" + b; !seen[key] {
			seen[key] = true
			c.slices.nBlocked++
			c.slices.blocked = appendUpTo(c.slices.blocked, []string{b}, maxReportEntries)
		}
	}
	c.slices.nNoAlt += beyond(rep.GetImagesWithoutAltTotal(), len(rep.GetImagesWithoutAlt()))
	for _, u := range rep.GetImagesWithoutAlt() {
		if key := "a\x00" + u; !seen[key] {
			seen[key] = true
			c.slices.nNoAlt++
			c.slices.noAlt = appendUpTo(c.slices.noAlt, []string{u}, maxReportEntries)
		}
	}
}

// appendUpTo appends more to list while it holds fewer than n.
func appendUpTo(list, more []string, n int) []string {
	return append(list, more[:max(0, min(len(more), n-len(list)))]...)
}

// startCollector starts listening to page's events for the job served at
// site. The tab must not have run the job's page yet: it is as the pool
// lent it (browser.Tab).
func startCollector(ctx context.Context, page *rod.Page, site egress.Site) *collector {
	ctx, stop := context.WithCancel(ctx)
	c := &collector{page: page, site: site, end: markPrefix + rand.Text(), started: true,
		stop: stop, done: make(chan struct{}), ended: make(chan struct{}),
		requests: map[proto.NetworkRequestID]string{}, tunnels: map[egress.Refusal]string{}}
	wait := page.Context(ctx).EachEvent(c.onConsole, c.onException, c.onRequest, c.onResponse, c.onFinished, c.onFailed)
	go func() {
		defer close(c.done)
		wait()
	}()
	return c
}

// close stops listening; the lists stay as they are.
func (c *collector) close() {
	c.stop()
	<-c.done
}

// finish waits (briefly: the PDF is printed already) until the events of
// everything the page did before now have arrived, then stops listening.
// scriptsRan tells whether the page's scripts ran (browser.Tab.Scripted).
func (c *collector) finish(ctx context.Context, scriptsRan bool) {
	defer c.close()
	ctx, cancel := context.WithTimeout(ctx, finishWait)
	defer cancel()
	if err := writeMark(c.page.Context(ctx), c.end, scriptsRan); err != nil {
		return
	}
	select {
	case <-c.ended:
	case <-ctx.Done():
	}
}

func (c *collector) onConsole(e *proto.RuntimeConsoleAPICalled) {
	if mark, ok := markOf(e); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		if mark == c.end && c.started {
			c.started = false
			close(c.ended)
		}
		return
	}
	if e.Type == proto.RuntimeConsoleAPICalledTypeError {
		c.addConsole(consoleText(e.Args))
	}
}

func (c *collector) onException(e *proto.RuntimeExceptionThrown) {
	c.addConsole(exceptionText(e.ExceptionDetails))
}

func (c *collector) onRequest(e *proto.NetworkRequestWillBeSent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started || isFavicon(e) {
		return
	}
	// A redirect reuses the ID: the URL that fails is the last one. A
	// request whose start this collector did not hear stays ignored
	// through redirects.
	_, tracked := c.requests[e.RequestID]
	if tracked || (e.RedirectResponse == nil && len(c.requests) < maxTracked) {
		c.requests[e.RequestID] = clip(e.Request.URL)
	}
}

func (c *collector) onResponse(e *proto.NetworkResponseReceived) {
	if e.Response.Status >= 400 {
		c.addFailed(e.RequestID, &jobspb.FailedRequest{Status: int32(e.Response.Status)})
	}
}

func (c *collector) onFinished(e *proto.NetworkLoadingFinished) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.requests, e.RequestID)
}

func (c *collector) onFailed(e *proto.NetworkLoadingFailed) {
	if e.Canceled {
		// The page or the browser let go of it (a replaced image, a stop):
		// not the resource's failure.
		c.forget(e.RequestID)
		return
	}
	msg := e.ErrorText
	if e.BlockedReason != "" {
		msg = strings.TrimSpace(msg + " (blocked: " + string(e.BlockedReason) + ")")
	}
	c.addFailed(e.RequestID, &jobspb.FailedRequest{Error: msg})
}

func (c *collector) forget(id proto.NetworkRequestID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.requests, id)
}

// addFailed notes that request id of this job failed, once, unless it was
// one the egress rules refused: the report lists that as blocked.
func (c *collector) addFailed(id proto.NetworkRequestID, f *jobspb.FailedRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.requests[id]
	if !ok {
		return // started before this job, or already reported
	}
	delete(c.requests, id)
	if strings.HasPrefix(strings.ToLower(u), "file:") {
		// Chromium never lets a page served over http load one.
		c.nFiles++
		if len(c.files) < maxReportEntries {
			c.files = append(c.files, truncate(u))
		}
		return
	}
	if r, refused := c.site.RefusalOf(u); refused {
		if _, seen := c.tunnels[r]; r.Tunnel && !seen && len(c.tunnels) < maxReportEntries {
			c.tunnels[r] = u
		}
		return
	}
	c.nFailed++
	if len(c.failed) < maxReportEntries {
		f.Url = truncate(c.site.Relative(u))
		f.Error = truncate(f.Error)
		c.failed = append(c.failed, f)
	}
}

func (c *collector) addConsole(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return
	}
	c.nConsole++
	if len(c.console) < maxReportEntries {
		c.console = append(c.console, truncate(c.site.Relative(msg)))
	}
}

// findings is what a finished collector found, with what the page hooks
// found.
type findings struct {
	report                      *jobspb.Report
	nFailed, nBlocked, nConsole int
	nNoAlt                      int
}

// findings returns what the collector found, with what the site's lane
// refused the page.
func (c *collector) findings() findings {
	c.mu.Lock()
	defer c.mu.Unlock()
	refused := c.site.Refused()
	rep := &jobspb.Report{FailedRequests: c.failed, ConsoleErrors: c.console}
	for _, r := range refused[:min(len(refused), maxReportEntries)] {
		rep.BlockedRequests = append(rep.BlockedRequests, truncate(c.site.Relative(c.blockedURL(r))))
	}
	rep.BlockedRequests = append(rep.BlockedRequests, c.files[:min(len(c.files), maxReportEntries-len(rep.BlockedRequests))]...)
	rep.BlockedRequests = appendUpTo(rep.BlockedRequests, c.slices.blocked, maxReportEntries)
	f := findings{report: rep, nFailed: c.nFailed, nBlocked: len(refused) + c.nFiles + c.slices.nBlocked, nConsole: c.nConsole}
	rep.BlockedTotal, rep.FailedTotal, rep.ConsoleErrorsTotal = int32(f.nBlocked), int32(f.nFailed), int32(f.nConsole)
	return f
}

// blockedURL is the address the report names for refusal r: the URL the
// page asked for, where the lane's record falls short of it.
func (c *collector) blockedURL(r egress.Refusal) string {
	if !r.Tunnel {
		return r.URL
	}
	if u, ok := c.tunnels[r]; ok {
		return u
	}
	return "https://" + strings.TrimSuffix(r.URL, ":443")
}

// check returns the failure of the checks pr asks for (Print.fail_on_*)
// given f, or nil.
func (f findings) check(pr *jobspb.Print) error {
	var parts []string
	if pr.GetFailOnConsoleErrors() && f.nConsole > 0 {
		parts = append(parts, "the page logged "+count(f.nConsole, "console error"))
	}
	if pr.GetFailOnResourceErrors() {
		if f.nFailed > 0 {
			parts = append(parts, count(f.nFailed, "request")+" failed")
		}
		if f.nBlocked > 0 {
			parts = append(parts, count(f.nBlocked, "request")+wasWere(f.nBlocked)+" blocked by the egress rules")
		}
	}
	if pr.GetFailOnAccessibilityErrors() && f.nNoAlt > 0 {
		parts = append(parts, count(f.nNoAlt, "image")+hasHave(f.nNoAlt)+" no alternative text")
	}
	if parts == nil {
		return nil
	}
	msg := strings.Join(parts, "; ")
	return &CheckError{Message: strings.ToUpper(msg[:1]) + msg[1:] + ".", Report: f.report}
}

// CheckError is a render whose checks failed (DESIGN §6 failOnConsoleErrors,
// failOnResourceErrors, §8 failOnAccessibilityErrors): the job fails with
// Message, and Report says why.
type CheckError struct {
	Message string
	Report  *jobspb.Report
}

func (e *CheckError) Error() string { return "render: check failed: " + e.Message }

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func wasWere(n int) string {
	if n == 1 {
		return " was"
	}
	return " were"
}

func hasHave(n int) string {
	if n == 1 {
		return " has"
	}
	return " have"
}

// output is the Output of a render that printed pdf in elapsed time, as
// far as its report and checks go; hooked is what the page hooks found.
func (c *collector) output(pdf []byte, elapsed time.Duration, pr *jobspb.Print, hooked *jobspb.Report) (Output, error) {
	f := c.findings()
	f.report.RenderMs = elapsed.Milliseconds()
	noAlt := hooked.GetImagesWithoutAlt()
	f.nNoAlt = max(int(hooked.GetImagesWithoutAltTotal()), len(noAlt))
	c.mu.Lock()
	f.nNoAlt += c.slices.nNoAlt
	noAlt = append(slices.Clip(noAlt), c.slices.noAlt...) // relative already: Relative leaves them be
	c.mu.Unlock()
	err := f.check(pr)
	if err != nil && !pr.GetFailOnAccessibilityErrors() {
		// The render failed on other checks: images without alternative
		// text are what a failure (a 422's details) lists only when the
		// client asked about them.
		return Output{PDF: pdf, Report: f.report}, err
	}
	for _, s := range noAlt[:min(len(noAlt), maxReportEntries)] {
		f.report.ImagesWithoutAlt = append(f.report.ImagesWithoutAlt, truncate(c.site.Relative(s)))
	}
	f.report.ImagesWithoutAltTotal = int32(f.nNoAlt)
	return Output{PDF: pdf, Report: f.report}, err
}

// markOf returns the collector mark e writes, if it is one.
func markOf(e *proto.RuntimeConsoleAPICalled) (string, bool) {
	if e.Type != proto.RuntimeConsoleAPICalledTypeDebug || len(e.Args) != 1 || e.Args[0].Type != proto.RuntimeRemoteObjectTypeString {
		return "", false
	}
	s := e.Args[0].Value.Str()
	return s, strings.HasPrefix(s, markPrefix)
}

// isFavicon is the browser asking for the page's icon by itself, which no
// page is to blame for lacking.
func isFavicon(e *proto.NetworkRequestWillBeSent) bool {
	if e.Type != proto.NetworkResourceTypeOther {
		return false
	}
	u, err := url.Parse(e.Request.URL)
	return err == nil && u.Path == "/favicon.ico"
}

// consoleText is what console.error printed: its arguments, separated by
// spaces (format directives are left as they are).
func consoleText(args []*proto.RuntimeRemoteObject) string {
	parts := make([]string, 0, len(args))
	size := 0
	for _, a := range args {
		if size > maxReportString {
			break // the rest would be cut off anyway
		}
		s := remoteText(a)
		size += len(s) + 1
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// remoteText is how the console shows a logged value, in short.
func remoteText(a *proto.RuntimeRemoteObject) string {
	switch {
	case a == nil:
		return ""
	case a.Type == proto.RuntimeRemoteObjectTypeString:
		return a.Value.Str()
	case a.UnserializableValue != "":
		return string(a.UnserializableValue)
	case a.Description != "":
		return a.Description
	case a.Type == proto.RuntimeRemoteObjectTypeUndefined:
		return "undefined"
	}
	return a.Value.JSON("", "")
}

// exceptionText is an uncaught exception as the console shows it first:
// "Uncaught Error: boom", and where it was thrown.
func exceptionText(d *proto.RuntimeExceptionDetails) string {
	if d == nil {
		return ""
	}
	msg := d.Text
	if d.Exception != nil {
		// An Error's description is its stack; its first line says what.
		first, _, _ := strings.Cut(remoteText(d.Exception), "\n")
		if msg == "" || msg == "Uncaught" || msg == "Uncaught (in promise)" {
			msg = strings.TrimSpace(msg + " " + first)
		}
	}
	if d.URL != "" {
		msg += fmt.Sprintf(" (%s:%d)", d.URL, d.LineNumber+1)
	}
	return msg
}

// clip keeps enough of a URL to report it (truncate marks where it was
// cut), and to match the lane's record of a refusal, cut the same way.
func clip(u string) string {
	return u[:min(len(u), maxReportString+1)]
}

// truncate cuts s to maxReportString bytes, on a character boundary.
func truncate(s string) string {
	if len(s) <= maxReportString {
		return s
	}
	cut := maxReportString - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
