package render

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
)

// WaitError is a wait of the job (DESIGN §6) that had not come true when
// the render's time ran out. Render returns it wrapped with ErrTimeout, so
// that the failure can say what the page never did.
type WaitError struct {
	// Wait names the wait as the client wrote it: `waitForSelector "#ready"`.
	Wait string
}

func (e *WaitError) Error() string { return "render: still waiting for " + e.Wait }

// Polling bounds: a wait checks at once, then ever less often, so a page
// that is ready soon prints soon and a long wait costs a few calls a second.
const (
	pollFirst = 25 * time.Millisecond
	pollMax   = 250 * time.Millisecond
)

// waitFor waits, in order, until the page has an element matching
// pr.WaitForSelector, until pr.WaitForExpression is truthy, then for
// pr.WaitDelayMs. Each wait ends with ctx, as a *WaitError naming it.
func waitFor(ctx context.Context, p *rod.Page, pr *jobspb.Print) error {
	if sel := pr.GetWaitForSelector(); sel != "" {
		if err := poll(ctx, waitName("waitForSelector", sel), func() (bool, error) { return selectorMatches(p, sel) }); err != nil {
			return err
		}
	}
	if expr := pr.GetWaitForExpression(); expr != "" {
		if err := compiles(p, expr); err != nil {
			return err
		}
		if err := poll(ctx, waitName("waitForExpression", expr), func() (bool, error) { return truthy(p, expr), nil }); err != nil {
			return err
		}
	}
	if d := time.Duration(pr.GetWaitDelayMs()) * time.Millisecond; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return &WaitError{Wait: fmt.Sprintf("waitDelay %s", d)}
		case <-t.C:
		}
	}
	return nil
}

// waitName is how a wait is named in a failure: its field and value, cut
// short (an expression may be 4 KiB).
func waitName(field, value string) string {
	const maxShown = 100
	if len(value) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(value[cut]) {
			cut--
		}
		value = value[:cut] + "..."
	}
	return fmt.Sprintf("%s %q", field, value)
}

// poll calls done until it reports true, fails, or ctx ends (a *WaitError
// named name).
func poll(ctx context.Context, name string, done func() (bool, error)) error {
	interval := pollFirst
	for {
		ok, err := done()
		if ctx.Err() != nil {
			return &WaitError{Wait: name}
		}
		if err != nil || ok {
			return err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return &WaitError{Wait: name}
		case <-t.C:
		}
		interval = min(2*interval, pollMax)
	}
}

// selectorJS tells whether an element matches the selector; an invalid
// selector is "invalid" rather than an exception, which could also be the
// page's navigation.
const selectorJS = `(sel) => {
	try {
		return document.querySelector(sel) !== null;
	} catch (e) {
		return e instanceof DOMException && e.name === 'SyntaxError' ? 'invalid' : false;
	}
}`

// selectorMatches reports whether sel matches an element of the page. A
// selector the browser cannot parse is an *InputError: it never will.
// Anything else that goes wrong (the page is navigating) is "not yet".
func selectorMatches(p *rod.Page, sel string) (bool, error) {
	var res any
	if err := browser.Evaluate(p, selectorJS, &res, sel); err != nil {
		return false, nil
	}
	if res == "invalid" {
		return false, &InputError{Message: fmt.Sprintf("waitForSelector %q is not a valid CSS selector.", sel)}
	}
	return res == true, nil
}

// expressionJS is what truthy evaluates: expr, awaited, as a boolean. The
// line breaks keep a trailing // comment of expr from eating the rest.
func expressionJS(expr string) string { return "(async () => !!(await (\n" + expr + "\n)))()" }

// compiles returns an *InputError when expr is not a JavaScript expression:
// it would never come true. Whether it compiles cannot be told from an
// exception when it runs (JSON.parse throws SyntaxError too).
func compiles(p *rod.Page, expr string) error {
	res, err := proto.RuntimeCompileScript{Expression: expressionJS(expr), SourceURL: "", PersistScript: false}.Call(p)
	if err != nil || res.ExceptionDetails == nil {
		return nil // the poll will tell
	}
	msg := res.ExceptionDetails.Text
	if ex := res.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
		msg, _, _ = strings.Cut(ex.Description, "\n")
	}
	return &InputError{Message: fmt.Sprintf("%s is not a JavaScript expression (%s).", waitName("waitForExpression", expr), msg)}
}

// truthy evaluates expr in the page, awaiting a promise, and reports
// whether the result is truthy. An expression that throws (or a page in
// the middle of navigating) is not truthy yet. expr is the client's own
// code on the client's own page: pages with it are never written into the
// shared home document (Render navigates to them).
func truthy(p *rod.Page, expr string) bool {
	res, err := proto.RuntimeEvaluate{
		Expression:   expressionJS(expr),
		AwaitPromise: true,
		// The page's own console sees no exception of ours.
		Silent:        true,
		ReturnByValue: true,
	}.Call(p)
	if err != nil || res.ExceptionDetails != nil {
		return false
	}
	return res.Result.Value.Bool()
}
