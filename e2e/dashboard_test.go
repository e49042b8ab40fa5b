package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/worker/browser"
)

// TestDashboardServes: GET / sends a browser to the dashboard, which
// answers with its security headers; its script and style are served too.
func TestDashboardServes(t *testing.T) {
	svc := sharedService(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		path     string
		status   int
		location string
		ctype    string
	}{
		{"/", http.StatusSeeOther, "/dashboard", ""},
		{"/dashboard", http.StatusOK, "", "text/html"},
		{"/dashboard/app.js", http.StatusOK, "", "text/javascript"},
		{"/dashboard/style.css", http.StatusOK, "", "text/css"},
		{"/dashboard/missing.js", http.StatusNotFound, "", "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := noFollow.Get(svc.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			b := readAll(t, resp)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if got := resp.Header.Get("Location"); got != tc.location {
				t.Errorf("Location %q, want %q", got, tc.location)
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) {
				t.Errorf("Content-Type %q, want %s", resp.Header.Get("Content-Type"), tc.ctype)
			}
			if tc.status != http.StatusOK {
				return
			}
			csp := resp.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-inline") {
				t.Errorf("Content-Security-Policy %q allows inline script or style", csp)
			}
			if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
				t.Errorf("X-Frame-Options %q", got)
			}
		})
	}
}

// dashboard is the dashboard open in headless Chromium.
type dashboard struct {
	t   *testing.T
	svc *service
	b   *rod.Browser
	p   *rod.Page
	// problems are script exceptions, console errors and policy
	// violations the page reported.
	mu       sync.Mutex
	problems []string
}

// openDashboard starts Chromium (the machine's: rod downloads nothing) and
// opens GET / of svc.
func openDashboard(t *testing.T, svc *service) *dashboard {
	t.Helper()
	bin, err := browser.FindChromium(svc.App.Config.ChromiumPath)
	if err != nil {
		t.Fatal(err)
	}
	l := launcher.New().Bin(bin).Headless(true).Leakless(false).Set("no-sandbox").Set("disable-gpu")
	u, err := l.Launch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Kill(); l.Cleanup() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	b := rod.New().ControlURL(u).Context(ctx)
	if err := b.Connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	fatal := func(v any) { t.Helper(); t.Fatalf("browser: %v", v) }
	d := &dashboard{t: t, svc: svc, b: b.WithPanic(fatal)}
	d.p = d.b.MustPage("").WithPanic(fatal)
	d.p.MustSetViewport(1100, 900, 1, false)
	go d.p.EachEvent(
		func(e *proto.RuntimeExceptionThrown) {
			msg := e.ExceptionDetails.Text
			if ex := e.ExceptionDetails.Exception; ex != nil {
				msg += " " + ex.Description
			}
			d.problem("exception: " + msg)
		},
		func(e *proto.RuntimeConsoleAPICalled) {
			if e.Type == proto.RuntimeConsoleAPICalledTypeError {
				d.problem("console.error")
			}
		},
		func(e *proto.LogEntryAdded) {
			// Refused requests (a 401 before signing in) are the network's
			// report of an answer the page handles; anything else is not.
			if e.Entry.Level == proto.LogLogEntryLevelError && e.Entry.Source != proto.LogLogEntrySourceNetwork ||
				strings.Contains(e.Entry.Text, "Content Security Policy") {
				d.problem(string(e.Entry.Source) + ": " + e.Entry.Text)
			}
		},
	)()
	d.p.MustNavigate(svc.URL + "/").MustWaitLoad()
	return d
}

func (d *dashboard) problem(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.problems = append(d.problems, s)
}

// takeProblems returns what the page reported so far and forgets it.
func (d *dashboard) takeProblems() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.problems
	d.problems = nil
	return p
}

// waitText waits until the element's trimmed text is want.
func (d *dashboard) waitText(sel, want string) {
	d.t.Helper()
	err := d.p.Timeout(30 * time.Second).Wait(rod.Eval(`(s, w) => { const e = document.querySelector(s); return !!e && e.textContent.trim() === w }`, sel, want))
	if err != nil {
		got := d.p.MustEval(`(s) => { const e = document.querySelector(s); return e ? e.textContent.trim() : '(no element)' }`, sel).Str()
		d.t.Fatalf("%s: text %q, want %q (%v)", sel, got, want, err)
	}
}

// waitJS waits until js (a function of args) returns true.
func (d *dashboard) waitJS(limit time.Duration, js string, args ...any) {
	d.t.Helper()
	if err := d.p.Timeout(limit).Wait(rod.Eval(js, args...)); err != nil {
		d.t.Fatalf("waiting for %s: %v", js, err)
	}
}

func (d *dashboard) rows(tbody string) int {
	return d.p.MustEval(`(s) => document.querySelectorAll(s + ' tr').length`, tbody).Int()
}

// shot saves a screenshot of the element (the window's top for "") into
// docs/dashboard when DOCRENDER_SCREENSHOTS=1 (so make test does not
// rewrite the repository).
func (d *dashboard) shot(name, sel string) {
	d.t.Helper()
	if os.Getenv("DOCRENDER_SCREENSHOTS") != "1" {
		return
	}
	var png []byte
	var err error
	if sel == "" {
		d.p.MustEval(`() => window.scrollTo(0, 0)`)
		png, err = d.p.Screenshot(false, &proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng})
	} else {
		png, err = d.p.MustElement(sel).Screenshot(proto.PageCaptureScreenshotFormatPng, 0)
	}
	if err != nil {
		d.t.Fatal(err)
	}
	if len(png) > 200<<10 {
		d.t.Errorf("screenshot %s is %d KB, keep it under 200", name, len(png)>>10)
	}
	dir := filepath.Join(repoRoot(), "docs", "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// pageFetch fetches path from the page (its cookie, its origin) and
// returns the status and Content-Type.
func (d *dashboard) pageFetch(path string) (int, string) {
	r := d.p.MustEval(`async (p) => { const r = await fetch(p, {credentials: 'same-origin'}); await r.arrayBuffer();
		return {status: r.status, type: r.headers.get('Content-Type') || ''} }`, path)
	return r.Get("status").Int(), r.Get("type").Str()
}

var keyRe = regexp.MustCompile(`^drk_[0-9A-Za-z]{40}$`)

// TestDashboardInBrowser uses the dashboard as a person would, in headless
// Chromium against the real service: sign up, create a key (shown once,
// and it works for programs), revoke one, render a file from the form and
// download the PDF, see usage move, list templates, upload a version and
// preview one with JSON typed into the page (a template error shown with
// its line and data path), page through hosted files, open and
// delete one, follow a batch to completion (and a hosted one, whose link
// is its result's downloadUrl), sign out while a render is in flight (its
// answer stays off the page) and in again. The
// page must do all of it under its own CSP and the origin checks on
// cookie requests, without a script error.
func TestDashboardInBrowser(t *testing.T) {
	svc := sharedService(t)
	d := openDashboard(t, svc)
	p := d.p

	// GET / lands on the dashboard, which asks a stranger to sign in.
	if u := p.MustInfo().URL; u != svc.URL+"/dashboard" {
		t.Fatalf("GET / ended at %s", u)
	}
	p.MustElement("#auth-form").MustWaitVisible()
	d.shot("signin", "#auth")

	// The policy is in force: an injected inline script does not run, and
	// the browser says why (which also shows the problem check works).
	p.MustEval(`() => { const s = document.createElement('script'); s.textContent = 'window.injected = 1'; document.body.append(s); }`)
	if p.MustEval(`() => window.injected === 1`).Bool() {
		t.Fatal("an inline script ran under the dashboard's CSP")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(strings.Join(d.takeProblems(), "\n"), "Content Security Policy") {
		if time.Now().After(deadline) {
			t.Fatal("the blocked inline script was not reported")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Sign up.
	userSeq.Lock()
	userSeq.n++
	email := fmt.Sprintf("ada%d@example.com", userSeq.n)
	userSeq.Unlock()
	const password = "a long password"
	p.MustElement("#auth-email").MustInput(email)
	p.MustElement("#auth-password").MustInput(password)
	p.MustElement("#signup").MustClick()
	p.MustElement("#app").MustWaitVisible()
	d.waitText("#who-email", email)
	var token string
	for _, ck := range p.MustCookies(svc.URL) {
		if ck.Name == "docrender_session" {
			token = ck.Value
			if !ck.HTTPOnly {
				t.Error("the session cookie is readable by scripts")
			}
		}
	}
	if token == "" {
		t.Fatal("no session cookie after signing up")
	}
	c := &client{t: t, svc: svc, http: &http.Client{Timeout: 2 * time.Minute}, Token: token, Email: email}
	u := c.billingUsage()
	d.waitText("#conv-text", fmt.Sprintf("0 / %d", u.ConversionsLimit))
	d.waitText("#hosted-text", fmt.Sprintf("0 / %d", u.HostedLimit))

	// A key: shown once with a copy button, listed by its prefix.
	p.MustElement("#key-name").MustInput("laptop")
	p.MustElement("#key-create").MustClick()
	p.MustElement("#new-key").MustWaitVisible()
	key := strings.TrimSpace(p.MustElement("#new-key-value").MustText())
	if !keyRe.MatchString(key) {
		t.Fatalf("new key %q is not drk_ and 40 base62 characters", key)
	}
	d.waitJS(10*time.Second, `() => document.querySelectorAll('#key-rows tr').length === 1`)
	row := p.MustElement("#key-rows tr").MustText()
	if !strings.Contains(row, "laptop") || strings.Contains(row, key) {
		t.Fatalf("key row %q: want the name and no secret", row)
	}
	prefix := strings.TrimSuffix(strings.Fields(row)[1], "…")
	if len(prefix) < 6 || !strings.HasPrefix(key, prefix) {
		t.Fatalf("listed prefix %q does not begin the key", prefix)
	}
	err := proto.BrowserGrantPermissions{Origin: svc.URL, Permissions: []proto.BrowserPermissionType{
		proto.BrowserPermissionTypeClipboardReadWrite, proto.BrowserPermissionTypeClipboardSanitizedWrite}}.Call(d.b)
	if err != nil {
		t.Fatal(err)
	}
	p.MustElement("#new-key-copy").MustClick()
	d.waitText("#new-key-status", "Copied.")
	if got := p.MustEval(`() => navigator.clipboard.readText()`).Str(); got != key {
		t.Fatalf("clipboard %q, want the key", got)
	}
	d.shot("keys", "#keys")
	// The key works for a program.
	c.Key = key
	if pi := info(t, c.generatePDF(simpleHTML, nil)); pi.Pages != 1 {
		t.Fatalf("PDF with the dashboard's key: %d pages", pi.Pages)
	}
	// Shown once: gone after Done and after a reload, and never stored.
	p.MustElement("#new-key-done").MustClick()
	hasKey := `(k) => document.documentElement.outerHTML.includes(k) || document.body.innerText.includes(k)`
	if p.MustEval(hasKey, key).Bool() {
		t.Fatal("the key is still in the page after Done")
	}
	if n := p.MustEval(`() => localStorage.length + sessionStorage.length`).Int(); n != 0 {
		t.Fatalf("the page keeps %d items in web storage", n)
	}
	p.MustReload().MustWaitLoad()
	p.MustElement("#app").MustWaitVisible()
	d.waitJS(10*time.Second, `() => document.querySelectorAll('#key-rows tr').length === 1`)
	if p.MustEval(hasKey, key).Bool() {
		t.Fatal("the key is shown again after a reload")
	}
	// Revoke: a second key, revoked from its row, stops working at once.
	p.MustElement("#key-name").MustInput("temporary")
	p.MustElement("#key-create").MustClick()
	p.MustElement("#new-key").MustWaitVisible()
	temp := strings.TrimSpace(p.MustElement("#new-key-value").MustText())
	p.MustElement("#new-key-done").MustClick()
	d.waitJS(10*time.Second, `() => document.querySelectorAll('#key-rows tr').length === 2`)
	revoke := p.MustElementR("#key-rows tr", "temporary").MustElement("button")
	revoke.MustClick() // asks once more
	d.waitJS(5*time.Second, `() => [...document.querySelectorAll('#key-rows button')].some(b => b.textContent === 'Really revoke?')`)
	revoke.MustClick()
	d.waitJS(10*time.Second, `() => document.querySelectorAll('#key-rows tr').length === 1`)
	tc := &client{t: t, svc: svc, Key: temp}
	expectError(t, tc.generate([]file{htmlFile("index.html", simpleHTML)}, nil), http.StatusUnauthorized, "")

	// Render a file from the form; the PDF downloads; usage moves.
	before := c.billingUsage()
	d.waitText("#conv-text", fmt.Sprintf("%d / %d", before.ConversionsUsed, before.ConversionsLimit))
	page := filepath.Join(t.TempDir(), "hello.html")
	if err := os.WriteFile(page, []byte(`<h1>DASHBOARD-RENDER</h1><p>from the form</p>`), 0o644); err != nil {
		t.Fatal(err)
	}
	p.MustElement("#render-files").MustSetFiles(page)
	p.MustElement("#render-options").MustInput(`{"format":"A5","fileName":"hello"}`)
	p.MustElement("#render-submit").MustClick()
	p.MustElement("#render-result").MustWaitVisible()
	d.waitJS(10*time.Second, `() => /^Download hello\.pdf \(\d/.test(document.getElementById('render-link').textContent)`)
	dl := t.TempDir()
	wait := d.b.WaitDownload(dl)
	p.MustElement("#render-link").MustClick()
	got := wait()
	pdf, err := os.ReadFile(filepath.Join(dl, got.GUID))
	if err != nil {
		t.Fatal(err)
	}
	if pi := info(t, pdf); !near(pi.Width, 419.53, 1) || !near(pi.Height, 595.28, 1) {
		t.Fatalf("downloaded PDF is %.1f x %.1f pt, want A5", pi.Width, pi.Height)
	}
	if txt := text(t, pdf); !strings.Contains(txt, "DASHBOARD-RENDER") {
		t.Fatalf("downloaded PDF text %q", txt)
	}
	if got.SuggestedFilename != "hello.pdf" {
		t.Errorf("download named %q", got.SuggestedFilename)
	}
	after := c.billingUsage()
	if after.ConversionsUsed != before.ConversionsUsed+1 {
		t.Fatalf("conversions %d after the form's render, want %d", after.ConversionsUsed, before.ConversionsUsed+1)
	}
	d.waitText("#conv-text", fmt.Sprintf("%d / %d", after.ConversionsUsed, after.ConversionsLimit))
	d.shot("render", "#render")

	// A document of record from the form's controls (PDF/A-2u, PDF/UA, a
	// language over the page's), then read back in the Inspect panel.
	recordPage := filepath.Join(t.TempDir(), "record.html")
	if err := os.WriteFile(recordPage, []byte(`<html lang="en"><head><title>Record from the form</title></head><body><h1>RECORD</h1></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	p.MustElement("#render-files").MustSetFiles(recordPage)
	p.MustElement("#render-options").MustSelectAllText().MustInput(`{"fileName":"record"}`)
	p.MustElement("#render-pdfa").MustSelect("PDF/A-2u")
	p.MustElement("#render-pdfua").MustClick()
	p.MustElement("#render-lang").MustInput("de-DE")
	p.MustElement("#render-submit").MustClick()
	d.waitJS(time.Minute, `() => /^Download record\.pdf \(\d/.test(document.getElementById('render-link').textContent)`)
	wait = d.b.WaitDownload(dl)
	p.MustElement("#render-link").MustClick()
	got = wait()
	recordPDF, err := os.ReadFile(filepath.Join(dl, got.GUID))
	if err != nil {
		t.Fatal(err)
	}
	checkRecordPDF(t, recordPDF, "2u", true)
	inspected := filepath.Join(t.TempDir(), "record.pdf")
	if err := os.WriteFile(inspected, recordPDF, 0o644); err != nil {
		t.Fatal(err)
	}
	p.MustElement("#inspect-file").MustSetFiles(inspected)
	p.MustElement("#inspect-submit").MustClick()
	p.MustElement("#inspect-result").MustWaitVisible()
	facts := p.MustElement("#inspect-facts").MustText()
	for _, want := range []string{"PDF/A-2U", "PDF/UA-1", "de-DE", "Record from the form", "all embedded"} {
		if !strings.Contains(facts, want) {
			t.Errorf("the Inspect panel does not say %q:\n%s", want, facts)
		}
	}
	if sigs := p.MustElement("#inspect-signatures").MustText(); sigs != "none" {
		t.Errorf("signatures of an unsigned PDF: %q", sigs)
	}
	if js := p.MustElement("#inspect-json").MustProperty("textContent").Str(); !strings.Contains(js, `"signatures": []`) {
		t.Errorf("the report's JSON: %.300s", js)
	}
	d.shot("inspect", "#inspect")
	// A PDF that is not one: the panel says why.
	p.MustElement("#inspect-file").MustSetFiles(recordPage)
	p.MustElement("#inspect-submit").MustClick()
	d.waitJS(30*time.Second, `() => document.getElementById('inspect-status').className.includes('error')`)
	if !p.MustElement("#inspect-result").MustProperty("hidden").Bool() {
		t.Error("a refused inspect left the last report on screen")
	}
	p.MustElement("#render-pdfa").MustSelect("none")
	p.MustElement("#render-pdfua").MustClick()
	p.MustEval(`() => { document.getElementById('render-lang').value = '' }`)

	// Templates (DESIGN §9): one stored by a program is listed; a new
	// version uploaded from the page; its versions shown; a preview with
	// JSON typed into the page (POST /pdf/generate with {template: {id,
	// version}, data}) shows the PDF; the sample data previewed for
	// version 1; a template error lists its line and the data's path;
	// JSON that does not parse is refused in the page.
	tplID, _ := c.uploadTemplate("invoice", map[string]string{"index.html": invoiceTemplate, "style.css": "h1 { color: #2a6 }"},
		`{"number":"S-1","customer":{"name":"Sample GmbH"},"items":[{"name":"Muster","price":1}],"date":"2026-01-05"}`)
	p.MustElement("#tpl-refresh").MustClick()
	d.waitJS(10*time.Second, `(id) => !!document.querySelector('#tpl-rows tr[data-template-id="' + id + '"]')`, tplID)
	if row := p.MustElement("#tpl-rows tr").MustText(); !strings.Contains(row, "invoice") || !strings.Contains(row, "1") {
		t.Fatalf("template row %q", row)
	}
	tplDir := t.TempDir()
	tplPage := filepath.Join(tplDir, "index.html")
	if err := os.WriteFile(tplPage, []byte(strings.Replace(invoiceTemplate, "Rechnung", "Faktura", 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	tplCSS := filepath.Join(tplDir, "style.css")
	if err := os.WriteFile(tplCSS, []byte("h1 { color: #26a }"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.MustElement("#tpl-upload summary").MustClick()
	p.MustElement("#tpl-upload-name").MustWaitVisible().MustInput("invoice")
	p.MustElement("#tpl-upload-files").MustSetFiles(tplPage, tplCSS)
	p.MustElement("#tpl-upload-sample").MustInput(`{"number":"S-2","items":[]}`)
	p.MustElement("#tpl-upload-submit").MustClick()
	d.waitJS(30*time.Second, `() => document.getElementById('tpl-upload-status').textContent.startsWith('Stored “invoice” version 2 (')`)
	p.MustElement("#tpl-detail").MustWaitVisible()
	d.waitJS(10*time.Second, `() => document.querySelectorAll('#tpl-versions tr').length === 2`)
	d.waitText("#tpl-name", "invoice")
	d.waitText(`#tpl-rows tr[data-template-id="`+tplID+`"] td:nth-child(2)`, "2")
	if v := p.MustElement("#tpl-version").MustProperty("value").Str(); v != "2" {
		t.Fatalf("the preview's version is %q, want the latest, 2", v)
	}
	if files := p.MustElement(`#tpl-versions tr[data-version="2"]`).MustText(); !strings.Contains(files, "index.html, style.css") || !strings.Contains(files, "yes") {
		t.Errorf("version 2's row %q", files)
	}
	before = c.billingUsage()
	p.MustElement("#tpl-data").MustInput(`{"number": "2026-042", "customer": {"name": "<script>alert(1)</script> & Söhne"},
  "items": [{"name": "Beratung", "price": 1234.5}, {"name": "Reise", "price": 99}],
  "date": "2026-03-01", "link": "javascript:alert(1)"}`)
	p.MustElement("#tpl-preview").MustClick()
	p.MustElement("#tpl-result").MustWaitVisible()
	// The frame shows the PDF where the browser has a PDF viewer (headless
	// Chromium has none: there the frame stays hidden, the link remains).
	if frame := p.MustElement("#tpl-frame"); p.MustEval(`() => navigator.pdfViewerEnabled`).Bool() {
		if src := frame.MustAttribute("src"); src == nil || !strings.HasPrefix(*src, "blob:"+svc.baseURL()+"/") {
			t.Fatalf("the preview frame shows %v, want the PDF's blob: URL", src)
		}
	} else if !frame.MustProperty("hidden").Bool() || frame.MustAttribute("src") != nil {
		t.Fatal("without a PDF viewer the frame is shown (it would download the PDF)")
	}
	d.waitJS(10*time.Second, `() => /^Download invoice\.pdf \(\d/.test(document.getElementById('tpl-download').textContent)`)
	tplPDF := func() []byte {
		wait := d.b.WaitDownload(dl)
		p.MustElement("#tpl-download").MustClick()
		got := wait()
		b, err := os.ReadFile(filepath.Join(dl, got.GUID))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	typed := text(t, tplPDF())
	for _, want := range []string{"Faktura 2026-042", "<script>alert(1)</script> & Söhne", "1.234,50 €", "1 März 2026"} {
		if !strings.Contains(typed, want) {
			t.Errorf("the preview of the typed data lacks %q:\n%s", want, typed)
		}
	}
	if used := c.billingUsage().ConversionsUsed; used != before.ConversionsUsed+1 {
		t.Errorf("a preview counted %d conversions", used-before.ConversionsUsed)
	}
	p.MustElement("#tpl-upload summary").MustClick() // closed again, for the picture
	d.shot("templates", "#templates")
	p.MustElement("#tpl-version").MustSelect("1")
	p.MustElement("#tpl-sample").MustClick()
	d.waitJS(time.Minute, `() => document.getElementById('tpl-summary').textContent.startsWith('Version 1 with its sample data')`)
	if sample := text(t, tplPDF()); !strings.Contains(sample, "Rechnung S-1") || !strings.Contains(sample, "Sample GmbH") {
		t.Errorf("the sample preview of version 1:\n%s", sample)
	}
	p.MustElement("#tpl-data").MustSelectAllText().MustInput(`{"number": "X", "items": [{"name": "a", "price": 1}, {"name": "b", "price": "lots"}]}`)
	p.MustElement("#tpl-preview").MustClick()
	d.waitJS(time.Minute, `() => document.querySelectorAll('#tpl-problems li.template-error').length === 1`)
	if li := p.MustElement("#tpl-problems li").MustText(); !strings.HasPrefix(li, "Line 5, data items[1].price: ") {
		t.Errorf("the template error reads %q", li)
	}
	if !p.MustElement("#tpl-result").MustProperty("hidden").Bool() || p.MustElement("#tpl-frame").MustAttribute("src") != nil {
		t.Error("a refused preview left the last PDF on screen")
	}
	d.shot("templates-error", "#tpl-detail")
	sent := c.billingUsage().ConversionsUsed
	p.MustElement("#tpl-data").MustSelectAllText().MustInput(`{"number": "2026-043",}`)
	p.MustElement("#tpl-preview").MustClick()
	d.waitJS(10*time.Second, `() => document.getElementById('tpl-preview-status').textContent.startsWith('The data is not valid JSON')`)
	if c.billingUsage().ConversionsUsed != sent {
		t.Error("JSON that does not parse was sent")
	}
	p.MustElement("#tpl-data").MustSelectAllText().MustInput(`{}`)

	// Hosted files: 11 hosted by a program and one from the form make two
	// pages (10 a page); open one; delete one.
	c.changePlan("pro")
	var apiHosted []hosted
	for i := range 11 {
		apiHosted = append(apiHosted, c.host(fmt.Sprintf("<h1>HOSTED-%d</h1>", i), map[string]any{"fileName": fmt.Sprintf("invoice-%03d", 101+i)}))
	}
	p.MustElement("#render-options").MustSelectAllText().MustInput(`{"fileName":"from-the-form"}`)
	p.MustElement("#render-host").MustClick()
	p.MustElement("#render-submit").MustClick()
	d.waitJS(time.Minute, `() => document.getElementById('render-link').textContent.includes('/api/hosted-pdfs/')`)
	formURL := p.MustElement("#render-link").MustText()
	formID := formURL[strings.LastIndex(formURL, "/")+1:]
	if formURL != svc.baseURL()+"/api/hosted-pdfs/"+formID {
		t.Fatalf("hosted link %q", formURL)
	}
	d.waitText("#hosted-page", "Page 1 of 2 (12 files)")
	if n := d.rows("#hosted-rows"); n != 10 {
		t.Fatalf("page 1 shows %d files, want 10", n)
	}
	if first := *p.MustElement("#hosted-rows tr").MustAttribute("data-pdf-id"); first != formID {
		t.Fatalf("first file %s, want the newest (%s)", first, formID)
	}
	hostedLimit := c.billingUsage().HostedLimit
	d.waitText("#hosted-text", fmt.Sprintf("12 / %d", hostedLimit))
	p.MustElement("#hosted-next").MustClick()
	d.waitText("#hosted-page", "Page 2 of 2 (12 files)")
	if n := d.rows("#hosted-rows"); n != 2 {
		t.Fatalf("page 2 shows %d files, want 2", n)
	}
	if !p.MustElement("#hosted-next").MustProperty("disabled").Bool() {
		t.Error("Next is enabled on the last page")
	}
	p.MustElement("#hosted-prev").MustClick()
	d.waitText("#hosted-page", "Page 1 of 2 (12 files)")
	open := p.MustElement(`#hosted-rows tr[data-pdf-id="` + formID + `"] a`)
	if href := *open.MustAttribute("href"); href != "/pdf/view/"+formID {
		t.Fatalf("open link %q", href)
	}
	if status, ctype := d.pageFetch("/pdf/view/" + formID); status != http.StatusOK || ctype != "application/pdf" {
		t.Fatalf("opening the hosted file: %d %s", status, ctype)
	}
	d.shot("hosted", "#hosted")
	gone := apiHosted[10].PdfID
	del := p.MustElement(`#hosted-rows tr[data-pdf-id="` + gone + `"] button`)
	del.MustClick()
	d.waitJS(5*time.Second, `() => [...document.querySelectorAll('#hosted-rows button')].some(b => b.textContent === 'Really delete?')`)
	del.MustClick()
	d.waitText("#hosted-page", "Page 1 of 2 (11 files)")
	if p.MustEval(`(id) => !!document.querySelector('#hosted-rows tr[data-pdf-id="' + id + '"]')`, gone).Bool() {
		t.Fatal("the deleted file is still listed")
	}
	expectError(t, c.withKey("GET", "/api/hosted-pdfs/"+gone, body{}), http.StatusNotFound, "NOT_FOUND")
	d.waitText("#hosted-text", fmt.Sprintf("11 / %d", hostedLimit))
	d.shot("usage", "#usage")

	// Follow a batch a program started, live, to the end.
	const n = 6
	id := c.startStream(map[string]any{"documents": slowDocs(n, 400, "dash")})
	p.MustEval(`() => { window.seen = []; const bar = document.getElementById('batch-progress');
		new MutationObserver(() => window.seen.push({state: document.getElementById('batch-state').textContent, value: bar.value, max: bar.max}))
			.observe(document.getElementById('batch-view'), {subtree: true, childList: true, characterData: true, attributes: true}); }`)
	p.MustElement("#batch-id").MustInput(id)
	p.MustElement("#batch-follow").MustClick()
	d.waitJS(2*time.Minute, `() => ['completed', 'error', 'not_found'].includes(document.getElementById('batch-state').textContent)`)
	d.waitText("#batch-state", "completed")
	bar := p.MustEval(`() => { const b = document.getElementById('batch-progress'); return {value: b.value, max: b.max, pos: b.position} }`)
	if bar.Get("value").Int() != n || bar.Get("max").Int() != n || bar.Get("pos").Num() != 1 {
		t.Fatalf("progress bar %v at the end, want %d of %d (100%%)", bar, n, n)
	}
	d.waitText("#batch-count", fmt.Sprintf("%d / %d documents", n, n))
	if href := *p.MustElement("#batch-link").MustAttribute("href"); href != svc.baseURL()+"/pdf/download/"+id {
		t.Fatalf("batch download link %q", href)
	}
	var live bool
	for _, s := range p.MustEval(`() => window.seen`).Arr() {
		if s.Get("state").Str() == "processing" {
			live = true
		}
	}
	if !live {
		t.Error("the page never showed the batch processing: no live progress")
	}
	d.shot("batch", "#batch")

	// A batch that does not exist says so.
	p.MustElement("#batch-id").MustSelectAllText().MustInput("AAAAAAAAAAAAAAAAAAAAAA")
	p.MustElement("#batch-follow").MustClick()
	d.waitText("#batch-state", "not_found")
	// Another account's batch: the stream is refused, and the page says why.
	other := newClient(t, svc)
	theirs := other.startStream(map[string]any{"documents": docs(1, "theirs")})
	p.MustElement("#batch-id").MustSelectAllText().MustInput(theirs)
	p.MustElement("#batch-follow").MustClick()
	d.waitText("#batch-status", "This batch belongs to another account.")
	other.waitBatch(theirs, 1, time.Minute)

	// A hosted batch ends with its result as JSON in the message: the page
	// links that result's downloadUrl, which answers with the ZIP.
	hid := c.startStream(map[string]any{"documents": docs(2, "dash-hosted"), "host": true})
	p.MustElement("#batch-id").MustSelectAllText().MustInput(hid)
	p.MustElement("#batch-follow").MustClick()
	d.waitJS(2*time.Minute, `() => ['completed', 'error', 'not_found'].includes(document.getElementById('batch-state').textContent)`)
	d.waitText("#batch-state", "completed")
	var done struct {
		DownloadURL string `json:"downloadUrl"`
		ZipID       string `json:"zipId"`
	}
	if msg := p.MustElement("#batch-message").MustText(); json.Unmarshal([]byte(msg), &done) != nil || done.ZipID == "" {
		t.Fatalf("hosted batch message %q: want the JSON of its result", msg)
	}
	zipURL := svc.baseURL() + "/api/hosted-pdfs/" + done.ZipID
	if p.MustElement("#batch-link").MustProperty("hidden").Bool() {
		t.Fatal("no download link for the hosted batch")
	}
	if href := *p.MustElement("#batch-link").MustAttribute("href"); href != zipURL || done.DownloadURL != zipURL {
		t.Fatalf("hosted batch link %q (downloadUrl %q), want %q", href, done.DownloadURL, zipURL)
	}
	if status, ctype := d.pageFetch(zipURL); status != http.StatusOK || ctype != "application/zip" {
		t.Fatalf("the hosted batch's link answers %d %s, want 200 application/zip", status, ctype)
	}

	// A slow render (waitDelay 2s) to the end, to learn how long one takes.
	p.MustElement("#render-host").MustClick() // a download, not hosted
	if p.MustElement("#render-host").MustProperty("checked").Bool() {
		t.Fatal("host still checked")
	}
	p.MustElement("#render-options").MustSelectAllText().MustInput(`{"waitDelay":"2s","fileName":"slow"}`)
	start := time.Now()
	p.MustElement("#render-submit").MustClick()
	d.waitJS(time.Minute, `() => document.getElementById('render-link').textContent.startsWith('Download slow.pdf')`)
	took := time.Since(start)
	if took < 2*time.Second {
		t.Fatalf("the slow render took %v: its waitDelay was not applied", took)
	}

	// Sign out while the same render is in flight: the session ends; its
	// answer, had it come, must not put this account's PDF back on the page.
	p.MustElement("#render-submit").MustClick()
	d.waitText("#render-status", "Rendering…")
	start = time.Now()
	p.MustElement("#signout").MustClick()
	p.MustElement("#auth").MustWaitVisible()
	for _, ck := range p.MustCookies(svc.URL) {
		if ck.Name == "docrender_session" {
			t.Error("session cookie still set after signing out")
		}
	}
	expectError(t, c.bearer("GET", "/api/auth/me", body{}), http.StatusUnauthorized, "")
	renderLeft := `() => { const r = document.getElementById('render-result'), l = document.getElementById('render-link');
		return r.hidden && l.textContent === '' && !l.hasAttribute('href') ? '' : 'result shown: ' + !r.hidden + ', link ' + JSON.stringify(l.textContent) }`
	time.Sleep(time.Until(start.Add(2*took + time.Second)))
	if left := p.MustEval(renderLeft).Str(); left != "" {
		t.Fatalf("a render sent before signing out came back into the page: %s", left)
	}
	if p.MustEval(`() => document.querySelectorAll('#tpl-rows tr').length > 0 || !document.getElementById('tpl-detail').hidden ||
		document.getElementById('tpl-frame').hasAttribute('src') || document.getElementById('tpl-data').value !== ''`).Bool() {
		t.Fatal("the templates of the last session are still on the page")
	}
	p.MustElement("#auth-email").MustSelectAllText().MustInput(email)
	p.MustElement("#auth-password").MustSelectAllText().MustInput("not the password")
	p.MustElement("#signin").MustClick()
	d.waitJS(10*time.Second, `() => document.getElementById('auth-status').classList.contains('error')`)
	p.MustElement("#auth-password").MustSelectAllText().MustInput(password)
	p.MustElement("#signin").MustClick()
	p.MustElement("#app").MustWaitVisible()
	d.waitText("#who-email", email)
	d.waitJS(10*time.Second, `() => document.querySelectorAll('#key-rows tr').length === 1`)
	d.waitText("#hosted-page", "Page 1 of 2 (12 files)") // the batch's ZIP is hosted too
	d.waitJS(10*time.Second, `() => document.querySelectorAll('#tpl-rows tr').length === 1`)
	if left := p.MustEval(renderLeft).Str(); left != "" {
		t.Fatalf("after signing in again: %s", left)
	}
	// The last session's form contents went with it.
	if v := p.MustElement("#render-options").MustProperty("value").Str(); v != "" {
		t.Errorf("render options %q left over from before signing out", v)
	}
	d.shot("overview", "")

	// Network refusals (a 401 before signing in, the wrong password) are
	// the only errors allowed.
	if probs := d.takeProblems(); len(probs) > 0 {
		t.Fatalf("the page reported:\n%s", strings.Join(probs, "\n"))
	}
}

// signUp creates an account named after who in the dashboard's form and
// waits for the signed-in page; it returns the email.
func (d *dashboard) signUp(who string) string {
	d.t.Helper()
	userSeq.Lock()
	userSeq.n++
	email := fmt.Sprintf("%s%d@example.com", who, userSeq.n)
	userSeq.Unlock()
	d.p.MustElement("#auth-email").MustInput(email)
	d.p.MustElement("#auth-password").MustInput("a long password")
	d.p.MustElement("#signup").MustClick()
	d.p.MustElement("#app").MustWaitVisible()
	d.waitText("#who-email", email)
	return email
}

// tempWriter writes files into a folder of the test's and returns their
// paths (for a file input's MustSetFiles).
func tempWriter(t *testing.T) func(name string, data []byte) string {
	dir := t.TempDir()
	return func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
}
