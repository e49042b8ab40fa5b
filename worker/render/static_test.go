package render

import (
	"strings"
	"testing"

	"github.com/docrender/docrender/worker/egress"
)

func TestWithoutScripts(t *testing.T) {
	tests := []struct {
		name   string
		entry  string
		files  map[string]string
		static bool
	}{
		{"plain invoice", "index.html", map[string]string{"index.html": `<!doctype html><meta charset="utf-8"><style>td{color:red}</style><table><tr><td>€1</td></tr></table>`}, true},
		{"relative assets", "index.html", map[string]string{"index.html": `<link rel="stylesheet" href="css/a.css"><img src="img/x.png" srcset="img/x2.png 2x, ./img/x3.png 3x"><div style="background:url('img/bg.png')"></div>`,
			"css/a.css": `@import "b.css"; body { background: url(../img/bg.png) } @font-face { font-family: F; src: url("../fonts/f.woff2") }`}, true},
		{"external assets", "index.html", map[string]string{"index.html": `<link rel="stylesheet" href="https://fonts.example/css"><img src="//cdn.example/x.png"><a href="https://example.com/">x</a>`}, true},
		{"data and fragment", "index.html", map[string]string{"index.html": `<img src="data:image/png;base64,AAAA"><a href="#top">top</a><svg><use href="#i"/></svg>`}, true},
		{"entry in a folder", "site/page.html", map[string]string{"site/page.html": `<img src="../site/x.png"><img src="x.png">`}, true},
		{"UTF-8 byte order mark", "index.html", map[string]string{"index.html": "\xef\xbb\xbf<p>x</p>"}, true},

		{"script", "index.html", map[string]string{"index.html": `<p>x</p><script>1</script>`}, false},
		{"script in svg", "index.html", map[string]string{"index.html": `<svg><script>1</script></svg>`}, false},
		{"event handler", "index.html", map[string]string{"index.html": `<img src="x.png" onerror="1">`}, false},
		{"javascript url", "index.html", map[string]string{"index.html": `<a href=" java	script:1">x</a>`}, false},
		{"noscript", "index.html", map[string]string{"index.html": `<noscript>enable scripts</noscript>`}, false},
		{"iframe", "index.html", map[string]string{"index.html": `<iframe src="part.html"></iframe>`}, false},
		{"object", "index.html", map[string]string{"index.html": `<object data="x.svg"></object>`}, false},
		{"video", "index.html", map[string]string{"index.html": `<video src="x.mp4"></video>`}, false},
		{"base", "index.html", map[string]string{"index.html": `<base href="https://example.com/"><img src="x.png">`}, false},
		{"meta refresh", "index.html", map[string]string{"index.html": `<meta http-equiv="Refresh" content="0; url=x.html">`}, false},
		{"meta content-type", "index.html", map[string]string{"index.html": `<meta http-equiv="Content-Type" content="text/html; charset=utf-8"><p>x</p>`}, true},
		{"content security policy", "index.html", map[string]string{"index.html": `<meta http-equiv="Content-Security-Policy" content="img-src 'none'">`}, false},
		{"titled stylesheet", "index.html", map[string]string{"index.html": `<link rel="stylesheet" title="one" href="a.css">`}, false},
		{"titled style element", "index.html", map[string]string{"index.html": `<style title="one">p{}</style>`}, false},
		{"referrer policy", "index.html", map[string]string{"index.html": `<meta name="referrer" content="unsafe-url">`}, false},
		{"root-absolute image", "index.html", map[string]string{"index.html": `<img src="/logo.png">`}, false},
		{"above the root", "index.html", map[string]string{"index.html": `<img src="../logo.png">`}, false},
		{"root-absolute in srcset", "index.html", map[string]string{"index.html": `<img src="a.png" srcset="a.png 1x, /b.png 2x">`}, false},
		{"root-absolute in style attribute", "index.html", map[string]string{"index.html": `<div style="background:url(/bg.png)"></div>`}, false},
		{"root-absolute in style element", "index.html", map[string]string{"index.html": `<style>@import '/x.css';</style>`}, false},
		{"root-absolute in a stylesheet", "index.html", map[string]string{"index.html": `<p>x</p>`, "a.css": `body { background: url( "/bg.png" ) }`}, false},
		{"stylesheet above the root", "index.html", map[string]string{"index.html": `<p>x</p>`, "css/a.css": `body { background: url(../../bg.png) }`}, false},
		{"scripting media query", "index.html", map[string]string{"index.html": `<style>@media (scripting: none) { p { color: red } }</style>`}, false},
		{"image-set", "index.html", map[string]string{"index.html": `<style>p { background: image-set("a.png" 1x) }</style>`}, false},
		{"not UTF-8", "index.html", map[string]string{"index.html": "<p>caf\xe9</p>"}, false},
		{"over 2 MiB", "index.html", map[string]string{"index.html": "<p>" + strings.Repeat("x", 2<<20) + "</p>"}, false},
		{"not HTML", "page.xhtml", map[string]string{"page.xhtml": `<html xmlns="http://www.w3.org/1999/xhtml"><p>x</p></html>`}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := egress.Bundle{}
			for name, data := range tc.files {
				b[name] = []byte(data)
			}
			html, static := withoutScripts(b, tc.entry)
			if static != tc.static {
				t.Fatalf("static = %v, want %v", static, tc.static)
			}
			if static && html == "" {
				t.Fatal("no HTML returned")
			}
		})
	}
}
