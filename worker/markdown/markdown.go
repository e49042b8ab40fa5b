// Package markdown turns a Markdown document into the HTML page that the
// render path prints (DESIGN §11, POST /pdf/markdown): GitHub's dialect
// (tables, task lists, strikethrough, autolinks, fenced code) through
// github.com/yuin/goldmark, a maintained CommonMark parser, inside the
// caller's template.html at its {{content}} or inside a plain page of our
// own.
//
// Raw HTML in the Markdown is kept, as GitHub keeps most of it: the page is
// printed by the same isolated tab, with the same egress rules, as any HTML
// a client sends to /pdf/generate, so it grants nothing HTML does not.
package markdown

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
)

// Placeholder marks where a template takes the document's HTML.
const Placeholder = "{{content}}"

// MaxBytes bounds the Markdown read: goldmark's work and its output grow
// with the input, and a request's upload bound is far larger than any
// document a person writes.
const MaxBytes = 8 << 20

// ErrNoPlaceholder is a template without Placeholder.
var ErrNoPlaceholder = errors.New("markdown: the template has no " + Placeholder)

// ErrTooLarge is Markdown past MaxBytes.
var ErrTooLarge = fmt.Errorf("markdown: over %d bytes", MaxBytes)

// Page is the HTML page of src: inside template at its first Placeholder
// when template is not nil, else in a page of ours whose title is the
// first heading. Headings get IDs (for links and the outline).
func Page(src, template []byte) ([]byte, error) {
	if len(src) > MaxBytes {
		return nil, ErrTooLarge
	}
	if template != nil && !bytes.Contains(template, []byte(Placeholder)) {
		return nil, ErrNoPlaceholder
	}
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID()),
		goldmark.WithRendererOptions(gmhtml.WithUnsafe()),
	)
	doc := md.Parser().Parse(text.NewReader(src))
	var body bytes.Buffer
	if err := md.Renderer().Render(&body, src, doc); err != nil {
		return nil, fmt.Errorf("markdown: %w", err)
	}
	if template != nil {
		// Only the first: a {{content}} inside the document's own text
		// (a Markdown file about templates) stays as it is.
		return bytes.Replace(template, []byte(Placeholder), body.Bytes(), 1), nil
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n<style>%s</style></head>\n<body class=\"markdown-body\">\n",
		html.EscapeString(title(doc, src)), stylesheet)
	out.Write(body.Bytes())
	out.WriteString("</body></html>\n")
	return out.Bytes(), nil
}

// title is the text of the document's first heading, "" without one.
func title(doc ast.Node, src []byte) string {
	var t string
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		t = strings.TrimSpace(string(plain(h, src)))
		return ast.WalkStop, nil
	})
	return t
}

// plain is n's text without its markup.
func plain(n ast.Node, src []byte) []byte {
	var b bytes.Buffer
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
			continue
		}
		b.Write(plain(c, src))
	}
	return b.Bytes()
}

// stylesheet is the page of ours: print-friendly, close to how GitHub
// shows Markdown, with the fonts the worker image has (Liberation, Noto).
const stylesheet = `
body{font:11pt/1.5 "Liberation Sans","Noto Sans",Arial,sans-serif;color:#1f2328;margin:0}
h1,h2{border-bottom:1px solid #d1d9e0;padding-bottom:.3em}
h1,h2,h3,h4,h5,h6{margin:1.2em 0 .5em;line-height:1.25;break-after:avoid}
code,pre{font-family:"Liberation Mono","Noto Sans Mono",monospace;font-size:.9em}
code{background:#eff1f3;border-radius:4px;padding:.1em .3em}
pre{background:#f6f8fa;border-radius:6px;padding:.8em 1em;white-space:pre-wrap;break-inside:avoid}
pre code{background:none;padding:0}
table{border-collapse:collapse;margin:.8em 0}
th,td{border:1px solid #d1d9e0;padding:.3em .7em}
th{background:#f6f8fa}
tr{break-inside:avoid}
blockquote{margin:0;padding:0 1em;color:#59636e;border-left:.25em solid #d1d9e0}
img{max-width:100%}
li:has(> input[type=checkbox]){list-style:none}
hr{border:0;border-top:1px solid #d1d9e0}
`
