package browser

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// Tab is a warm tab lent to one job. It starts on the home page with
// scripts off (or parked, see Pool.clean); the job either writes a
// document without scripts into it (Open) or navigates to one that runs
// scripts (Navigate). Every event of the tab's earlier jobs has been handed
// out before the job gets it (fence): what the job subscribes to hears the
// job only.
type Tab struct {
	p   *Pool
	s   *slot
	ctx context.Context
}

// Page is the tab's page, bound to the job's context.
func (t *Tab) Page() *rod.Page { return t.s.page.Context(t.ctx) }

// Lane is the tab's own way out: what the job's page may load is served there.
func (t *Tab) Lane() Lane { return t.s.lane }

// Navigate loads url with scripts on. The tab is cleaned after the job.
func (t *Tab) Navigate(url string) error {
	t.s.warm = nil
	parked := t.s.parked
	t.s.scripted, t.s.parked = true, false
	if parked {
		// Parked with scripts on already (Pool.clean): one round trip less.
		return goTo(t.Page(), url)
	}
	return navigate(t.Page(), url, true)
}

// GoHome takes a tab whose page this job navigated to back to the home
// document, so that Open can write into it again. The tab stays marked
// scripted: it is cleaned after the job all the same.
func (t *Tab) GoHome() error {
	t.s.warm = nil
	return goHome(t.Page(), t.p.cfg.HomeURL)
}

// Scripted reports whether the tab's page has run scripts in this job: the
// page's own global objects (console, say) are then not to be trusted.
func (t *Tab) Scripted() bool { return t.s.scripted }

// EmulateMedia makes the page's CSS media type media ("screen") for this
// job. Emulation belongs to the tab, not to a document: the pool sets it
// back before the tab's next job.
func (t *Tab) EmulateMedia(media string) error {
	t.s.emulated = true
	return proto.EmulationSetEmulatedMedia{Media: media}.Call(t.Page())
}

// Show makes the tab's view width × height CSS pixels drawn at full size,
// one device pixel each, for a job that captures it (a screenshot), and,
// when transparent, the page's default background transparent (a page that
// paints none shows none). Call it before loading: the page lays out at
// the view's width. The pool draws the view small again before the tab's
// next job (drawScale: a PDF never shows it).
func (t *Tab) Show(width, height int, transparent bool) error {
	page := t.Page()
	t.s.emulated, t.s.shown = true, true
	m := tabDevice().MetricsEmulation()
	one := 1.0
	m.Width, m.Height, m.DeviceScaleFactor, m.Scale = width, height, 1, &one
	if err := m.Call(page); err != nil {
		return fmt.Errorf("view: %w", err)
	}
	if transparent {
		bg := proto.EmulationSetDefaultBackgroundColorOverride{Color: &proto.DOMRGBA{A: gson.Num(0)}}
		if err := bg.Call(page); err != nil {
			return fmt.Errorf("background: %w", err)
		}
	}
	return nil
}

// Overrides are what a job fetching a page by URL sets on its requests
// (DESIGN §6: extraHttpHeaders, cookies, userAgent).
type Overrides struct {
	Headers   map[string]string
	UserAgent string
	Cookies   []*proto.NetworkCookieParam
}

// Override applies o to the tab for this job; like the media type, the
// pool takes it back before the tab's next job (cookies go with the
// tab's cleaning).
func (t *Tab) Override(o Overrides) error {
	page := t.Page()
	t.s.emulated = true
	if len(o.Headers) > 0 {
		h := proto.NetworkHeaders{}
		for k, v := range o.Headers {
			h[k] = gson.New(v)
		}
		if err := (proto.NetworkSetExtraHTTPHeaders{Headers: h}).Call(page); err != nil {
			return fmt.Errorf("extra headers: %w", err)
		}
	}
	if o.UserAgent != "" {
		// The tab's language stays: only the agent is the job's.
		ua := proto.EmulationSetUserAgentOverride{UserAgent: o.UserAgent, AcceptLanguage: tabDevice().AcceptLanguage}
		if err := ua.Call(page); err != nil {
			return fmt.Errorf("user agent: %w", err)
		}
	}
	if len(o.Cookies) > 0 {
		t.s.scripted = true // the cleaning clears the context's cookies
		if err := (proto.NetworkSetCookies{Cookies: o.Cookies}).Call(page); err != nil {
			return fmt.Errorf("cookies: %w", err)
		}
	}
	return nil
}

// navigate sets whether the page's scripts run, then loads url. Scripts are
// set first: turned off, no timer of the page being left runs again.
func navigate(page *rod.Page, url string, scripts bool) error {
	if err := setScripts(page, scripts); err != nil {
		return err
	}
	return goTo(page, url)
}

// setScripts turns the tab's scripts on or off, for its documents to come
// too.
func setScripts(page *rod.Page, on bool) error {
	if err := (proto.EmulationSetScriptExecutionDisabled{Value: !on}).Call(page); err != nil {
		return fmt.Errorf("scripts on=%v: %w", on, err)
	}
	return nil
}

// goTo navigates to url, with the tab's scripts as they are set.
func goTo(page *rod.Page, url string) error {
	nav, err := proto.PageNavigate{URL: url}.Call(page)
	if err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return errors.New(nav.ErrorText)
	}
	return nil
}

// maxSettleRounds bounds Open's waiting for loads that start others (a
// stylesheet's fonts and images, an @import): a few are plenty.
const maxSettleRounds = 16

// Open writes html as the document at url, which must be on the home origin,
// calls the JavaScript function fn with args as Evaluate does, in the same
// round trip, and waits until every resource the document asked for has
// loaded. Scripts stay off: the document is what the page of a job without
// scripts becomes, and it replaces whatever the tab showed.
//
// A written document's load event does not wait for its subresources (the
// tab's document completed loading once already), and the print waits for
// loads in flight for two seconds at most; so Open watches the network: it
// brings style and layout up to date (which starts the loads of CSS images
// and fonts), waits until no request is in flight, and repeats until a round
// starts no new request.
func (t *Tab) Open(url, html, fn string, out any, args ...any) error {
	t.p.opened.Add(1)
	t.s.warm = nil
	page := t.Page()
	if t.s.parked {
		// After a scripted job the tab waits on about:blank (Pool.clean).
		if err := goHome(page, t.p.cfg.HomeURL); err != nil {
			return fmt.Errorf("home: %w", err)
		}
		t.s.parked = false
	}
	open := `async (url, html, ...args) => {
	history.replaceState(null, '', url);
	document.open();
	document.write(html);
	document.close();
	return await (` + fn + `)(...args);
}`
	return t.settle(open, out, append([]any{url, html}, args...)...)
}

// Warm is what a job leaves in its tab's written document for a later job
// with the same Key to fill in place rather than write a document anew (a
// stored template's page, package render). Key names the document's owner
// and files; Data is the caller's. The tab keeps it until a job writes or
// navigates (Open, Navigate) or the tab gets a fresh context: it is only
// ever the tab's current document, no more memory than any written job
// leaves behind.
type Warm struct {
	Key  string
	Data any
}

// Warm is the warm document the tab holds, nil when none.
func (t *Tab) Warm() *Warm { return t.s.warm }

// KeepWarm marks the tab's current document, written by this job, as w:
// a later job with w.Key may Fill it (Pool.TabFor prefers this tab).
func (t *Tab) KeepWarm(w *Warm) { t.s.warm = w }

// Retire has the tab's context thrown away after the job, its renderer
// process with it, and a fresh one made, rather than the tab cleaned and
// reused. For a job that leaves its renderer large (a long print): a
// renderer keeps the memory of a long document after it, and tearing that
// document down when the next job writes its own into the tab slows that
// job (package render, retireLong).
func (t *Tab) Retire() { t.s.retire = true }

// Fill calls the JavaScript function fn with args in the tab's current
// document, which must be the warm one (Tab.Warm) a job left, and waits as
// Open does until every resource it asked for has loaded. fn changes the
// document in place; scripts stay off. The document stays warm (KeepWarm)
// only if the job says so again.
func (t *Tab) Fill(fn string, out any, args ...any) error {
	if t.s.warm == nil || t.s.parked {
		return errors.New("browser: no warm document to fill")
	}
	t.p.filled.Add(1)
	t.s.warm = nil
	return t.settle(fn, out, args...)
}

// settle runs fn with args as Evaluate does, then brings style and layout up
// to date, waits for the fonts and until no request is in flight, and
// repeats until a round starts no new request (Open).
func (t *Tab) settle(fn string, out any, args ...any) error {
	page, net := t.Page(), t.s.net
	net.reset()
	started := net.startedCount()
	mark := settledPrefix + rand.Text()
	run := `async (mark, ...args) => {
	const out = await (` + fn + `)(...args);
	document.documentElement.getBoundingClientRect();
	await document.fonts.ready;
	console.debug(mark);
	return out;
}`
	if err := Evaluate(page, run, out, append([]any{mark}, args...)...); err != nil {
		return err
	}
	for range maxSettleRounds {
		if err := net.waitIdle(t.ctx, mark); err != nil {
			return fmt.Errorf("waiting for the page's resources: %w", err)
		}
		if net.startedCount() == started {
			return nil
		}
		started = net.startedCount()
		mark = settledPrefix + rand.Text()
		if err := Evaluate(page, settleJS, nil, mark); err != nil {
			return fmt.Errorf("settle: %w", err)
		}
	}
	return nil
}

// settleJS brings style and layout up to date, waits for the fonts, and
// writes mark to the console: the tracker sees it after every network event
// the page sent before it.
const settleJS = `async (mark) => {
	document.documentElement.getBoundingClientRect();
	await document.fonts.ready;
	console.debug(mark);
}`

// Evaluate calls the JavaScript function fn with args in the page and
// decodes its (awaited) result into out, when out is not nil. It is one plain
// Runtime.evaluate: rod's Eval injects its helper script into every new
// document first, which cost more than the rest of a small render. It works
// with the page's scripts off too.
func Evaluate(page *rod.Page, fn string, out any, args ...any) error {
	enc := make([]string, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return err
		}
		enc[i] = string(b)
	}
	res, err := proto.RuntimeEvaluate{
		Expression:    "(" + fn + ")(" + strings.Join(enc, ",") + ")",
		AwaitPromise:  true,
		ReturnByValue: true,
	}.Call(page)
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("script failed: %s", res.ExceptionDetails.Text)
	}
	if out == nil {
		return nil
	}
	return res.Result.Value.Unmarshal(out)
}
