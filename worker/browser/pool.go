// Package browser runs one Chromium per worker process and hands out
// isolated tabs. Each tab lives in its own browser context (no cookies,
// storage or cache shared with any other job) and is created ahead of time,
// so a job starts on a warm tab; after the job the whole context is thrown
// away and a fresh one is prepared off the hot path. A watchdog relaunches a
// browser that crashed or stopped answering.
package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
)

// ErrBrowserGone means the browser died or hung while a job used it; the job
// should be retried on a fresh browser.
var ErrBrowserGone = errors.New("browser: chromium is gone")

// Config configures the pool.
type Config struct {
	// Bin is the Chromium executable; empty finds one on PATH. Never downloaded.
	Bin string
	// Proxy is the host:port every page's traffic goes through.
	Proxy string
	// Tabs is the number of warm tabs, one per concurrent job.
	Tabs int
	Log  *slog.Logger
}

type instance struct {
	gen      int64
	launcher *launcher.Launcher
	browser  *rod.Browser
}

type tab struct {
	gen   int64
	ctxID proto.BrowserBrowserContextID
	page  *rod.Page
}

// Pool is a Chromium with warm isolated tabs.
type Pool struct {
	cfg      Config
	mu       sync.Mutex
	cur      *instance
	ready    chan *tab
	restarts atomic.Int64
	stop     chan struct{}
	wg       sync.WaitGroup
	// noSandbox: Chromium's sandbox is off (running as root, where Chromium
	// refuses it, or where it could not start; see Start).
	noSandbox bool
}

// FindChromium returns the browser to use: the configured path or the first
// of the usual names on PATH.
func FindChromium(configured string) (string, error) {
	if configured != "" {
		if _, err := os.Stat(configured); err != nil {
			return "", fmt.Errorf("browser: DOCRENDER_CHROMIUM_PATH: %w", err)
		}
		return configured, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
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
	p := &Pool{cfg: cfg, ready: make(chan *tab, cfg.Tabs), stop: make(chan struct{}), noSandbox: os.Geteuid() == 0}
	inst, err := p.launch(1)
	if err != nil && !p.noSandbox {
		// The sandbox needs user namespaces, which some container runtimes
		// (Docker's default seccomp profile) refuse. Every page still goes
		// through the egress proxy in a context of its own; say so loudly.
		cfg.Log.Warn("chromium failed to start with its sandbox; starting it without (allow user namespaces to keep the sandbox)", "err", err)
		p.noSandbox = true
		inst, err = p.launch(1)
	}
	if err != nil {
		return nil, err
	}
	p.cur = inst
	for range cfg.Tabs {
		t, err := p.newTab(ctx, inst)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.ready <- t
	}
	p.wg.Add(1)
	go p.watchdog()
	return p, nil
}

func (p *Pool) launch(gen int64) (*instance, error) {
	l := launcher.New().
		Bin(p.cfg.Bin).
		Headless(true).
		Set("disable-gpu").
		Set("disable-quic").
		Set("disable-component-update").
		Set("disable-extensions").
		Set("hide-scrollbars").
		Set("mute-audio").
		Set("no-default-browser-check").
		Set("proxy-server", "http://"+p.cfg.Proxy).
		// Route loopback through the proxy too; by default Chromium bypasses it.
		Set("proxy-bypass-list", "<-loopback>").
		// Nothing but the proxy: no WebRTC UDP around it.
		Set("force-webrtc-ip-handling-policy").
		Set("webrtc-ip-handling-policy", "disable_non_proxied_udp")
	// As root Chromium refuses its sandbox; otherwise keep it (rod's
	// launcher would drop it by default inside containers).
	l = l.NoSandbox(p.noSandbox)
	u, err := l.Launch()
	if err != nil {
		l.Kill()
		l.Cleanup()
		return nil, fmt.Errorf("browser: launch %s: %w", p.cfg.Bin, err)
	}
	b := rod.New().ControlURL(u)
	if err := b.Connect(); err != nil {
		l.Kill()
		l.Cleanup()
		return nil, fmt.Errorf("browser: connect: %w", err)
	}
	p.cfg.Log.Info("chromium started", "pid", l.PID(), "generation", gen)
	return &instance{gen: gen, launcher: l, browser: b}, nil
}

func (p *Pool) current() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// PID is the running Chromium's process ID (tests kill it).
func (p *Pool) PID() int { return p.current().launcher.PID() }

// Restarts counts relaunches since start.
func (p *Pool) Restarts() int64 { return p.restarts.Load() }

func (p *Pool) newTab(ctx context.Context, inst *instance) (*tab, error) {
	b := inst.browser.Context(ctx)
	res, err := proto.TargetCreateBrowserContext{
		DisposeOnDetach: true,
		ProxyServer:     "http://" + p.cfg.Proxy,
		ProxyBypassList: "<-loopback>",
	}.Call(b)
	if err != nil {
		return nil, fmt.Errorf("browser: new context: %w", err)
	}
	tgt, err := proto.TargetCreateTarget{URL: "about:blank", BrowserContextID: res.BrowserContextID}.Call(b)
	if err != nil {
		return nil, fmt.Errorf("browser: new tab: %w", err)
	}
	page, err := inst.browser.PageFromTarget(tgt.TargetID)
	if err != nil {
		return nil, fmt.Errorf("browser: attach tab: %w", err)
	}
	return &tab{gen: inst.gen, ctxID: res.BrowserContextID, page: page}, nil
}

// take returns a warm tab of the current browser.
func (p *Pool) take(ctx context.Context) (*tab, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case t := <-p.ready:
			inst := p.current()
			if t != nil && t.gen == inst.gen {
				return t, nil
			}
			// A tab of a dead browser: replace it.
			nt, err := p.newTab(ctx, inst)
			if err != nil {
				p.ready <- nil
				if p.alive(inst) {
					return nil, err
				}
				p.relaunch(inst)
				continue
			}
			return nt, nil
		}
	}
}

// recycle throws the tab's context away and puts a fresh tab in its place.
func (p *Pool) recycle(t *tab) {
	inst := p.current()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if t.gen == inst.gen {
		// Stop any script still running, then drop the context and its pages.
		_ = proto.RuntimeTerminateExecution{}.Call(t.page.Context(ctx))
		_ = proto.TargetDisposeBrowserContext{BrowserContextID: t.ctxID}.Call(inst.browser.Context(ctx))
	}
	nt, err := p.newTab(ctx, inst)
	if err != nil {
		nt = nil // take() makes one when it finds the gap
	}
	p.ready <- nt
}

// Tab runs fn on a warm isolated tab. If the browser dies or hangs meanwhile,
// the error wraps ErrBrowserGone and the browser is relaunched.
func (p *Pool) Tab(ctx context.Context, fn func(page *rod.Page) error) error {
	t, err := p.take(ctx)
	if err != nil {
		return err
	}
	inst := p.current()
	err = fn(t.page.Context(ctx))
	if err != nil && !p.alive(inst) {
		p.relaunch(inst)
		go p.recycle(t)
		return fmt.Errorf("%w: %v", ErrBrowserGone, err)
	}
	go p.recycle(t)
	return err
}

// alive pings the browser process.
func (p *Pool) alive(inst *instance) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := proto.BrowserGetVersion{}.Call(inst.browser.Context(ctx))
	return err == nil
}

// relaunch replaces inst if it is still the current browser.
func (p *Pool) relaunch(inst *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != inst {
		return // someone else already did
	}
	p.cfg.Log.Warn("chromium unresponsive, relaunching", "pid", inst.launcher.PID(), "generation", inst.gen)
	inst.launcher.Kill()
	inst.launcher.Cleanup()
	for {
		next, err := p.launch(inst.gen + 1)
		if err == nil {
			p.cur = next
			p.restarts.Add(1)
			return
		}
		p.cfg.Log.Error("chromium relaunch failed", "err", err)
		select {
		case <-p.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// watchdog notices a dead browser even when no job is running.
func (p *Pool) watchdog() {
	defer p.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			if inst := p.current(); !p.alive(inst) {
				p.relaunch(inst)
			}
		}
	}
}

// Ready reports whether the browser answers.
func (p *Pool) Ready(context.Context) error {
	if !p.alive(p.current()) {
		return ErrBrowserGone
	}
	return nil
}

// Close stops the browser.
func (p *Pool) Close() {
	close(p.stop)
	p.wg.Wait()
	inst := p.current()
	_ = inst.browser.Close()
	inst.launcher.Kill()
	inst.launcher.Cleanup()
}
