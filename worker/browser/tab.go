package browser

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// Tab is a warm tab lent to one job. It starts on the home page with
// scripts off; the job either writes a document without scripts into it
// (Open) or navigates to one that runs scripts (Navigate).
type Tab struct {
	s   *slot
	ctx context.Context
}

// Page is the tab's page, bound to the job's context.
func (t *Tab) Page() *rod.Page { return t.s.page.Context(t.ctx) }

// Navigate loads url with scripts on. The tab is cleaned after the job.
func (t *Tab) Navigate(url string) error {
	t.s.scripted = true
	page := t.Page()
	if err := (proto.EmulationSetScriptExecutionDisabled{Value: false}).Call(page); err != nil {
		return fmt.Errorf("scripts on: %w", err)
	}
	nav, err := proto.PageNavigate{URL: url}.Call(page)
	if err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return errors.New(nav.ErrorText)
	}
	return nil
}

// maxSettleRounds bounds Open's waiting for subresources that start others
// (a stylesheet's fonts and images, an @import): a few are plenty.
const maxSettleRounds = 16

// Open writes html as the document at url, which must be on the home origin,
// and waits until every resource it asked for has loaded. Scripts stay off:
// the document is what the page of a job without scripts becomes, and it
// replaces whatever the tab showed, as Page.setDocumentContent does.
//
// A written document's load event does not wait for its subresources (the
// tab's document already completed loading once), so Open watches the
// network instead: it makes the page compute its style and layout (which
// starts the fetches of CSS images and fonts), waits until no request is in
// flight, and repeats until a round starts no new request.
func (t *Tab) Open(url, html string) error {
	page := t.Page()
	net := t.s.net
	net.reset()
	if err := Evaluate(page, `(url) => history.replaceState(null, '', url)`, nil, url); err != nil {
		return fmt.Errorf("address: %w", err)
	}
	if err := (proto.PageSetDocumentContent{FrameID: page.FrameID, HTML: html}).Call(page); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	for range maxSettleRounds {
		started := net.startedCount()
		mark := "docrender-settled-" + rand.Text()
		if err := Evaluate(page, settleJS, nil, mark); err != nil {
			return fmt.Errorf("settle: %w", err)
		}
		if err := net.waitIdle(t.ctx, mark); err != nil {
			return err
		}
		if net.startedCount() == started {
			return nil
		}
	}
	return nil
}

// settleJS brings style and layout up to date (which requests CSS images
// and fonts), waits for the fonts, and writes mark to the console: the
// tracker sees it after every network event the page sent before it.
const settleJS = `async (mark) => {
	document.documentElement.getBoundingClientRect();
	await document.fonts.ready;
	console.debug(mark);
}`

// tracker follows a tab's requests from its network events.
type tracker struct {
	mu       sync.Mutex
	inflight map[proto.NetworkRequestID]struct{}
	started  int
	mark     string
	// changed is closed and replaced on every change.
	changed chan struct{}
}

// track starts following page's events until page's context ends.
func track(page *rod.Page) *tracker {
	t := &tracker{inflight: map[proto.NetworkRequestID]struct{}{}, changed: make(chan struct{})}
	wait := page.EachEvent(func(e *proto.NetworkRequestWillBeSent) {
		t.update(func() {
			if _, ok := t.inflight[e.RequestID]; !ok {
				t.started++
			}
			t.inflight[e.RequestID] = struct{}{}
		})
	}, func(e *proto.NetworkLoadingFinished) {
		t.update(func() { delete(t.inflight, e.RequestID) })
	}, func(e *proto.NetworkLoadingFailed) {
		t.update(func() { delete(t.inflight, e.RequestID) })
	}, func(e *proto.RuntimeConsoleAPICalled) {
		if len(e.Args) == 1 {
			if s := e.Args[0].Value.String(); strings.HasPrefix(s, "docrender-settled-") {
				t.update(func() { t.mark = s })
			}
		}
	})
	go wait()
	return t
}

func (t *tracker) update(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *tracker) reset() {
	t.update(func() { clear(t.inflight) })
}

func (t *tracker) startedCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started
}

// waitIdle waits until the tracker has seen mark and no request is in flight.
func (t *tracker) waitIdle(ctx context.Context, mark string) error {
	for {
		t.mu.Lock()
		done, changed := t.mark == mark && len(t.inflight) == 0, t.changed
		t.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

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
