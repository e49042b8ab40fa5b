// Package browser runs one Chromium per worker process and hands out warm
// tabs, one or more per concurrent job, each in a browser context of its own.
//
// Isolation without paying for a new renderer process, or even a new
// document, per job: a tab waits on a blank home page with scripts off. A
// page without scripts is written into that document (Tab.Open), which is
// what a bare loop of go-rod does, and as no script ever runs there, the
// next job finds nothing of it but a document it replaces. A page with
// scripts gets an origin of its own (Tab.Navigate); after it the tab is
// parked on about:blank (Pool.clean) with its history, window name, that
// origin's and the home origin's storage and the context's cookies
// cleared, and scripts on again for the next navigation (a written job
// goes home first, scripts off). A tab whose page reached anything beyond its own
// uploads (another origin could hold state), failed, timed out, or opened
// other targets gets its whole browser context thrown away and a fresh one,
// prepared off the hot path. A watchdog relaunches a browser that crashed or
// stopped answering.
//
// Chromium runs with its sandbox (DESIGN §5), as an unprivileged user when
// the worker is root (Chromium refuses its sandbox to root); without the
// sandbox only when DOCRENDER_CHROMIUM_NO_SANDBOX says so, never as a
// fallback (launch.go).
package browser

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/devices"
	"github.com/go-rod/rod/lib/proto"
)

// ErrBrowserGone means the browser died or hung while a job used it; the job
// should be retried on a fresh browser.
var ErrBrowserGone = errors.New("browser: chromium is gone")

// Lane is a tab's own way out through the egress proxy; it tells whether the
// tab reached anything beyond its job's uploads.
type Lane interface {
	Addr() string
	Foreign() bool
	Reset()
	Close() error
}

// Config configures the pool.
type Config struct {
	// Bin is the Chromium executable; empty finds one on PATH. Never downloaded.
	Bin string
	// Proxy is the host:port of the egress proxy (the browser-wide default).
	Proxy string
	// NewLane opens a tab's lane.
	NewLane func() (Lane, error)
	// Tabs is the number of warm tabs: one per concurrent job at least;
	// more keep a tab's cleaning after its job off the next job's way.
	Tabs int
	// HomeURL is the blank page tabs wait on; Tab.Open writes documents
	// into it. It must be served through the proxy.
	HomeURL string
	// NoSandbox runs Chromium without its sandbox (DOCRENDER_CHROMIUM_NO_SANDBOX).
	NoSandbox bool
	// User is the account Chromium runs as when the worker runs as root
	// (DOCRENDER_CHROMIUM_USER; "nobody" when empty).
	User string
	Log  *slog.Logger
}

// maxJobsPerContext bounds how long one context lives, so whatever a
// renderer accumulates is dropped now and then.
const maxJobsPerContext = 100

type instance struct {
	gen     int64
	proc    *process
	browser *rod.Browser
}

// slot is one warm tab with its lane. The lane outlives the contexts.
type slot struct {
	lane  Lane
	gen   int64
	ctxID proto.BrowserBrowserContextID
	page  *rod.Page
	net   *tracker
	// stopNet ends the tracker with the context.
	stopNet context.CancelFunc
	jobs    int
	// stale means the slot needs a fresh context before its next job.
	stale bool
	// scripted means the tab left home with scripts on and needs cleaning.
	scripted bool
	// parked means the tab waits on about:blank (after a scripted job),
	// scripts on again, rather than on the home page: a written job takes
	// it home first (Tab.Open), a scripted one navigates from there.
	parked bool
	// emulated means the job changed the tab's emulation or requests
	// (Tab.EmulateMedia, Tab.Override).
	emulated bool
	// shown means the job draws the view at full size, at a viewport of
	// its own and maybe without a background (Tab.Show).
	shown bool
	// warm is the written document a job kept for another of the same key
	// to fill (Tab.KeepWarm); nil when none.
	warm *Warm
	// retire means the job asked for a fresh context after it (Tab.Retire).
	retire bool
}

// Pool is a Chromium with warm isolated tabs.
type Pool struct {
	cfg Config
	mu  sync.Mutex
	cur *instance
	// changed is closed (and replaced) when cur is replaced.
	changed chan struct{}
	// kick asks the watchdog to replace a browser that stopped answering.
	kick chan struct{}
	// downSince is when the browser stopped answering (Unix ns); 0 while up.
	downSince atomic.Int64
	// unhealthy is unhealthyAfter (tests shorten it).
	unhealthy atomic.Int64
	ready     chan *slot
	slots     []*slot
	restarts  atomic.Int64
	fresh     atomic.Int64
	opened    atomic.Int64
	filled    atomic.Int64
	stop      chan struct{}
	wg        sync.WaitGroup
	// acct is who Chromium runs as; nil: the worker's own user.
	acct *account
	// profiles is where each Chromium's directory is made (profileRoot).
	profiles string
}

const debianHeadlessShell = "/usr/lib/chromium/chromium-headless-shell"

// FindChromium returns the browser to use: the configured path or the first
// of the usual names on PATH.
func FindChromium(configured string) (string, error) {
	if configured != "" {
		if _, err := os.Stat(configured); err != nil {
			return "", fmt.Errorf("browser: DOCRENDER_CHROMIUM_PATH: %w", err)
		}
		return configured, nil
	}
	// The headless shell first: the same Blink without the browser's UI
	// layer, which costs CPU on every navigation (docs/benchmarks.md).
	// Debian's /usr/bin/chromium-headless-shell is a script that runs it
	// as a child: the binary itself is what the watchdog must signal.
	if _, err := os.Stat(debianHeadlessShell); err == nil {
		return debianHeadlessShell, nil
	}
	for _, name := range []string{"chrome-headless-shell", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("browser: no Chromium on PATH (install it with scripts/setup or set DOCRENDER_CHROMIUM_PATH)")
}

// Start launches Chromium and prepares the warm tabs.
func Start(ctx context.Context, cfg Config) (*Pool, error) {
	bin, err := FindChromium(cfg.Bin)
	if err != nil {
		return nil, err
	}
	cfg.Bin = bin
	if cfg.Tabs < 1 {
		cfg.Tabs = 1
	}
	acct, err := chromiumAccount(cfg.User)
	if err != nil {
		return nil, err
	}
	profiles, warning, err := defaultProfileRoot(acct)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		cfg.Log.Warn(warning)
	}
	p := &Pool{cfg: cfg, ready: make(chan *slot, cfg.Tabs), stop: make(chan struct{}), acct: acct, profiles: profiles,
		changed: make(chan struct{}), kick: make(chan struct{}, 1)}
	p.unhealthy.Store(int64(unhealthyAfter))
	if cfg.NoSandbox {
		cfg.Log.Warn("chromium runs WITHOUT its sandbox (" + NoSandboxVar + "=true): a page that exploits a renderer bug gets the browser's rights")
	}
	// Without its sandbox allowed off, a Chromium that cannot get it fails
	// here and the worker does not start: never a silent fallback.
	inst, err := p.launch(1)
	if err != nil {
		return nil, err
	}
	p.cur = inst
	for range cfg.Tabs {
		lane, err := cfg.NewLane()
		if err != nil {
			p.Close()
			return nil, err
		}
		s := &slot{lane: lane}
		p.slots = append(p.slots, s)
		if err := p.renew(ctx, s, inst); err != nil {
			p.Close()
			return nil, err
		}
		p.ready <- s
	}
	p.wg.Add(1)
	go p.watchdog()
	return p, nil
}

func (p *Pool) launch(gen int64) (*instance, error) {
	proc, ws, err := startChromium(p.binary(), chromiumArgs(p.cfg.Proxy, !p.cfg.NoSandbox), p.acct, p.profiles)
	if err != nil {
		if !p.cfg.NoSandbox && strings.Contains(strings.ToLower(err.Error()), "sandbox") {
			return nil, fmt.Errorf("%w; %s", err, sandboxHelp(p.acct))
		}
		return nil, err
	}
	b := rod.New().ControlURL(ws).DefaultDevice(tabDevice())
	if err := b.Connect(); err != nil {
		proc.Kill()
		proc.Cleanup()
		return nil, fmt.Errorf("browser: connect: %w", err)
	}
	user := "self"
	if p.acct != nil {
		user = p.acct.name
	}
	p.cfg.Log.Info("chromium started", "pid", proc.PID(), "generation", gen, "sandbox", !p.cfg.NoSandbox, "user", user)
	return &instance{gen: gen, proc: proc, browser: b}, nil
}

// binary is the Chromium to launch (tests swap it for one that fails).
func (p *Pool) binary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg.Bin
}

// Sandboxed reports whether Chromium runs with its sandbox.
func (p *Pool) Sandboxed() bool { return !p.cfg.NoSandbox }

func (p *Pool) current() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// PID is the running Chromium's process ID (tests kill it).
func (p *Pool) PID() int { return p.current().proc.PID() }

// Restarts counts relaunches since start.
func (p *Pool) Restarts() int64 { return p.restarts.Load() }

// Fresh counts the browser contexts created since start (tests read it to
// see that tabs are reused).
func (p *Pool) Fresh() int64 { return p.fresh.Load() }

// Opened counts the documents written with Tab.Open (tests read it to see
// which way a page was loaded).
func (p *Pool) Opened() int64 { return p.opened.Load() }

// Filled counts the warm documents filled in place with Tab.Fill.
func (p *Pool) Filled() int64 { return p.filled.Load() }

// Settled waits until every tab is back in the pool: its job done and the
// tab cleaned, or renewed when it could not be. Tabs are readied after the
// job's answer, so tests wait here before reading Fresh.
func (p *Pool) Settled(ctx context.Context) error {
	for len(p.ready) < len(p.slots) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// renew gives s a fresh browser context and tab on inst.
func (p *Pool) renew(ctx context.Context, s *slot, inst *instance) error {
	b := inst.browser.Context(ctx)
	res, err := proto.TargetCreateBrowserContext{
		DisposeOnDetach: true,
		ProxyServer:     "http://" + s.lane.Addr(),
		// Loopback too goes through the proxy, which refuses it.
		ProxyBypassList: "<-loopback>",
	}.Call(b)
	if err != nil {
		return fmt.Errorf("browser: new context: %w", err)
	}
	tgt, err := proto.TargetCreateTarget{URL: "about:blank", BrowserContextID: res.BrowserContextID}.Call(b)
	if err != nil {
		return fmt.Errorf("browser: new tab: %w", err)
	}
	page, err := inst.browser.PageFromTarget(tgt.TargetID)
	if err != nil {
		return fmt.Errorf("browser: attach tab: %w", err)
	}
	p.fresh.Add(1)
	if s.stopNet != nil {
		s.stopNet() // the last context's, gone with its browser
	}
	netCtx, stopNet := context.WithCancel(context.Background())
	*s = slot{lane: s.lane, gen: inst.gen, ctxID: res.BrowserContextID, page: page,
		net: track(page.Context(netCtx)), stopNet: stopNet}
	// Runtime stays enabled for the tab's life: a job's report listens to
	// its console, and enabling it per job costs a replay of every context
	// and stored message each time.
	if err := (proto.RuntimeEnable{}).Call(page.Context(ctx)); err != nil {
		p.dispose(s, inst)
		return fmt.Errorf("browser: runtime: %w", err)
	}
	if err := drawSmall(page.Context(ctx)); err != nil {
		// The tab works as well drawn at full size, at a cost.
		p.cfg.Log.Warn("tab view drawn at full size", "err", err)
	}
	if err := goHome(page.Context(ctx), p.cfg.HomeURL); err != nil {
		p.dispose(s, inst)
		return fmt.Errorf("browser: home: %w", err)
	}
	if err := fence(ctx, s); err != nil {
		p.dispose(s, inst)
		return fmt.Errorf("browser: %w", err)
	}
	return nil
}

// stopLoading stops whatever the tab's document is loading.
func stopLoading(s *slot) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := (proto.PageStopLoading{}).Call(s.page.Context(ctx)); err != nil {
		return fmt.Errorf("stop loading: %w", err)
	}
	return nil
}

// fence writes a mark to the tab's console and waits until the tab's own
// listener has heard it. Events reach rod's subscribers in order, each
// handed to all of them before a new one joins (github.com/ysmood/goob):
// once the mark is heard, every event of the tab's past has been handed
// out, and a subscription made after it hears only what happens after it.
// So a job that listens to its tab from its start hears only its own
// (the render report, package render), at no cost on the job's way. The
// tab is home or parked: no page script runs there to silence the
// console.
func fence(ctx context.Context, s *slot) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	mark := settledPrefix + rand.Text()
	res, err := proto.RuntimeEvaluate{Expression: "console.debug(" + strconv.Quote(mark) + ")"}.Call(s.page.Context(ctx))
	if err == nil && res.ExceptionDetails != nil {
		err = errors.New(res.ExceptionDetails.Text)
	}
	if err == nil {
		err = s.net.waitMark(ctx, mark)
	}
	if err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	return nil
}

// tabDevice is what every tab emulates, from its creation (rod applies a
// browser's default device to each page it attaches) to every reset after
// a job that changed it (Pool.resetEmulation): a 1280×800 landscape screen
// at devicePixelRatio 1, rod's laptop's user agent and Accept-Language.
// Named here, not left to rod's default, so the three agree.
func tabDevice() devices.Device { return devices.LaptopWithMDPIScreen.Landscape() }

// drawScale is the scale a tab's view is drawn at: a PDF service never
// shows it, and drawing a visible tab's 1280x800 view (raster and
// composite, on the CPU without a GPU) is about a third of Chromium's CPU
// per PDF of a small page (docs/benchmarks.md, session 8). Hidden tabs
// draw nothing but run no requestAnimationFrame callbacks, which pages
// need; a view drawn at this scale is a few pixels.
const drawScale = 0.01

// drawSmall keeps the tab's device metrics (tabDevice: what the page sees
// of its window and screen) and only draws the view at drawScale. Printing
// does not use the view.
func drawSmall(page *rod.Page) error {
	m := tabDevice().MetricsEmulation()
	scale := drawScale
	m.Scale = &scale
	return m.Call(page)
}

// goHome turns scripts off and loads the home page.
func goHome(page *rod.Page, home string) error {
	return load(page, home)
}

// parkURL is where a tab waits after a scripted job: a document with no
// origin of a job's, made without a request, and no script, though
// scripts are on again there (Pool.clean).
const parkURL = "about:blank"

// park turns scripts off and loads about:blank.
func park(page *rod.Page) error {
	return load(page, parkURL)
}

// load turns scripts off and loads url.
func load(page *rod.Page, url string) error {
	if err := navigate(page, url, false); err != nil {
		return err
	}
	// With scripts off no load listener runs: poll the (tiny) page. Right
	// after the navigation the tab may still show the old document.
	for try := 0; ; try++ {
		var state string
		err := Evaluate(page, `() => document.URL + ' ' + document.readyState`, &state)
		if err == nil && state == url+" complete" {
			return nil
		}
		if try == 100 {
			return fmt.Errorf("%s not loaded: %q %v", url, state, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dispose throws s's context away, with every page and worker in it.
func (p *Pool) dispose(s *slot, inst *instance) {
	s.warm = nil
	if s.stopNet != nil {
		s.stopNet()
	}
	if s.page == nil || s.gen != inst.gen {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Stop a script that may still be running, then drop everything.
	_ = proto.RuntimeTerminateExecution{}.Call(s.page.Context(ctx))
	_ = proto.TargetDisposeBrowserContext{BrowserContextID: s.ctxID}.Call(inst.browser.Context(ctx))
	s.page = nil
}

// take returns a warm slot of the current browser: one whose document was
// kept warm under key when one is ready (an empty key prefers none).
func (p *Pool) take(ctx context.Context, key string) (*slot, error) {
	var s *slot
	if key != "" {
		s = p.takeWarm(key)
	}
	if s == nil {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case s = <-p.ready:
		}
	}
	for {
		inst := p.current()
		if !s.stale && s.page != nil && s.gen == inst.gen {
			return s, nil
		}
		err := p.renew(ctx, s, inst)
		if err == nil {
			return s, nil
		}
		if p.alive(inst) || ctx.Err() != nil {
			s.stale = true
			p.ready <- s
			return nil, err
		}
		p.relaunch()
		if err := p.awaitNewBrowser(ctx, inst); err != nil {
			s.stale = true
			p.ready <- s
			return nil, err
		}
	}
}

// browserWait bounds how long a job waits for a relaunched browser before
// it is handed back (ErrBrowserGone: another worker may have one).
const browserWait = 10 * time.Second

// awaitNewBrowser waits until inst has been replaced, for ctx and at most
// browserWait.
func (p *Pool) awaitNewBrowser(ctx context.Context, inst *instance) error {
	wait := time.NewTimer(browserWait)
	defer wait.Stop()
	for {
		p.mu.Lock()
		cur, changed := p.cur, p.changed
		p.mu.Unlock()
		if cur != inst {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-wait.C:
			return fmt.Errorf("%w: no browser after %s", ErrBrowserGone, browserWait)
		case <-p.stop:
			return ErrBrowserGone
		}
	}
}

// release readies s for the next job: cleaned when the job stayed within
// its own origin, renewed otherwise.
func (p *Pool) release(s *slot, clean bool) {
	defer func() {
		s.lane.Reset()
		p.ready <- s
	}()
	inst := p.current()
	s.jobs++
	if clean && !s.retire && !s.lane.Foreign() && s.jobs < maxJobsPerContext && s.gen == inst.gen {
		var err error
		if s.scripted {
			err = p.clean(s, inst)
		} else {
			err = p.checkHome(s)
		}
		if err == nil && s.emulated {
			err = p.resetEmulation(s)
		}
		if err == nil {
			// A written job's document stays until the next job replaces
			// it: nothing of it may load meanwhile, or the next job's
			// report would hear it after the fence.
			err = stopLoading(s)
		}
		if err == nil {
			err = fence(context.Background(), s)
		}
		if err == nil {
			return
		}
		p.cfg.Log.Debug("tab not reusable, renewing its context", "err", err)
	}
	p.dispose(s, inst)
	s.stale = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.renew(ctx, s, inst); err == nil {
		s.stale = false
	}
}

// checkHome makes sure a job without scripts left the tab where it was: on
// the home origin (it cannot navigate without scripts but by a meta refresh,
// which Open's callers do not send there; this is the belt to those braces).
func (p *Pool) checkHome(s *slot) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := proto.TargetGetTargetInfo{TargetID: s.page.TargetID}.Call(s.page.Context(ctx))
	if err != nil {
		return fmt.Errorf("target info: %w", err)
	}
	want := p.cfg.HomeURL
	if s.parked {
		want = parkURL
	}
	if !strings.HasPrefix(info.TargetInfo.URL, want) {
		return fmt.Errorf("tab left %s for %s", want, info.TargetInfo.URL)
	}
	return nil
}

// resetEmulation gives the next job the print media type, no extra
// headers, the tab's user agent and language (tabDevice) and its small
// view (drawSmall), whatever a job changed: every job starts from the same
// tab.
func (p *Pool) resetEmulation(s *slot) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	page := s.page.Context(ctx)
	// An empty media type ends the override.
	if err := (proto.EmulationSetEmulatedMedia{}).Call(page); err != nil {
		return fmt.Errorf("reset media: %w", err)
	}
	if err := (proto.NetworkSetExtraHTTPHeaders{Headers: proto.NetworkHeaders{}}).Call(page); err != nil {
		return fmt.Errorf("reset headers: %w", err)
	}
	if err := tabDevice().UserAgentEmulation().Call(page); err != nil {
		return fmt.Errorf("reset user agent: %w", err)
	}
	if s.shown {
		// No color ends the override: the page's default white again.
		if err := (proto.EmulationSetDefaultBackgroundColorOverride{}).Call(page); err != nil {
			return fmt.Errorf("reset background: %w", err)
		}
		if err := drawSmall(page); err != nil {
			return fmt.Errorf("reset view: %w", err)
		}
		s.shown = false
	}
	s.emulated = false
	return nil
}

// clean parks a tab that ran scripts on about:blank: scripts off first
// (no timer or unload handler of the job's page runs again), no history, no
// window name, no storage of the job's origin nor of the home origin (no
// job's script runs there, egress sees to it: this is the belt to those
// braces), no cookies; then scripts on again for the next job's
// navigation (about:blank runs none). Anything else left in the context
// (popups, workers) makes it fail, and the context is renewed instead.
//
// It does not go home: that is a navigation through the proxy and a
// document, as costly as the job's own, which the next job does not need
// when it navigates too. A written job goes home first (Tab.Open).
func (p *Pool) clean(s *slot, inst *instance) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	page, b := s.page.Context(ctx), inst.browser.Context(ctx)
	info, err := proto.TargetGetTargetInfo{TargetID: s.page.TargetID}.Call(b)
	if err != nil {
		return fmt.Errorf("target info: %w", err)
	}
	if err := park(page); err != nil {
		return fmt.Errorf("park: %w", err)
	}
	s.parked = true
	for try := 0; ; try++ {
		err := (proto.PageResetNavigationHistory{}).Call(page)
		if err == nil {
			break
		}
		if try == 20 {
			return fmt.Errorf("history: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// window.name survives navigations within a tab.
	if _, err := (proto.RuntimeEvaluate{Expression: "window.name = ''"}).Call(page); err != nil {
		return fmt.Errorf("window name: %w", err)
	}
	origins := []string{origin(p.cfg.HomeURL)}
	if o := origin(info.TargetInfo.URL); o != "" && o != origins[0] {
		origins = append(origins, o)
	}
	for _, o := range origins {
		if err := (proto.StorageClearDataForOrigin{Origin: o, StorageTypes: "all"}).Call(page); err != nil {
			return fmt.Errorf("clear origin %s: %w", o, err)
		}
	}
	if err := (proto.StorageClearCookies{BrowserContextID: s.ctxID}).Call(b); err != nil {
		return fmt.Errorf("clear cookies: %w", err)
	}
	targets, err := proto.TargetGetTargets{}.Call(b)
	if err != nil {
		return fmt.Errorf("targets: %w", err)
	}
	for _, t := range targets.TargetInfos {
		switch t.Type {
		case "page", "shared_worker", "service_worker":
			if t.BrowserContextID == s.ctxID && t.TargetID != s.page.TargetID {
				return fmt.Errorf("browser: %s target left in the context", t.Type)
			}
		}
	}
	// Scripts on again for the next job's navigation (Tab.Navigate), now
	// that the job's document is gone: about:blank runs none. A written
	// job turns them off as it goes home (Tab.Open).
	if err := setScripts(page, true); err != nil {
		return err
	}
	s.scripted = false
	return nil
}

// origin is the scheme://host of an http(s) URL, "" for any other.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// Tab runs fn on a warm isolated tab. If the browser dies or hangs meanwhile,
// the error wraps ErrBrowserGone and the browser is relaunched.
func (p *Pool) Tab(ctx context.Context, fn func(t *Tab) error) error {
	return p.TabFor(ctx, "", fn)
}

// TabFor is Tab, preferring among the tabs ready now one whose document a
// job kept warm under key (Tab.KeepWarm); any other when none is. An empty
// key prefers nothing.
func (p *Pool) TabFor(ctx context.Context, key string, fn func(t *Tab) error) error {
	s, err := p.take(ctx, key)
	if err != nil {
		return err
	}
	inst := p.current()
	err = fn(&Tab{p: p, s: s, ctx: ctx})
	if err != nil && !p.alive(inst) {
		p.relaunch()
		s.stale = true
		go p.release(s, false)
		return fmt.Errorf("%w: %v", ErrBrowserGone, err)
	}
	go p.release(s, err == nil && ctx.Err() == nil)
	return err
}

// takeWarm takes a ready tab kept warm under key (Tab.KeepWarm), nil when
// none is ready: the tabs ready now are taken out, and the others put back.
func (p *Pool) takeWarm(key string) *slot {
	var others []*slot
	var found *slot
	for range len(p.ready) {
		select {
		case s := <-p.ready:
			if found == nil && s.warm != nil && s.warm.Key == key {
				found = s
			} else {
				others = append(others, s)
			}
		default:
		}
	}
	for _, s := range others {
		p.ready <- s
	}
	return found
}

// alive pings the browser process.
func (p *Pool) alive(inst *instance) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := proto.BrowserGetVersion{}.Call(inst.browser.Context(ctx))
	return err == nil
}

// relaunch asks the watchdog to replace the browser, without waiting:
// nothing holds the pool's lock while Chromium starts (or fails to).
func (p *Pool) relaunch() {
	select {
	case p.kick <- struct{}{}:
	default: // already asked
	}
}

// Relaunch backoff: a Chromium that cannot start is retried ever less often.
const (
	relaunchMin = time.Second
	relaunchMax = 30 * time.Second
)

// replace kills inst and launches its successor, retrying with backoff
// until one starts or the pool closes. Only the watchdog calls it.
func (p *Pool) replace(inst *instance) {
	p.downSince.CompareAndSwap(0, time.Now().UnixNano())
	p.cfg.Log.Warn("chromium unresponsive, relaunching", "pid", inst.proc.PID(), "generation", inst.gen)
	inst.proc.Kill()
	inst.proc.Cleanup()
	backoff := relaunchMin
	for {
		next, err := p.launch(inst.gen + 1)
		if err == nil {
			p.mu.Lock()
			p.cur = next
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
			p.downSince.Store(0)
			p.restarts.Add(1)
			return
		}
		p.cfg.Log.Error("chromium relaunch failed", "err", err, "retry_in", backoff)
		select {
		case <-p.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, relaunchMax)
	}
}

// watchdog notices a dead browser even when no job is running, and is the
// one that replaces it.
func (p *Pool) watchdog() {
	defer p.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		case <-p.kick:
		}
		if inst := p.current(); !p.alive(inst) {
			p.replace(inst)
		}
	}
}

// unhealthyAfter is how long the browser may be gone before Healthy fails,
// so that the orchestrator restarts a worker that cannot get one back.
const unhealthyAfter = 60 * time.Second

// Healthy fails once the browser has been unavailable for unhealthyAfter.
func (p *Pool) Healthy() error {
	since := p.downSince.Load()
	if since == 0 {
		return nil
	}
	if d := time.Since(time.Unix(0, since)); d > time.Duration(p.unhealthy.Load()) {
		return fmt.Errorf("%w for %s", ErrBrowserGone, d.Round(time.Second))
	}
	return nil
}

// Ready reports whether the browser answers (within 3 s, sooner if ctx
// ends). A browser being replaced is not ready.
func (p *Pool) Ready(ctx context.Context) error {
	if p.downSince.Load() != 0 {
		return ErrBrowserGone
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := (proto.BrowserGetVersion{}).Call(p.current().browser.Context(ctx)); err != nil {
		return fmt.Errorf("%w: %v", ErrBrowserGone, err)
	}
	return nil
}

// Close stops the browser.
func (p *Pool) Close() {
	close(p.stop)
	p.wg.Wait()
	for _, s := range p.slots {
		s.lane.Close()
	}
	inst := p.current()
	_ = inst.browser.Close()
	inst.proc.Kill()
	inst.proc.Cleanup()
}
