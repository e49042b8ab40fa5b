// Package tmpl is the template language of stored templates (DESIGN §9):
// Handlebars, through github.com/mailgun/raymond/v2, with the helpers
// formatNumber, formatCurrency, formatDate (by locale) and qr, and the
// built-in blocks #each, #if, #unless, #with (with {{else}}) and lookup.
//
// Data is hostile. Parse follows the HTML around every {{expression}} and
// refuses the places where no escaping is safe (inside <script> or <style>,
// in on* and style attributes, in unquoted attribute values, in tag and
// attribute names); every value is then escaped for where it lands: HTML
// text and quoted attribute values are HTML-escaped (& < > " ' ` =), and a
// value that can start a URL (href, src, action, srcset, ...) must also
// pass a URL filter (http, https, mailto, tel, relative, data:image/...;
// anything else becomes "about:invalid"). {{{raw}}}, {{&raw}}, partials and
// every helper but ours are refused at Parse with the line. Render is
// bounded: output size, #each iterations, and (no partials) no recursion.
//
// The gateway calls Parse when a template is uploaded; the worker calls
// Parse once per template version and Render once per document. A *Template
// is safe for concurrent Render calls.
package tmpl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mailgun/raymond/v2"
)

// Render bounds.
const (
	MaxOutputBytes = 20 << 20  // the filled HTML
	MaxIterations  = 1_000_000 // #each iterations over a whole render
)

// SyntaxError is a template refused by Parse (a 400 at upload).
type SyntaxError struct {
	Line    int    // 1-based line of the template
	Problem string // what is wrong, for a person
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("template line %d: %s", e.Line, e.Problem)
}

// RenderError is a failed render (a 422 RENDER_CHECK_FAILED).
type RenderError struct {
	Line    int    // template line, 0 when not known
	Path    string // data path like "items[3].price", "" when none
	Problem string
}

func (e *RenderError) Error() string {
	var b strings.Builder
	b.WriteString("template")
	if e.Line > 0 {
		fmt.Fprintf(&b, " line %d", e.Line)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, " (data %s)", e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	return b.String()
}

// Template is a parsed template.
type Template struct {
	// Lang is the literal lang of the template's <html lang="...">, "" when
	// none: the default locale of its renders.
	Lang string

	tpl   *raymond.Template
	sites map[string]*site
}

type siteKind uint8

const (
	siteValue  siteKind = iota // a {{value}}: stringify, filter, escape
	siteHelper                 // a helper call
	siteBlock                  // a block helper
)

// ctxKind is where a {{value}} lands.
type ctxKind uint8

const (
	ctxText ctxKind = iota + 1
	ctxAttr
	ctxURL
	ctxSrcset
)

// site is one place of the template that calls a helper.
type site struct {
	kind   siteKind
	ctx    ctxKind // for siteValue
	helper string  // for siteHelper and siteBlock
	line   int
	path   pathRef // the data path its first argument reads
	alias  string  // a block's |param|
	nargs  int     // for siteHelper: its number of arguments
}

// Parse checks and compiles a template's HTML. Errors are *SyntaxError.
func Parse(src string) (t *Template, err error) {
	if len(src) > MaxTemplateBytes {
		return nil, &SyntaxError{Line: 1, Problem: fmt.Sprintf("the template is larger than %d bytes", MaxTemplateBytes)}
	}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(syntaxErr)
			if !ok {
				panic(r)
			}
			t, err = nil, se.e
		}
	}()
	prog := parseTokens(src)
	t = &Template{sites: map[string]*site{}}
	a := &analyzer{src: src, t: t}
	lc := &langCapture{}
	a.program(prog, hctx{state: sText, lang: lc})
	t.Lang = strings.TrimSpace(lc.b.String())
	out := rewrite(src, a.edits)
	rt, perr := raymond.Parse(out)
	if perr != nil {
		return nil, &SyntaxError{Line: raymondLine(perr.Error()), Problem: firstLine(perr.Error())}
	}
	helpers := make(map[string]any, len(t.sites))
	for name, s := range t.sites {
		helpers[name] = s.fn()
	}
	rt.RegisterHelpers(helpers)
	t.tpl = rt
	return t, nil
}

// raymondLine reads N from "Parse error on line N:".
func raymondLine(msg string) int {
	var n int
	if _, err := fmt.Sscanf(msg, "Parse error on line %d:", &n); err == nil {
		return n
	}
	return 1
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// stateKey holds the render's state in raymond's private data frame; a
// template cannot name it (@ names have no spaces).
const stateKey = "docrender render"

// Render fills t with data. The locale is data["_locale"] (a BCP 47 tag),
// else t.Lang, else en-US. Errors are *RenderError.
func (t *Template) Render(data map[string]any) (out string, err error) {
	st := &renderState{}
	loc := t.Lang
	if v, ok := data["_locale"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return "", &RenderError{Path: "_locale", Problem: "must be a string like \"de-DE\""}
		}
		loc = s
		if st.loc, err = localeFor(s); err != nil {
			return "", &RenderError{Path: "_locale", Problem: err.Error()}
		}
	} else {
		st.loc, err = localeFor(loc)
		if err != nil {
			st.loc, _ = localeFor("en-US")
		}
	}
	frame := raymond.NewDataFrame()
	frame.Set(stateKey, st)
	defer func() {
		if r := recover(); r != nil {
			if re, ok := r.(*RenderError); ok {
				out, err = "", re
				return
			}
			out, err = "", &RenderError{Line: st.line, Problem: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	if data == nil {
		data = map[string]any{}
	}
	out, err = t.tpl.ExecWith(data, frame)
	if err != nil {
		var re *RenderError
		if errors.As(err, &re) {
			return "", re
		}
		return "", &RenderError{Line: st.line, Problem: firstLine(strings.TrimPrefix(err.Error(), "Evaluation error: "))}
	}
	if len(out) > MaxOutputBytes {
		return "", &RenderError{Problem: fmt.Sprintf("the filled template is larger than %d bytes", MaxOutputBytes)}
	}
	return out, nil
}
