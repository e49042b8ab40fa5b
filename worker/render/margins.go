package render

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/go-rod/rod"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

// Chromium prints the header and footer templates (DESIGN §6) from a
// document of its own that loads nothing: no network, no file of the
// bundle, and it does not wait for what it would load. So every relative
// reference of a template is inlined from the bundle as a data: URL before
// printing, and every other reference is dropped (the template must not
// reach the network, even if Chromium someday lets it). Measured with
// Chromium 156: <img> and CSS images as data: URLs print; a web font as a
// data: URL prints only when the page has loaded the same URL before (it
// is then in the renderer's memory cache), hence margins.fonts and
// preloadFonts.

// maxInlined bounds what one template's inlined files add up to: every
// byte travels in the print command and is decoded for every page.
const maxInlined = 8 << 20

// maxImportDepth bounds stylesheets importing stylesheets.
const maxImportDepth = 8

// What Chromium's template document does not do as a page would, measured:
// its font size is too small to read (nothing printed), it prints no
// backgrounds, and the template is laid out as the items of a flex row at
// the paper's edge ("Page <span class=pageNumber>" printed as "Page2").
// So each template starts with these rules (its own come after them and
// win; header and footer share that document) and flows in a box that
// spans the row, indented as the page's content is.
const (
	marginFontSize   = `<style>html{font-size:10px}</style>`
	marginBackground = `<style>html{-webkit-print-color-adjust:exact;print-color-adjust:exact}</style>`
	// marginBox holds a template; %g are the page's left and right margins.
	marginBox = `<div style="flex:auto;min-width:0;box-sizing:border-box;padding:0 %gin 0 %gin">%s</div>`
	// blankTemplate replaces a missing one: an empty template would
	// print Chromium's own (the date and title, the URL and page numbers).
	blankTemplate = `<span></span>`
)

// margins are a job's header and footer templates, ready to print.
type margins struct {
	header, footer string
	// fonts are the data: URLs of the templates' web fonts, for
	// preloadFonts.
	fonts []string
}

// on reports whether the job prints a header or footer.
func (m margins) on() bool { return m.header != "" || m.footer != "" }

// marginTemplates returns the job's header and footer: Print's templates,
// or the bundle's header.html and footer.html when those are empty, with
// their references inlined (a template over maxInlined is an *InputError),
// for a page of pg's margins.
func marginTemplates(b egress.Bundle, pg *jobspb.Page, pr *jobspb.Print) (margins, error) {
	var m margins
	for _, t := range []struct {
		field, given, file string
		out                *string
	}{
		{"headerTemplate", pr.GetHeaderTemplate(), pdfopts.HeaderFile, &m.header},
		{"footerTemplate", pr.GetFooterTemplate(), pdfopts.FooterFile, &m.footer},
	} {
		src, field := t.given, t.field
		if src == "" {
			data, ok := b[t.file]
			if !ok {
				continue
			}
			src, field = string(data), fmt.Sprintf("%s (%s)", t.field, t.file)
		}
		if strings.TrimSpace(src) == "" {
			continue
		}
		in := &inliner{bundle: b, field: field}
		out, err := in.template(src)
		if err != nil {
			return margins{}, err
		}
		*t.out = out
		m.fonts = append(m.fonts, in.fonts...)
	}
	if !m.on() {
		return m, nil
	}
	defaults := marginFontSize
	if !pr.GetNoBackground() {
		defaults += marginBackground
	}
	for _, t := range []*string{&m.header, &m.footer} {
		if *t == "" {
			*t = blankTemplate
		}
		*t = defaults + fmt.Sprintf(marginBox, pg.GetMarginRightIn(), pg.GetMarginLeftIn(), *t)
	}
	return m, nil
}

// inliner rewrites one template.
type inliner struct {
	bundle egress.Bundle
	// field names the template in errors ("headerTemplate").
	field string
	// size is what has been inlined so far.
	size  int
	fonts []string
}

// template parses src as Chromium does (the innerHTML of an element of
// the body) and returns it rewritten.
func (in *inliner) template(src string) (string, error) {
	ctx := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(strings.NewReader(src), ctx)
	if err != nil {
		return "", &InputError{Message: fmt.Sprintf("%s is not HTML: %v", in.field, err)}
	}
	var out strings.Builder
	for _, n := range nodes {
		keep, err := in.node(n)
		if err != nil {
			return "", err
		}
		if !keep {
			continue
		}
		if err := html.Render(&out, n); err != nil {
			return "", fmt.Errorf("render: %s: %w", in.field, err)
		}
	}
	return out.String(), nil
}

// loaders are the elements that would load a document or run something:
// a template has no use for them, and they are dropped with their content.
var loaders = map[atom.Atom]bool{atom.Script: true, atom.Iframe: true, atom.Frame: true, atom.Frameset: true,
	atom.Object: true, atom.Embed: true, atom.Applet: true, atom.Base: true, atom.Meta: true,
	atom.Template: true}

// loadAttrs are the attributes whose value is an address the element loads.
// Links (a, area href) load nothing when printed and are kept.
var loadAttrs = map[string]bool{"src": true, "poster": true, "background": true, "data": true,
	"lowsrc": true, "xlink:href": true}

// dropAttrs load addresses too, but src or CSS covers what they are for.
var dropAttrs = map[string]bool{"srcset": true, "imagesrcset": true, "ping": true, "action": true,
	"formaction": true, "manifest": true, "longdesc": true, "cite": true, "icon": true}

// node rewrites n and its children in place; keep false: drop n.
func (in *inliner) node(n *html.Node) (keep bool, err error) {
	if n.Type != html.ElementNode {
		return true, in.children(n)
	}
	switch {
	case loaders[n.DataAtom] || strings.EqualFold(n.Data, "portal") || strings.EqualFold(n.Data, "fencedframe"):
		return false, nil
	case n.DataAtom == atom.Link:
		return in.link(n)
	case n.DataAtom == atom.Style:
		return true, in.style(n)
	}
	attrs := n.Attr[:0]
	for _, a := range n.Attr {
		key := strings.ToLower(a.Key)
		if a.Namespace == "xlink" && key == "href" {
			key = "xlink:href"
		}
		switch {
		case strings.HasPrefix(key, "on") || dropAttrs[key]:
			continue
		case key == "style":
			if a.Val, err = in.css(a.Val, "", 0); err != nil {
				return false, err
			}
		case loadAttrs[key] || (key == "href" && n.Namespace == "svg"):
			if a.Val, err = in.ref(a.Val, ""); err != nil {
				return false, err
			}
			if a.Val == "" {
				continue
			}
		case (key == "href" || key == "xlink:href") && strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:"):
			continue
		case strings.Contains(strings.ToLower(a.Val), "url("):
			// SVG presentation attributes (fill, filter, mask, clip-path)
			// take CSS url()s, and some may name another document.
			if a.Val, err = in.css(a.Val, "", 0); err != nil {
				return false, err
			}
		}
		attrs = append(attrs, a)
	}
	n.Attr = attrs
	return true, in.children(n)
}

// children rewrites n's children, dropping those node says to.
func (in *inliner) children(n *html.Node) error {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		keep, err := in.node(c)
		if err != nil {
			return err
		}
		if !keep {
			n.RemoveChild(c)
		}
		c = next
	}
	return nil
}

// link turns a stylesheet link into a <style> with the stylesheet inlined;
// any other link (preload, icon, preconnect) is dropped.
func (in *inliner) link(n *html.Node) (keep bool, err error) {
	var rel, href, media string
	for _, a := range n.Attr {
		switch strings.ToLower(a.Key) {
		case "rel":
			rel = strings.ToLower(a.Val)
		case "href":
			href = a.Val
		case "media":
			media = a.Val
		}
	}
	name, ok := in.local(href, "")
	if !ok || !slices.Contains(strings.Fields(rel), "stylesheet") {
		return false, nil
	}
	css, err := in.stylesheet(name, 0)
	if err != nil {
		return false, err
	}
	// The link becomes the <style>, in place.
	n.Data, n.DataAtom, n.Attr = "style", atom.Style, nil
	if media != "" {
		n.Attr = []html.Attribute{{Key: "media", Val: media}}
	}
	n.AppendChild(&html.Node{Type: html.TextNode, Data: css})
	in.collectFonts(n)
	return true, nil
}

// style inlines the references of a <style> element's text.
func (in *inliner) style(n *html.Node) error {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.TextNode {
			continue
		}
		css, err := in.css(c.Data, "", 0)
		if err != nil {
			return err
		}
		c.Data = css
	}
	in.collectFonts(n)
	return nil
}

// stylesheet returns the bundle's stylesheet name with its references
// inlined; its own references are relative to its folder.
func (in *inliner) stylesheet(name string, depth int) (string, error) {
	if depth >= maxImportDepth {
		return "", nil
	}
	data := in.bundle[name]
	if err := in.spend(len(data)); err != nil {
		return "", err
	}
	return in.css(string(data), path.Dir(name), depth+1)
}

var (
	// cssImportRule is an @import rule: its address, then what follows
	// (media queries, layer, supports) up to the semicolon.
	cssImportRule = regexp.MustCompile(`(?i)@import\s+(?:url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))\s*\)|"([^"]*)"|'([^']*)')([^;]*);?`)
	cssImageSet   = regexp.MustCompile(`(?i)(?:-webkit-)?image-set\(`)
	cssString     = regexp.MustCompile(`"([^"]*)"|'([^']*)'`)
	cssFontFace   = regexp.MustCompile(`(?i)@font-face\s*\{[^}]*\}`)
	cssDataURL    = regexp.MustCompile(`(?i)url\(\s*["']?(data:[^"')]*)`)
)

// css returns css (of a file in folder dir; "" is the bundle's root) with
// its imports replaced by the stylesheets they import and its url()s and
// image-set() strings inlined.
func (in *inliner) css(css, dir string, depth int) (string, error) {
	var err error
	css = cssImportRule.ReplaceAllStringFunc(css, func(rule string) string {
		if err != nil {
			return ""
		}
		m := cssImportRule.FindStringSubmatch(rule)
		name, ok := in.local(strings.Join(m[1:6], ""), dir)
		if !ok {
			return ""
		}
		var sheet string
		if sheet, err = in.stylesheet(name, depth); err != nil {
			return ""
		}
		if cond := strings.TrimSpace(m[6]); cond != "" && !strings.HasPrefix(strings.ToLower(cond), "layer") && !strings.HasPrefix(strings.ToLower(cond), "supports") {
			return "@media " + cond + "{" + sheet + "}"
		}
		return sheet
	})
	if err != nil {
		return "", err
	}
	css = cssURL.ReplaceAllStringFunc(css, func(u string) string {
		if err != nil {
			return ""
		}
		m := cssURL.FindStringSubmatch(u)
		var v string
		if v, err = in.ref(strings.Join(m[1:], ""), dir); v == "" {
			v = "data:,"
		}
		return `url("` + v + `"`
	})
	if err != nil {
		return "", err
	}
	return in.imageSets(css, dir)
}

// imageSets inlines the strings of image-set() arguments, which are
// addresses as url()s are.
func (in *inliner) imageSets(css, dir string) (string, error) {
	var out strings.Builder
	for {
		loc := cssImageSet.FindStringIndex(css)
		if loc == nil {
			out.WriteString(css)
			return out.String(), nil
		}
		end := closingParen(css, loc[1])
		out.WriteString(css[:loc[1]])
		var err error
		args := cssString.ReplaceAllStringFunc(css[loc[1]:end], func(s string) string {
			if err != nil {
				return ""
			}
			m := cssString.FindStringSubmatch(s)
			var v string
			if v, err = in.ref(m[1]+m[2], dir); v == "" {
				v = "data:,"
			}
			return `"` + v + `"`
		})
		if err != nil {
			return "", err
		}
		out.WriteString(args)
		css = css[end:]
	}
}

// closingParen is the index of the parenthesis closing the one opened just
// before css[from], or len(css).
func closingParen(css string, from int) int {
	depth := 1
	for i := from; i < len(css); i++ {
		switch css[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(css)
}

// collectFonts notes the data: URLs of the @font-face rules of a <style>.
func (in *inliner) collectFonts(style *html.Node) {
	for c := style.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.TextNode {
			continue
		}
		for _, face := range cssFontFace.FindAllString(c.Data, -1) {
			for _, m := range cssDataURL.FindAllStringSubmatch(face, -1) {
				in.fonts = append(in.fonts, m[1])
			}
		}
	}
}

// ref returns what a reference of the template (or of a stylesheet in
// folder dir) becomes: a bundle file as a data: URL, a data: URL or a
// fragment as it is, anything else "" (dropped).
func (in *inliner) ref(ref, dir string) (string, error) {
	ref = strings.TrimSpace(ref)
	lower := strings.ToLower(ref)
	if strings.HasPrefix(lower, "data:") || strings.HasPrefix(ref, "#") {
		return ref, nil
	}
	name, ok := in.local(ref, dir)
	if !ok {
		return "", nil
	}
	data := in.bundle[name]
	enc := base64.StdEncoding.EncodedLen(len(data))
	if err := in.spend(enc); err != nil {
		return "", err
	}
	v := "data:" + mediaType(name, data) + ";base64," + base64.StdEncoding.EncodeToString(data)
	if u, err := url.Parse(ref); err == nil && u.Fragment != "" {
		v += "#" + u.EscapedFragment() // an SVG's view or symbol
	}
	return v, nil
}

// local resolves a relative reference (written in folder dir of the
// bundle) to the name of a bundle file. Root-relative paths ("/logo.png")
// start at the bundle's root, as on a page with scripts; anything with a
// scheme or host, or outside the bundle, is not local.
func (in *inliner) local(ref, dir string) (string, bool) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", false
	}
	u, err := url.Parse(ref)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.Path == "" {
		return "", false
	}
	p := u.Path
	if !strings.HasPrefix(p, "/") {
		p = path.Join("/", dir, p)
	}
	name := strings.TrimPrefix(path.Clean(p), "/")
	_, ok := in.bundle[name]
	return name, ok
}

// spend counts n more inlined bytes against maxInlined.
func (in *inliner) spend(n int) error {
	in.size += n
	if in.size > maxInlined {
		return &InputError{Message: fmt.Sprintf("%s: the images, fonts and stylesheets it refers to come to more than %d MiB inlined; use smaller files.",
			in.field, maxInlined>>20)}
	}
	return nil
}

// assetTypes are the media types of the files a template usually refers
// to, by extension: the system's table may lack them (fonts), and an SVG
// must be image/svg+xml to show as an image.
var assetTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".gif": "image/gif", ".webp": "image/webp", ".avif": "image/avif", ".svg": "image/svg+xml",
	".bmp": "image/bmp", ".ico": "image/x-icon", ".woff": "font/woff", ".woff2": "font/woff2",
	".ttf": "font/ttf", ".otf": "font/otf", ".eot": "application/vnd.ms-fontobject", ".css": "text/css"}

// mediaType is the data: URL type of a bundle file: by its extension, or
// sniffed from its content.
func mediaType(name string, data []byte) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := assetTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return http.DetectContentType(data)
}

// preloadFonts loads each font URL into the page (without adding it to the
// page's fonts, so the page does not change) and keeps the faces until the
// returned function lets them go, after the print: Chromium's template
// document then finds them in the renderer's memory cache, loaded. A font
// that fails to load is left to the fallback, as on a page.
func preloadFonts(p *rod.Page, fonts []string) (release func(), err error) {
	if len(fonts) == 0 {
		return func() {}, nil
	}
	if err := browser.Evaluate(p, preloadFontsJS, nil, fonts); err != nil {
		return nil, fmt.Errorf("%w: header and footer fonts: %v", ErrPage, err)
	}
	// A written page's window outlives its document: the next job's
	// must not keep this one's fonts alive.
	return func() { _ = browser.Evaluate(p, releaseFontsJS, nil) }, nil
}

const (
	preloadFontsJS = `(urls) => {
	const faces = urls.map((u, i) => new FontFace('docrender-margin-font-' + i, 'url(' + JSON.stringify(u) + ')'));
	window[Symbol.for('docrender.marginFonts')] = faces;
	return Promise.all(faces.map(f => f.load().catch(() => null))).then(() => faces.length);
}`
	releaseFontsJS = `() => { delete window[Symbol.for('docrender.marginFonts')]; }`
)
