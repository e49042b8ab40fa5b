package browser_test

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

// After a job with scripts, the tab's next job finds the home origin's
// storage empty, in the same browser context: were a script ever to run
// there (egress serves no scripted job's files on it), it could leave
// nothing for the next job. The script on home is played here by the test.
func TestHomeStorageClearedAfterScriptedJob(t *testing.T) {
	var log bytes.Buffer
	p, err := startPool(t, browser.Config{}, &log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fresh := p.Fresh()
	err = p.Tab(ctx, func(tab *browser.Tab) error {
		site, done := tab.Lane().(*egress.Lane).Serve(egress.Bundle{"index.html": []byte("<p>job</p>")}, false)
		defer done()
		if err := tab.Navigate(site.URL("index.html")); err != nil {
			return err
		}
		if err := tab.Navigate(egress.HomeURL); err != nil {
			return err
		}
		if err := browser.Evaluate(tab.Page(), `() => { localStorage.setItem('k', 'leak') }`, nil); err != nil {
			return err
		}
		// The job ends on its own origin, as a scripted job does.
		return tab.Navigate(site.URL("index.html"))
	})
	if err != nil {
		t.Fatal(err)
	}
	// The next job finds the tab parked on about:blank; a written job
	// would take it home: what would it find there?
	var parked, got string
	err = p.Tab(ctx, func(tab *browser.Tab) error {
		if err := browser.Evaluate(tab.Page(), `() => location.href`, &parked); err != nil {
			return err
		}
		if err := tab.Navigate(egress.HomeURL); err != nil {
			return err
		}
		return browser.Evaluate(tab.Page(), `() => location.href + ' ' + localStorage.getItem('k')`, &got)
	})
	if err != nil {
		t.Fatal(err)
	}
	if parked != "about:blank" {
		t.Errorf("next job starts on %q, want about:blank", parked)
	}
	if got != egress.HomeURL+" null" {
		t.Errorf("home after the job holds %q, want no stored value", got)
	}
	if p.Fresh() != fresh {
		t.Errorf("the context was renewed (%d new): the test did not check cleaning", p.Fresh()-fresh)
	}
}

// A tab parked on about:blank after a scripted job goes home before it
// writes the next job's page: Open's document must be on the home origin.
func TestWrittenJobAfterScriptedJob(t *testing.T) {
	var log bytes.Buffer
	p, err := startPool(t, browser.Config{Tabs: 1}, &log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fresh := p.Fresh()
	for _, kind := range []string{"scripted", "written", "scripted", "scripted", "written", "written"} {
		var got string
		err := p.Tab(ctx, func(tab *browser.Tab) error {
			site, done := tab.Lane().(*egress.Lane).Serve(egress.Bundle{"index.html": []byte("<p>job</p>")}, kind == "written")
			defer done()
			if kind == "scripted" {
				if err := tab.Navigate(site.URL("index.html")); err != nil {
					return err
				}
				return browser.Evaluate(tab.Page(), `() => location.href`, &got)
			}
			return tab.Open(site.HomeURL("index.html"), "<p>written</p>", `() => location.href + ' ' + document.body.textContent`, &got)
		})
		if err != nil {
			t.Fatalf("%s job: %v", kind, err)
		}
		if kind == "written" && (!strings.HasPrefix(got, egress.HomeURL) || !strings.HasSuffix(got, " written")) {
			t.Errorf("written job saw %q, want its page on the home origin", got)
		}
	}
	if p.Fresh() != fresh {
		t.Errorf("%d contexts renewed, want the tab cleaned and reused", p.Fresh()-fresh)
	}
}

// A job that listens to its tab's events from its start hears none of the
// job before it, not even of one that flooded the console as it ended (the
// render report relies on it: package render). The pool's fence makes sure
// of it; so far, the cleaning's own round trips, answered after the flood
// on the same connection, would have been enough.
func TestFenceHandsOutNoPastEvents(t *testing.T) {
	var log bytes.Buffer
	p, err := startPool(t, browser.Config{Tabs: 1}, &log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	flood := `<p>flood</p><script>
addEventListener('load', () => { const s = 'x'.repeat(4000); for (let i = 0; i < 3000; i++) console.error('PAST ' + i + s) })
</script>`
	for round := range 2 {
		err := p.Tab(ctx, func(tab *browser.Tab) error {
			site, done := tab.Lane().(*egress.Lane).Serve(egress.Bundle{"index.html": []byte(flood)}, false)
			defer done()
			if err := tab.Navigate(site.URL("index.html")); err != nil {
				return err
			}
			return browser.Evaluate(tab.Page(), `() => new Promise(r => document.readyState === 'complete' ? r() : addEventListener('load', () => setTimeout(r)))`, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		var heard atomic.Int64
		var first atomic.Value
		err = p.Tab(ctx, func(tab *browser.Tab) error {
			lctx, stop := context.WithCancel(ctx)
			defer stop()
			wait := tab.Page().Context(lctx).EachEvent(func(e *proto.RuntimeConsoleAPICalled) {
				if heard.Add(1) == 1 && len(e.Args) > 0 {
					first.Store(e.Args[0].Value.String()[:min(20, len(e.Args[0].Value.String()))])
				}
			})
			go wait()
			time.Sleep(300 * time.Millisecond)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := heard.Load(); n != 0 {
			t.Fatalf("round %d: the next job heard %d console messages of the one before (first: %v)", round, n, first.Load())
		}
	}
}

// A tab whose job retired it (Tab.Retire) gets a fresh context after the
// job, even when the job stayed clean; the next job's tab is not retired.
func TestRetiredTabRenewed(t *testing.T) {
	var log bytes.Buffer
	p, err := startPool(t, browser.Config{Tabs: 1}, &log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var targets []proto.TargetTargetID
	for _, retire := range []bool{false, true, false, false} {
		fresh := p.Fresh()
		err := p.Tab(ctx, func(tab *browser.Tab) error {
			targets = append(targets, tab.Page().TargetID)
			if retire {
				tab.Retire()
			}
			return tab.Open(egress.HomeURL, "<p>job</p>", `() => document.body.textContent`, new(string))
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Settled(ctx); err != nil {
			t.Fatal(err)
		}
		if got := p.Fresh() - fresh; got != map[bool]int64{false: 0, true: 1}[retire] {
			t.Errorf("retire %v: %d contexts renewed", retire, got)
		}
	}
	if targets[0] != targets[1] || targets[1] == targets[2] || targets[2] != targets[3] {
		t.Errorf("tabs of the four jobs: %v, want the second's replaced after it", targets)
	}
}
