package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// Tab is a warm tab lent to one job. It starts on the home page with
// scripts off; the job either writes a document without scripts into it
// (Open) or navigates to one that runs scripts (Navigate).
type Tab struct {
	p   *Pool
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

// Open writes html as the document at url, which must be on the home origin,
// then calls the JavaScript function fn with args as Evaluate does, in the
// same round trip. Scripts stay off: the document is what the page of a job
// without scripts becomes, and it replaces whatever the tab showed, as
// Page.setDocumentContent would. The print that follows waits for images
// and stylesheets still loading (TestStaticPageWaitsForItsResources holds it
// to that); a written document's own load event does not, as the tab's
// document completed loading once already.
func (t *Tab) Open(url, html, fn string, out any, args ...any) error {
	t.p.opened.Add(1)
	open := `async (url, html, ...args) => {
	history.replaceState(null, '', url);
	document.open();
	document.write(html);
	document.close();
	return (` + fn + `)(...args);
}`
	return Evaluate(t.Page(), open, out, append([]any{url, html}, args...)...)
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
