package render

import (
	"context"
	"fmt"
	"net/url"

	"github.com/go-rod/rod/lib/proto"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

// openURL loads a page fetched by URL (DESIGN §6) with the job's headers,
// cookies and user agent. The request goes out through the tab's egress
// lane like every other, so the rules of DESIGN §4.19 hold for it and its
// redirects; a page that cannot be loaded (refused, unreachable, not a
// page) is the client's to fix: an *InputError naming url.
func openURL(ctx context.Context, t *browser.Tab, site egress.Site, f *jobspb.PageURL) error {
	u, err := url.Parse(f.Url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return &InputError{Message: "url: must be an absolute http or https URL."}
	}
	o := browser.Overrides{Headers: f.ExtraHttpHeaders, UserAgent: f.UserAgent}
	for _, c := range f.Cookies {
		p := &proto.NetworkCookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path}
		if c.Domain == "" {
			p.URL = f.Url // the page's own host
		}
		if p.Path == "" {
			p.Path = "/"
		}
		o.Cookies = append(o.Cookies, p)
	}
	if len(o.Headers) > 0 || o.UserAgent != "" || len(o.Cookies) > 0 {
		if err := t.Override(o); err != nil {
			return fmt.Errorf("%w: %v", ErrPage, err)
		}
	}
	if err := t.Navigate(f.Url); err != nil {
		if ctx.Err() != nil {
			return err // the render's timeout, not the page's address
		}
		return &InputError{Message: fmt.Sprintf("url: the page at %s could not be loaded (%v).", f.Url, err)}
	}
	// A refused plain-http page (or redirect) still loads: the proxy's
	// refusal. The page the tab ended on tells.
	res, err := proto.RuntimeEvaluate{Expression: "location.href", ReturnByValue: true}.Call(t.Page())
	if err != nil {
		return fmt.Errorf("%w: location: %v", ErrPage, err)
	}
	if href := res.Result.Value.Str(); href != "" {
		if _, refused := site.RefusalOf(href); refused {
			return &InputError{Message: fmt.Sprintf("url: the page at %s is not reachable under the egress rules (a private, loopback or link-local address).", href)}
		}
	}
	return nil
}
