package render

import (
	"bytes"
	"io"
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/docrender/docrender/worker/egress"
)

// withoutScripts tells whether the job's entry page can be printed with
// scripts off, written into a tab's home document (browser.Tab.Open), and
// returns its text when it can. That path costs the browser about half of a
// navigation (docs/benchmarks.md). A page is navigated to, with scripts on
// and an origin of its own, when its entry file
//   - is not UTF-8 HTML (the proxy serves .html as UTF-8; Open takes text);
//   - has a script, an event handler, a javascript: URL, a <noscript> (shown
//     when scripts are off), a frame, object, embed, media element, <base>
//     or meta refresh: anything that would run, load another document, or
//     render differently with scripts off;
//   - sets document state in its markup (<meta http-equiv> other than
//     Content-Type, such as a Content-Security-Policy; a referrer policy; a
//     titled stylesheet, which names the preferred set): the home document
//     keeps those across writes, measured;
//   - or, in it or in any stylesheet of the bundle, refers to an address of
//     its own host outside the bundle's folder ("/logo.png", or "../" above
//     the root): a navigated page reaches its bundle's root there, a
//     written one would leave its job's token prefix on the home origin;
//   - or has CSS that asks whether scripts run, or uses image-set() or src().
//
// Entry pages over maxWrittenHTML are navigated to as well: they travel in
// one CDP message when written, and their rendering dwarfs a navigation.
//
// A page this misjudges as static renders without its scripts or with a
// missing image, and no script runs on the home origin whatever the document
// says; what the check must not miss is the document state above.
func withoutScripts(b egress.Bundle, entry string) (string, bool) {
	if len(b[entry]) > maxWrittenHTML+3 {
		return "", false
	}
	return scriptFree(b, entry)
}

// scriptFree is withoutScripts whatever the page's size: a page too large
// to be written is still one without scripts (split.go cuts it).
func scriptFree(b egress.Bundle, entry string) (string, bool) {
	switch strings.ToLower(path.Ext(entry)) {
	case ".html", ".htm":
	default:
		return "", false
	}
	data := bytes.TrimPrefix(b[entry], []byte("\xef\xbb\xbf"))
	if len(data) > scriptFreeMax {
		return "", false
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "", false
	}
	if base, err := fileBase(entry); err != nil || !staticHTML(data, base) {
		return "", false
	}
	for name, file := range b {
		if !strings.EqualFold(path.Ext(name), ".css") {
			continue
		}
		if base, err := fileBase(name); err != nil || !staticCSS(string(file), base) {
			return "", false
		}
	}
	return string(data), true
}

// maxWrittenHTML bounds a page written into its tab; a larger one is
// navigated to. A variable for the tests of the navigated path only.
var maxWrittenHTML = 2 << 20

// scriptFreeMax bounds the page scriptFree reads through: the upload bound
// is the real one, this keeps the scan's cost known.
const scriptFreeMax = 256 << 20

// urlAttrs are the attributes whose values are addresses the page loads or
// links to.
var urlAttrs = map[string]bool{"src": true, "href": true, "xlink:href": true, "poster": true,
	"data": true, "background": true, "action": true, "formaction": true, "manifest": true,
	"ping": true, "cite": true, "longdesc": true, "lowsrc": true, "icon": true}

// dynamic are the elements that run something, load another document or
// render differently with scripts off.
var dynamic = map[atom.Atom]bool{atom.Script: true, atom.Noscript: true, atom.Iframe: true,
	atom.Frame: true, atom.Frameset: true, atom.Object: true, atom.Embed: true, atom.Applet: true,
	atom.Video: true, atom.Audio: true, atom.Base: true}

func staticHTML(data []byte, base *url.URL) bool {
	z := html.NewTokenizer(bytes.NewReader(data))
	inStyle := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return z.Err() == io.EOF
		case html.TextToken:
			if inStyle && !staticCSS(string(z.Text()), base) {
				return false
			}
		case html.EndTagToken:
			inStyle = false
		case html.StartTagToken, html.SelfClosingTagToken:
			raw, hasAttr := z.TagName()
			tag := atom.Lookup(raw)
			if dynamic[tag] || (tag == 0 && (strings.EqualFold(string(raw), "fencedframe") || strings.EqualFold(string(raw), "portal"))) {
				return false
			}
			inStyle = tag == atom.Style
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				key, val := strings.ToLower(string(k)), string(v)
				switch {
				case strings.HasPrefix(key, "on"):
					return false
				case strings.Contains(strings.ToLower(strings.Join(strings.Fields(val), "")), "javascript:"):
					return false
				case tag == atom.Meta && key == "http-equiv" && !strings.EqualFold(strings.TrimSpace(val), "content-type"):
					// Refresh navigates; a policy (CSP, origin trial, default
					// style) would outlive the written document, in the tab's
					// home document, and reach the next job.
					return false
				case tag == atom.Meta && key == "name" && strings.EqualFold(strings.TrimSpace(val), "referrer"):
					return false
				case (tag == atom.Link || tag == atom.Style) && key == "title":
					// The first titled stylesheet names the document's
					// preferred set, which outlives the written document too.
					return false
				case key == "style" && !staticCSS(val, base):
					return false
				case (key == "srcset" || key == "imagesrcset") && !srcsetInside(val, base):
					return false
				case urlAttrs[key] && !inside(val, base):
					return false
				}
			}
		}
	}
}

var (
	cssURL    = regexp.MustCompile(`(?i)url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))`)
	cssImport = regexp.MustCompile(`(?i)@import\s*(?:"([^"]*)"|'([^']*)')`)
	cssAsks   = regexp.MustCompile(`(?i)scripting|image-set\(|\bsrc\(`)
)

// staticCSS checks CSS of the file at base (a stylesheet, a <style> or a
// style attribute in it).
func staticCSS(css string, base *url.URL) bool {
	if cssAsks.MatchString(css) {
		return false
	}
	for _, re := range []*regexp.Regexp{cssURL, cssImport} {
		for _, m := range re.FindAllStringSubmatch(css, -1) {
			if !inside(strings.Join(m[1:], ""), base) {
				return false
			}
		}
	}
	return true
}

func srcsetInside(srcset string, base *url.URL) bool {
	for _, cand := range strings.Split(srcset, ",") {
		if f := strings.Fields(cand); len(f) > 0 && !inside(f[0], base) {
			return false
		}
	}
	return true
}

// insideBase stands for the job's token folder on the home origin.
var insideBase = &url.URL{Scheme: "http", Host: "home.invalid", Path: "/token/"}

// fileBase is the address of the bundle file name under insideBase.
func fileBase(name string) (*url.URL, error) {
	return insideBase.Parse(egress.EscapePath(name))
}

// inside reports whether ref, written in the bundle file at base, stays in
// the bundle's folder when it is on the page's own host. Other hosts and
// schemes are the egress proxy's business, not this check's.
func inside(ref string, base *url.URL) bool {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "#") {
		return true
	}
	u, err := base.Parse(ref)
	if err != nil {
		return false
	}
	if u.Host != insideBase.Host || (u.Scheme != "http" && u.Scheme != "https") {
		return true
	}
	return u.Scheme == "http" && strings.HasPrefix(u.Path, insideBase.Path)
}
