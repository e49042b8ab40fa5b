package tmpl

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mailgun/raymond/v2/lexer"
)

// The template is read twice: once here, by a parser of our own over
// raymond's tokens (it drains the lexer, so a refused template leaves no
// goroutine behind — raymond's parser abandons its lexer goroutine on a
// syntax error), and once by raymond's parser over the rewritten source,
// which this parser has already found well-formed.
//
// The rewrite (same lines, same content) replaces every {{expression}} by a
// call of a per-site helper that knows its line, its data path and where
// the value lands (so it escapes or filters for that place), and renames
// every helper call to a per-site helper, so that the helpers raymond
// registers globally (log, equal, ifGt, ...) are never reachable.

// Bounds of a template's source.
const (
	MaxTemplateBytes = 10 << 20 // the entry HTML
	maxNesting       = 100      // blocks and subexpressions inside each other
)

type tokKind = lexer.TokenKind

type expr struct {
	line   int
	head   *param // path or literal
	params []*param
}

type param struct {
	kind tokKind // lexer.TokenID (a path), TokenString, TokenNumber, TokenBoolean; 0 for a subexpression
	text string  // the path as written ("a.b", "../x", "@index") or the literal's value
	path pathRef // for paths
	sub  *expr   // for subexpressions
	line int
}

// pathRef is a path as the error messages name it.
type pathRef struct {
	parts  []string // without "this", "." and ".."
	depth  int      // number of "../"
	data   bool     // @...
	simple bool     // one plain identifier: could name a helper
}

type stmtKind uint8

const (
	stContent stmtKind = iota
	stMustache
	stBlock
)

type stmt struct {
	kind        stmtKind
	line        int
	start, end  int // source span of the tag (mustache, or block's opening tag)
	text        string
	e           *expr
	blockParams []string
	prog        []*stmt
	inverse     []*stmt // after {{else}} / {{^}}
	chain       *stmt   // an {{else if ...}} block in place of inverse
	elseLine    int
	closeStart  int // span of {{/name}}; -1 for a chained block
	closeEnd    int
	closeLine   int
}

type tparser struct {
	src  string
	toks []lexer.Token
	i    int
	nest int
}

// syntaxErr stops the parse (recovered in Parse).
type syntaxErr struct{ e *SyntaxError }

func (p *tparser) fail(line int, format string, args ...any) {
	panic(syntaxErr{&SyntaxError{Line: line, Problem: fmt.Sprintf(format, args...)}})
}

func (p *tparser) peek() *lexer.Token { return &p.toks[p.i] }

func (p *tparser) next() *lexer.Token {
	t := &p.toks[p.i]
	if t.Kind == lexer.TokenError {
		p.fail(t.Line, "%s", lexerProblem(t.Val))
	}
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func lexerProblem(v string) string {
	switch v {
	case "Unclosed expression":
		return "a {{ is not closed by }}"
	case "Unclosed comment":
		return "a {{! comment is not closed"
	case "Unterminated string":
		return "a string is not closed on its line"
	}
	return strings.ToLower(v[:1]) + v[1:]
}

// tokEnd is the byte offset just after a delimiter token.
func tokEnd(t *lexer.Token) int { return t.Pos + len(t.Val) }

func parseTokens(src string) []*stmt {
	l := lexer.Scan(src)
	var toks []lexer.Token
	for {
		t := l.NextToken()
		toks = append(toks, t)
		if t.Kind == lexer.TokenEOF || t.Kind == lexer.TokenError {
			break
		}
	}
	p := &tparser{src: src, toks: toks}
	prog := p.program()
	if t := p.peek(); t.Kind != lexer.TokenEOF {
		switch t.Kind {
		case lexer.TokenInverse, lexer.TokenOpenInverseChain:
			p.fail(t.Line, "{{else}} outside a block")
		case lexer.TokenOpenEndBlock:
			p.fail(t.Line, "a closing {{/...}} without its opening block")
		}
		p.next()
		p.fail(t.Line, "unexpected %q", t.Val)
	}
	return prog
}

// program reads statements until a token that ends a block's program.
func (p *tparser) program() []*stmt {
	var out []*stmt
	for {
		t := p.peek()
		switch t.Kind {
		case lexer.TokenEOF, lexer.TokenInverse, lexer.TokenOpenInverseChain, lexer.TokenOpenEndBlock:
			return out
		case lexer.TokenError:
			p.next()
		case lexer.TokenContent:
			p.next()
			out = append(out, &stmt{kind: stContent, line: t.Line, text: t.Val, start: t.Pos})
		case lexer.TokenComment:
			p.next()
		case lexer.TokenOpenUnescaped:
			p.fail(t.Line, "{{{...}}} (unescaped HTML) is not allowed: HTML from data is never trusted; use {{...}}")
		case lexer.TokenOpenRawBlock, lexer.TokenOpenEndRawBlock:
			p.fail(t.Line, "raw blocks {{{{...}}}} are not supported")
		case lexer.TokenOpenPartial:
			p.fail(t.Line, "partials {{> ...}} are not supported")
		case lexer.TokenOpenInverse:
			p.fail(t.Line, "inverted sections {{^...}} are not supported; use {{#unless ...}}")
		case lexer.TokenOpen:
			out = append(out, p.mustache())
		case lexer.TokenOpenBlock:
			out = append(out, p.block())
		default:
			p.next()
			p.fail(t.Line, "unexpected %q", t.Val)
		}
	}
}

func (p *tparser) checkStrip(t *lexer.Token) {
	if strings.Contains(t.Val, "~") {
		p.fail(t.Line, "whitespace control (~) is not supported")
	}
}

func (p *tparser) close(what string) *lexer.Token {
	t := p.next()
	if t.Kind != lexer.TokenClose {
		if t.Kind == lexer.TokenCloseUnescaped {
			p.fail(t.Line, "}}} closes a {{ opened with two braces")
		}
		p.fail(t.Line, "%s is not closed by }} (found %q)", what, t.Val)
	}
	p.checkStrip(t)
	return t
}

func (p *tparser) mustache() *stmt {
	open := p.next()
	p.checkStrip(open)
	if strings.Contains(open.Val, "&") {
		p.fail(open.Line, "{{&...}} (unescaped HTML) is not allowed: HTML from data is never trusted; use {{...}}")
	}
	e := p.expr(open.Line, "{{")
	cl := p.close("{{" + e.head.text)
	return &stmt{kind: stMustache, line: open.Line, start: open.Pos, end: tokEnd(cl), e: e}
}

func (p *tparser) block() *stmt {
	open := p.next()
	p.checkStrip(open)
	s := &stmt{kind: stBlock, line: open.Line, start: open.Pos}
	p.openRest(s, open)
	p.nest++
	if p.nest > maxNesting {
		p.fail(open.Line, "blocks nested more than %d deep", maxNesting)
	}
	p.blockBody(s)
	t := p.next()
	if t.Kind != lexer.TokenOpenEndBlock {
		p.fail(open.Line, "{{#%s}} is not closed by {{/%s}}", s.e.head.text, s.e.head.text)
	}
	p.checkStrip(t)
	name := p.next()
	if name.Kind != lexer.TokenID || name.Val != s.e.head.text {
		p.fail(name.Line, "{{/%s}} does not close {{#%s}} (line %d)", name.Val, s.e.head.text, s.line)
	}
	cl := p.close("{{/" + name.Val)
	s.closeStart, s.closeEnd, s.closeLine = t.Pos, tokEnd(cl), t.Line
	p.nest--
	return s
}

// openRest reads a block's expression, block params and }} after its opening token.
func (p *tparser) openRest(s *stmt, open *lexer.Token) {
	s.e = p.expr(open.Line, "{{#")
	if p.peek().Kind == lexer.TokenOpenBlockParams {
		p.next()
		for p.peek().Kind == lexer.TokenID {
			s.blockParams = append(s.blockParams, p.next().Val)
		}
		if t := p.next(); t.Kind != lexer.TokenCloseBlockParams || len(s.blockParams) == 0 {
			p.fail(t.Line, "block parameters are written as |name|")
		}
	}
	cl := p.close("{{#" + s.e.head.text)
	s.end = tokEnd(cl)
}

// blockBody reads a block's program and its {{else}} part or chain.
func (p *tparser) blockBody(s *stmt) {
	s.prog = p.program()
	t := p.peek()
	switch t.Kind {
	case lexer.TokenInverse:
		p.next()
		p.checkStrip(t)
		s.elseLine = t.Line
		s.inverse = p.program()
		if k := p.peek().Kind; k == lexer.TokenInverse || k == lexer.TokenOpenInverseChain {
			p.fail(p.peek().Line, "a second {{else}} in one block")
		}
	case lexer.TokenOpenInverseChain:
		p.next()
		p.checkStrip(t)
		c := &stmt{kind: stBlock, line: t.Line, start: t.Pos, closeStart: -1}
		p.openRest(c, t)
		p.blockBody(c)
		s.elseLine = t.Line
		s.chain = c
	}
}

// expr reads helperName param* up to (not including) the closing token.
func (p *tparser) expr(line int, opener string) *expr {
	e := &expr{line: line}
	t := p.peek()
	if !isParamStart(t.Kind) || t.Kind == lexer.TokenOpenSexpr {
		p.next()
		p.fail(t.Line, "%s must be followed by a name, a path or a literal", opener)
	}
	e.head = p.param()
	if e.head.kind == 0 {
		p.fail(t.Line, "a subexpression cannot be called")
	}
	for {
		t := p.peek()
		if t.Kind == lexer.TokenID && p.i+1 < len(p.toks) && p.toks[p.i+1].Kind == lexer.TokenEquals {
			p.fail(t.Line, "hash arguments (%s=...) are not supported", t.Val)
		}
		if !isParamStart(t.Kind) {
			return e
		}
		e.params = append(e.params, p.param())
	}
}

func isParamStart(k tokKind) bool {
	switch k {
	case lexer.TokenID, lexer.TokenData, lexer.TokenString, lexer.TokenNumber, lexer.TokenBoolean, lexer.TokenOpenSexpr:
		return true
	}
	return false
}

func (p *tparser) param() *param {
	t := p.next()
	switch t.Kind {
	case lexer.TokenString:
		if strings.Contains(t.Val, `"`) && strings.Contains(t.Val, `'`) || strings.Contains(t.Val, `\`) {
			p.fail(t.Line, "a string may not hold both kinds of quotes or a backslash")
		}
		return &param{kind: lexer.TokenString, text: t.Val, line: t.Line}
	case lexer.TokenNumber:
		if _, err := strconv.ParseFloat(t.Val, 64); err != nil {
			p.fail(t.Line, "bad number %q", t.Val)
		}
		return &param{kind: lexer.TokenNumber, text: t.Val, line: t.Line}
	case lexer.TokenBoolean:
		return &param{kind: lexer.TokenBoolean, text: t.Val, line: t.Line}
	case lexer.TokenOpenSexpr:
		p.nest++
		if p.nest > maxNesting {
			p.fail(t.Line, "subexpressions nested more than %d deep", maxNesting)
		}
		e := p.expr(t.Line, "(")
		if c := p.next(); c.Kind != lexer.TokenCloseSexpr {
			p.fail(c.Line, "a subexpression ( is not closed by )")
		}
		p.nest--
		return &param{sub: e, line: t.Line}
	case lexer.TokenData, lexer.TokenID:
		return p.path(t)
	}
	p.fail(t.Line, "unexpected %q", t.Val)
	return nil
}

func (p *tparser) path(first *lexer.Token) *param {
	pr := &param{kind: lexer.TokenID, line: first.Line}
	var b strings.Builder
	t := first
	if t.Kind == lexer.TokenData {
		pr.path.data = true
		b.WriteString("@")
		t = p.next()
		if t.Kind != lexer.TokenID {
			p.fail(t.Line, "@ must be followed by a name")
		}
	}
	n := 0
	for {
		switch t.Val {
		case "..":
			if len(pr.path.parts) > 0 {
				p.fail(t.Line, "invalid path %s..", b.String())
			}
			pr.path.depth++
		case ".", "this":
			if len(pr.path.parts) > 0 {
				p.fail(t.Line, "invalid path %s%s", b.String(), t.Val)
			}
		default:
			if strings.ContainsAny(t.Val, "\"'\\") {
				p.fail(t.Line, "a path segment may not hold quotes or a backslash")
			}
			pr.path.parts = append(pr.path.parts, strings.TrimSuffix(strings.TrimPrefix(t.Val, "["), "]"))
		}
		b.WriteString(t.Val)
		n++
		if p.peek().Kind != lexer.TokenSep {
			break
		}
		sep := p.next()
		b.WriteString(sep.Val)
		t = p.next()
		if t.Kind != lexer.TokenID {
			p.fail(t.Line, "a path may not end with %q", sep.Val)
		}
	}
	pr.text = b.String()
	pr.path.simple = n == 1 && !pr.path.data && pr.path.depth == 0 && len(pr.path.parts) == 1 && pr.text == pr.path.parts[0]
	return pr
}

// ---- analysis and rewrite ----

// Helpers a template may call, with their number of arguments.
var helperArity = map[string][2]int{
	"formatNumber":   {1, 2},
	"formatCurrency": {2, 2},
	"formatDate":     {2, 2},
	"qr":             {1, 1},
	"lookup":         {2, 2},
}

var blockHelpers = map[string]bool{"each": true, "if": true, "unless": true, "with": true}

type edit struct {
	start, end int
	text       string
}

type analyzer struct {
	src   string
	t     *Template
	edits []edit
	n     int
}

func (a *analyzer) fail(line int, format string, args ...any) {
	panic(syntaxErr{&SyntaxError{Line: line, Problem: fmt.Sprintf(format, args...)}})
}

// lineAt is the line of byte offset off inside a content statement.
func lineAt(s *stmt, off int) int { return s.line + strings.Count(s.text[:off], "\n") }

// program walks statements from context c and returns the context after them.
func (a *analyzer) program(prog []*stmt, c hctx) hctx {
	for _, s := range prog {
		switch s.kind {
		case stContent:
			glued := c.glue
			if bad, problem := c.feed(s.text); problem != "" {
				a.fail(lineAt(s, bad), "%s", problem)
			} else if bad >= 0 {
				if glued && bad == 0 {
					a.fail(lineAt(s, bad), "an attribute name must end where a block ends (add a space after {{/...}})")
				}
				a.fail(lineAt(s, bad), "a URL's scheme would be made from data: a ':' follows a {{value}} at the start of %s=\"...\"", c.attrOr())
			}
		case stMustache:
			c = a.mustache(s, c)
		case stBlock:
			c = a.block(s, c)
		}
	}
	return c
}

func (c *hctx) attrOr() string {
	if c.attr == "" {
		return "an attribute"
	}
	return c.attr
}

func (a *analyzer) site(prefix string) string {
	a.n++
	return prefix + strconv.Itoa(a.n)
}

// where says where a value lands, or fails.
func (a *analyzer) where(c *hctx, line int, what string) ctxKind {
	problem := ""
	if c.fsName != "" {
		a.fail(line, "%s is not allowed inside <%s> (in <svg> or <math>)", what, c.fsName)
	}
	switch c.state {
	case sText:
		return ctxText
	case sLt, sLtSlash, sTagName:
		problem = "in a tag name"
	case sTag, sAttrName, sAfterName:
		problem = "in an attribute name (write name=\"{{...}}\")"
	case sBeforeValue, sValueUnq:
		problem = "in an unquoted attribute value (quote it: " + c.attrOr() + "=\"...\")"
	case sValueDQ, sValueSQ:
		if c.entity {
			problem = "right after an unfinished character reference (&...)"
			break
		}
		switch kindOf(c.elem, c.attr) {
		case attrBanned:
			switch {
			case strings.HasPrefix(c.attr, "on"):
				problem = "in the event handler attribute " + c.attr
			case c.attr == "style":
				problem = "in a style attribute"
			case c.attr == "srcdoc":
				problem = "in a srcdoc attribute"
			default:
				problem = "in an attribute of the SVG animation element <" + c.elem + ">"
			}
		case attrURL:
			if c.badURL {
				problem = "in a URL whose scheme is not http, https, mailto or tel (" + c.attr + "=\"javascript:...\")"
				break
			}
			if c.urlFix {
				return ctxAttr
			}
			c.urlDyn = true
			return ctxURL
		case attrSrcset:
			c.urlDyn = c.urlDyn || !c.urlFix
			return ctxSrcset
		default:
			return ctxAttr
		}
	case sRaw:
		switch {
		case c.raw == "script" || c.raw == "style":
			problem = "inside <" + c.raw + ">"
		case opaqueElems[c.raw]:
			problem = "inside <" + c.raw + "> (browsers read its content as text or as markup, or do not show it)"
		case c.rawPart > 0:
			problem = "inside what may be the end tag </" + c.raw + ">"
		case c.rawLt:
			problem = "inside <" + c.raw + "> after a '<' (inside <svg> or <math> this is markup, not text: write &lt;)"
		default:
			return ctxText
		}
	case sComment:
		problem = "inside an HTML comment <!-- --> (use {{!-- --}} for template comments)"
	case sBogus:
		problem = "inside <!...> or <?...>"
	case sCDATA:
		problem = "inside <![CDATA[ ... ]]>"
	}
	a.fail(line, "%s is not allowed %s", what, problem)
	return 0
}

// blockAt checks that a block tag may stand at c (it outputs only the
// template's own text) and settles the context.
func (a *analyzer) blockAt(c hctx, line int, tag string, end bool) hctx {
	switch c.state {
	case sText:
		return c
	case sTag:
		if !c.glue {
			return c
		}
	case sAfterName:
		if !c.glue {
			c.state = sTag
			return c
		}
	case sAttrName:
		if end {
			// <input {{#if on}}checked{{/if}}>: the name ends with the block.
			c.attr, c.name, c.state, c.glue = c.name, "", sTag, true
			return c
		}
	case sValueDQ, sValueSQ:
		if !c.entity {
			return c
		}
	case sRaw:
		if c.rawPart == 0 {
			return c
		}
	}
	a.where(&c, line, tag)
	a.fail(line, "%s is not allowed here", tag)
	return c
}

func (a *analyzer) mustache(s *stmt, c hctx) hctx {
	e := s.e
	var inner string
	if len(e.params) == 0 && !(e.head.kind == lexer.TokenID && e.head.path.simple && helperArity[e.head.text] != [2]int{}) {
		if e.head.kind == lexer.TokenID && e.head.path.simple && blockHelpers[e.head.text] {
			a.fail(s.line, "%s is a block helper: write {{#%s ...}}...{{/%s}}", e.head.text, e.head.text, e.head.text)
		}
		inner = a.param(e.head)
	} else {
		inner = "(" + a.call(e) + ")"
	}
	if c.inLang() {
		c.lang.done = true
		c.lang.b.Reset() // the language comes from data: no default from the template
	}
	k := a.where(&c, s.line, "{{"+e.head.text+"}}")
	name := a.site("__drv")
	a.t.sites[name] = &site{kind: siteValue, ctx: k, line: s.line, path: pathOf(e)}
	a.edits = append(a.edits, edit{s.start, s.end, "{{" + name + " " + inner + nl(a.src[s.start:s.end]) + "}}"})
	return c
}

// pathOf is the data path a site reads, for errors: its first path argument.
func pathOf(e *expr) pathRef {
	if len(e.params) == 0 {
		if e.head.kind == lexer.TokenID {
			return e.head.path
		}
		return pathRef{}
	}
	for _, p := range e.params {
		if p.kind == lexer.TokenID {
			return p.path
		}
		if p.sub != nil {
			return pathOf(p.sub)
		}
	}
	return pathRef{}
}

// call checks a helper call and returns its rewritten text (without parentheses).
func (a *analyzer) call(e *expr) string {
	h := e.head
	if h.kind != lexer.TokenID || !h.path.simple {
		a.fail(e.line, "%s is not a helper: only formatNumber, formatCurrency, formatDate, qr and lookup take arguments", h.text)
	}
	ar, ok := helperArity[h.text]
	if !ok {
		if blockHelpers[h.text] {
			a.fail(e.line, "%s is a block helper: write {{#%s ...}}...{{/%s}}", h.text, h.text, h.text)
		}
		a.fail(e.line, "unknown helper %q (the helpers are formatNumber, formatCurrency, formatDate, qr, lookup, and the blocks #each, #if, #unless, #with)", h.text)
	}
	if len(e.params) < ar[0] || len(e.params) > ar[1] {
		want := strconv.Itoa(ar[0])
		if ar[1] != ar[0] {
			want += " or " + strconv.Itoa(ar[1])
		}
		a.fail(e.line, "%s takes %s arguments, not %d", h.text, want, len(e.params))
	}
	a.checkLiterals(e)
	name := a.site("__drh")
	a.t.sites[name] = &site{kind: siteHelper, helper: h.text, line: e.line, path: pathOf(e), nargs: len(e.params)}
	return name + a.args(e.params)
}

func (a *analyzer) args(ps []*param) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteByte(' ')
		b.WriteString(a.param(p))
	}
	return b.String()
}

func (a *analyzer) param(p *param) string {
	switch p.kind {
	case lexer.TokenString:
		if strings.Contains(p.text, `"`) {
			return "'" + p.text + "'"
		}
		return `"` + p.text + `"`
	case lexer.TokenID:
		return p.text
	case 0:
		return "(" + a.call(p.sub) + ")"
	}
	return p.text
}

// checkLiterals refuses, at upload, literal arguments that can never work.
func (a *analyzer) checkLiterals(e *expr) {
	switch e.head.text {
	case "formatNumber":
		if len(e.params) == 2 && e.params[1].kind != lexer.TokenID && e.params[1].kind != 0 {
			if _, err := decimalsOf(literalValue(e.params[1])); err != nil {
				a.fail(e.line, "formatNumber: %s", err)
			}
		}
	case "formatCurrency":
		if p := e.params[1]; p.kind == lexer.TokenString {
			if _, err := currencyOf(p.text); err != nil {
				a.fail(e.line, "formatCurrency: %s", err)
			}
		} else if p.kind != lexer.TokenID && p.kind != 0 {
			a.fail(e.line, "formatCurrency: the currency is an ISO 4217 code like \"EUR\"")
		}
	case "formatDate":
		if p := e.params[1]; p.kind != lexer.TokenString && p.kind != lexer.TokenID && p.kind != 0 {
			a.fail(e.line, "formatDate: the layout is a string like \"2 January 2006\"")
		}
	}
}

func literalValue(p *param) any {
	switch p.kind {
	case lexer.TokenNumber:
		if i, err := strconv.Atoi(p.text); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(p.text, 64)
		return f
	case lexer.TokenBoolean:
		return p.text == "true"
	}
	return p.text
}

func (a *analyzer) block(s *stmt, c hctx) hctx {
	e := s.e
	h := e.head
	c = a.blockAt(c, s.line, "{{#"+h.text+"}}", false)
	if h.kind != lexer.TokenID || !h.path.simple || !blockHelpers[h.text] {
		if helperArity[h.text] != [2]int{} {
			a.fail(s.line, "%s is not a block helper: write {{%s ...}}", h.text, h.text)
		}
		a.fail(s.line, "unknown block helper #%s (the blocks are #each, #if, #unless, #with)", h.text)
	}
	if len(e.params) != 1 {
		a.fail(s.line, "#%s takes 1 argument, not %d", h.text, len(e.params))
	}
	if len(s.blockParams) > 0 && (h.text == "if" || h.text == "unless") {
		a.fail(s.line, "#%s takes no block parameters", h.text)
	}
	if len(s.blockParams) > 1 {
		a.fail(s.line, "one block parameter at most (as |item|); use @index or @key for the position")
	}
	name := a.site("__drb")
	a.t.sites[name] = &site{kind: siteBlock, helper: h.text, line: s.line, path: pathOf(e), alias: strings.Join(s.blockParams, "")}
	open := "{{#"
	if s.closeStart < 0 {
		open = "{{else "
	}
	bp := ""
	if len(s.blockParams) > 0 {
		bp = " as |" + s.blockParams[0] + "|"
	}
	a.edits = append(a.edits, edit{s.start, s.end, open + name + a.args(e.params) + bp + nl(a.src[s.start:s.end]) + "}}"})
	if s.closeStart >= 0 {
		a.edits = append(a.edits, edit{s.closeStart, s.closeEnd, "{{/" + name + "}}"})
	}

	tag := "{{#" + h.text + "}}"
	var fn hctx
	if h.text == "each" {
		// The body runs any number of times: it must end where it started
		// (a URL's part may only go back to "undecided").
		c = c.norm()
		fn = a.program(s.prog, c)
		if j, ok := join(c, fn); ok && j != c {
			fn = a.program(s.prog, j)
			c = j
		}
	} else {
		fn = a.program(s.prog, c)
	}
	fn = a.blockAt(fn, s.closeLine, "the end of "+tag, true)
	inv := c
	switch {
	case s.chain != nil:
		inv = a.block(s.chain, c)
	case s.inverse != nil:
		inv = a.program(s.inverse, c)
		inv = a.blockAt(inv, s.closeLine, "the end of "+tag, true)
	}
	j, ok := join(fn, inv)
	if ok && h.text == "each" {
		j, ok = join(j, c)
	}
	if !ok {
		line := s.closeLine
		if s.closeStart < 0 {
			line = s.line
		}
		a.fail(line, "the branches of %s (line %d) end in different places of the HTML (%s and %s): a block must not open or close a tag, an attribute or a quote on one branch only",
			tag, s.line, describe(fn), describe(inv))
	}
	return j
}

// join is the context after either of two branches, if they agree.
func join(x, y hctx) (hctx, bool) {
	x, y = x.norm(), y.norm()
	if x.fn != y.fn && sameStack(x.fn, y.fn) {
		y.fn = x.fn // the same elements, opened by each branch
	}
	if x == y {
		return x, true
	}
	// Within one URL value, the less decided wins: the next value is filtered.
	xs, ys := x, y
	xs.urlFix, xs.urlDyn, ys.urlFix, ys.urlDyn = false, false, false, false
	xs.glue, ys.glue = false, false
	if xs == ys {
		j := x
		j.urlFix = x.urlFix && y.urlFix
		j.urlDyn = x.urlDyn || y.urlDyn
		j.glue = x.glue || y.glue
		return j, true
	}
	return x, false
}

func describe(c hctx) string {
	if c.fn != nil {
		return describeState(c) + " in <" + c.fn.name + "> of depth " + strconv.Itoa(c.fn.depth)
	}
	return describeState(c)
}

func describeState(c hctx) string {
	switch c.state {
	case sText:
		return "text"
	case sTag, sAttrName, sAfterName, sBeforeValue, sTagName:
		return "inside <" + c.elem + ">"
	case sValueDQ, sValueSQ, sValueUnq:
		return "in " + c.attrOr() + "=\"...\""
	case sRaw:
		return "inside <" + c.raw + ">"
	case sComment:
		return "in a comment"
	}
	return "inside a tag"
}

// rewrite applies the edits to src.
func rewrite(src string, edits []edit) string {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var b strings.Builder
	b.Grow(len(src) + len(edits)*16)
	at := 0
	for _, e := range edits {
		b.WriteString(src[at:e.start])
		b.WriteString(e.text)
		at = e.end
	}
	b.WriteString(src[at:])
	return b.String()
}

// nl keeps a tag's line count in its rewrite (newlines inside a tag are
// whitespace), so raymond's lines agree with the source's.
func nl(tag string) string { return strings.Repeat("\n", strings.Count(tag, "\n")) }
