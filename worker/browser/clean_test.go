package browser_test

import (
	"bytes"
	"context"
	"testing"
	"time"

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
	var got string
	err = p.Tab(ctx, func(tab *browser.Tab) error {
		return browser.Evaluate(tab.Page(), `() => location.href + ' ' + localStorage.getItem('k')`, &got)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != egress.HomeURL+" null" {
		t.Errorf("next job on home sees %q, want the home page with no stored value", got)
	}
	if p.Fresh() != fresh {
		t.Errorf("the context was renewed (%d new): the test did not check cleaning", p.Fresh()-fresh)
	}
}
