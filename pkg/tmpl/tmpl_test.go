package tmpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"strings"
	"testing"
	"time"
)

func mustParse(t testing.TB, src string) *Template {
	t.Helper()
	tp, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return tp
}

func mustData(t testing.TB, js string) map[string]any {
	t.Helper()
	d, err := DecodeData([]byte(js))
	if err != nil {
		t.Fatalf("DecodeData(%s): %v", js, err)
	}
	return d
}

func render(t testing.TB, src, js string) string {
	t.Helper()
	out, err := mustParse(t, src).Render(mustData(t, js))
	if err != nil {
		t.Fatalf("Render(%q): %v", src, err)
	}
	return out
}

func TestHelpersByLocale(t *testing.T) {
	const src = `{{formatNumber n 2}}|{{formatNumber n}}|{{formatNumber neg 0}}|{{formatCurrency n "EUR"}}|{{formatCurrency neg "USD"}}|{{formatCurrency n "JPY"}}|{{formatDate d "Monday, 2 January 2006"}}|{{formatDate ts "Jan 2 15:04 -07:00"}}`
	const data = `{"n":1234567.891,"neg":-2.5,"d":"2024-03-04","ts":"2024-12-25T10:30:00+01:00"}`
	cases := []struct{ locale, want string }{
		{"en-US", "1,234,567.89|1,234,567.891|-3|€1,234,567.89|-$2.50|¥1,234,568|Monday, 4 March 2024|Dec 25 10:30 +01:00"},
		{"de-DE", "1.234.567,89|1.234.567,891|-3|1.234.567,89\u00a0€|-2,50\u00a0$|1.234.568\u00a0¥|Montag, 4 März 2024|Dez 25 10:30 +01:00"},
		{"fr-FR", "1\u00a0234\u00a0567,89|1\u00a0234\u00a0567,891|-3|1\u00a0234\u00a0567,89\u00a0€|-2,50\u00a0$US|1\u00a0234\u00a0568\u00a0JPY|lundi, 4 mars 2024|déc 25 10:30 +01:00"},
		{"ja-JP", "1,234,567.89|1,234,567.891|-3|€1,234,567.89|-$2.50|￥1,234,568|月曜日, 4 3月 2024|12月 25 10:30 +01:00"},
	}
	tp := mustParse(t, src)
	for _, c := range cases {
		t.Run(c.locale, func(t *testing.T) {
			d := mustData(t, data)
			d["_locale"] = c.locale
			got, err := tp.Render(d)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("\ngot  %q\nwant %q", got, c.want)
			}
			// The template's <html lang> is the default; _locale wins over it.
			tl := mustParse(t, `<html lang="`+c.locale+`"><p>`+src+`</p></html>`)
			if tl.Lang != c.locale {
				t.Errorf("Lang = %q", tl.Lang)
			}
			got, err = tl.Render(mustData(t, data))
			if err != nil || !strings.Contains(got, c.want) {
				t.Errorf("with <html lang>: %q, %v", got, err)
			}
			// qr: a PNG data URL with data-qr's defaults, the same in every locale.
			q := render(t, `<img src="{{qr code}}">`, `{"code":"INV-1","_locale":"`+c.locale+`"}`)
			if !strings.HasPrefix(q, `<img src="data:image/png;base64,iVBOR`) {
				t.Errorf("qr: %.80s", q)
			}
		})
	}
}

func TestNumbersExact(t *testing.T) {
	cases := []struct{ n, dec, want string }{
		{`2.675`, `2`, "2.68"}, // float64 would give 2.67
		{`1.005`, `2`, "1.01"},
		{`-0.004`, `2`, "0.00"},
		{`12345678901234567890.125`, `2`, "12,345,678,901,234,567,890.13"},
		{`"42"`, `0`, "42"},
		{`1e3`, `1`, "1,000.0"},
		{`0.5`, `0`, "1"},
	}
	tp := mustParse(t, `{{formatNumber n d}}`)
	for _, c := range cases {
		got, err := tp.Render(mustData(t, `{"n":`+c.n+`,"d":`+c.dec+`}`))
		if err != nil || got != c.want {
			t.Errorf("formatNumber %s %s = %q, %v; want %q", c.n, c.dec, got, err, c.want)
		}
	}
	if got := render(t, `{{formatNumber n 2}}`, `{"_locale":"en-IN","n":1234567}`); got != "12,34,567.00" {
		t.Errorf("en-IN: %q", got)
	}
}

func TestBuiltins(t *testing.T) {
	cases := []struct{ name, src, data, want string }{
		{"each @index @first @last", `{{#each xs}}{{@index}}{{#if @first}}F{{/if}}{{#if @last}}L{{/if}}{{this}};{{/each}}`, `{"xs":["a","b","c"]}`, "0Fa;1b;2Lc;"},
		{"each object @key sorted", `{{#each o}}{{@key}}={{this}},{{/each}}`, `{"o":{"b":2,"a":1}}`, "a=1,b=2,"},
		{"each else", `{{#each xs}}x{{else}}none{{/each}}`, `{"xs":[]}`, "none"},
		{"each missing", `{{#each nope}}x{{else}}none{{/each}}`, `{}`, "none"},
		{"each block param", `{{#each items as |it|}}{{it.n}}{{/each}}`, `{"items":[{"n":1},{"n":2}]}`, "12"},
		{"if zero", `{{#if z}}y{{else}}n{{/if}}`, `{"z":0}`, "n"},
		{"if empty list", `{{#if l}}y{{else}}n{{/if}}`, `{"l":[]}`, "n"},
		{"if object", `{{#if o}}y{{else}}n{{/if}}`, `{"o":{}}`, "y"},
		{"else if", `{{#if a}}A{{else if b}}B{{else}}C{{/if}}`, `{"b":true}`, "B"},
		{"unless", `{{#unless a}}no a{{/unless}}`, `{}`, "no a"},
		{"with", `{{#with c}}{{name}} {{../top}}{{/with}}`, `{"c":{"name":"N"},"top":"T"}`, "N T"},
		{"with else", `{{#with c}}x{{else}}none{{/with}}`, `{}`, "none"},
		{"lookup", `{{lookup m k}} {{lookup l 1}} {{formatNumber (lookup m k) 1}}`, `{"m":{"a":5},"k":"a","l":["x","y"]}`, "5 y 5.0"},
		{"missing renders empty", `[{{a.b.c}}][{{formatNumber nope 2}}][{{formatDate nope "2006"}}][{{qr nope}}]`, `{}`, "[][][][]"},
		{"nested paths", `{{a.b.c}} {{a.list.[1]}}`, `{"a":{"b":{"c":"deep"},"list":[1,2]}}`, "deep 2"},
		{"root", `{{#each xs}}{{@root.t}}{{/each}}`, `{"xs":[1,2],"t":"r"}`, "rr"},
		{"comment", `a{{! no }}b{{!-- {{x}} --}}c`, `{}`, "abc"},
		{"escaped mustache", `\{{x}}`, `{"x":1}`, "{{x}}"},
		{"standalone lines", "<ul>\n  {{#each xs}}\n  <li>{{this}}</li>\n  {{/each}}\n</ul>", `{"xs":[1]}`, "<ul>\n  <li>1</li>\n</ul>"},
		{"bool and null", `{{t}}{{f}}[{{n}}]`, `{"t":true,"f":false,"n":null}`, "truefalse[]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := render(t, c.src, c.data); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestEscaping(t *testing.T) {
	const script = `<script>alert(1)</script>`
	const quote = `" onmouseover="x`
	cases := []struct{ name, src, want string }{
		{"text", `<p>{{v}}</p>`, `<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>`},
		{"double-quoted attribute", `<p title="{{v}}">`, `<p title="&lt;script&gt;alert(1)&lt;/script&gt;">`},
		{"single-quoted attribute", `<p title='{{v}}'>`, `<p title='&lt;script&gt;alert(1)&lt;/script&gt;'>`},
		{"quote in double", `<p title="{{q}}">`, `<p title="&#34; onmouseover&#61;&#34;x">`},
		{"quote in single", `<p title='{{s}}'>`, `<p title='&#39; onmouseover&#61;&#39;x'>`},
		{"backtick and equals", `<p title="{{b}}">`, `<p title="&#96;a&#61;b&#96;">`},
		{"textarea", `<textarea>{{v}}</textarea>`, `<textarea>&lt;script&gt;alert(1)&lt;/script&gt;</textarea>`},
		{"title", `<title>{{close}}</title>`, `<title>&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;</title>`},
		{"helper output", `<p title="{{lookup m "k"}}">`, `<p title="&lt;script&gt;alert(1)&lt;/script&gt;">`},
	}
	data := map[string]any{"v": script, "q": quote, "s": `' onmouseover='x`, "b": "`a=b`",
		"close": "</title><script>x</script>", "m": map[string]any{"k": script}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := mustParse(t, c.src).Render(data)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
			if strings.Contains(got, "<script>") || strings.Contains(got, ` onmouseover="`) {
				t.Errorf("data escaped its place: %q", got)
			}
		})
	}
}

func TestURLFilter(t *testing.T) {
	bad := []string{
		`javascript:alert(1)`, `JaVaScRiPt:alert(1)`, ` javascript:alert(1)`, "\tjavascript:alert(1)",
		"java\tscript:alert(1)", "java\nscript:alert(1)", "\x00javascript:alert(1)", `java&#x09;script:alert(1)`,
		`javascript&#58;alert(1)`, `vbscript:msgbox(1)`, `data:text/html;base64,PHNjcmlwdD4=`,
		`data:image/svg+xml,<svg onload=alert(1)>`, `file:///etc/passwd`, `jAvAsCrIpT&colon;alert(1)`,
	}
	good := []string{`https://example.com/a?b=c#d`, `http://x`, `mailto:a@b.c`, `tel:+4912345`,
		`/relative/path`, `page.html`, `?q=1`, `#frag`, `//cdn.example.com/x.png`,
		`data:image/png;base64,iVBORw0KGgo=`, `a/b:c`}
	srcs := []string{
		`<a href="{{u}}">`, `<img src="{{u}}">`, `<form action="{{u}}">`, `<button formaction='{{u}}'>`,
		`<object data="{{u}}">`, `<svg><a xlink:href="{{u}}"></a></svg>`, `<iframe src="{{u}}"></iframe>`,
		`<a href="{{u}}{{v}}">`, `<a href="java{{u}}">`,
	}
	for _, src := range srcs {
		tp := mustParse(t, src)
		for _, u := range bad {
			got, err := tp.Render(map[string]any{"u": u})
			if err != nil {
				t.Fatal(err)
			}
			if isLink(got) {
				t.Errorf("%s with %q: %q", src, u, got)
			}
		}
		if strings.Contains(src, "java{{") || strings.Contains(src, "{{v}}") {
			continue
		}
		for _, u := range good {
			got, _ := tp.Render(map[string]any{"u": u})
			if strings.Contains(got, "about:invalid") || !strings.Contains(got, escapeHTML(u)) {
				t.Errorf("%s with %q: %q", src, u, got)
			}
		}
	}
	// Data after the template's own scheme or path is not a scheme: kept.
	if got := render(t, `<a href="https://x.test/{{p}}">`, `{"p":"javascript:alert(1)"}`); got != `<a href="https://x.test/javascript:alert(1)">` {
		t.Errorf("path part: %q", got)
	}
	// srcset: every candidate filtered, no smuggled candidate.
	for _, c := range []struct{ src, u, want string }{
		{`<img srcset="{{u}}">`, `javascript:alert(1) 2x`, `<img srcset="about:invalid 2x">`},
		{`<img srcset="{{u}} 1x, /b.png 2x">`, ` JaVaScRiPt:alert(1)`, `<img srcset="about:invalid 1x, /b.png 2x">`},
		{`<img srcset="/img/{{u}} 1x">`, `a.png 1x, javascript:alert(1) 2x`, `<img srcset="/img/a.png 1x, about:invalid 2x 1x">`},
		{`<img srcset="{{u}}">`, `/a.png 1x, /b.png 640w`, `<img srcset="/a.png 1x, /b.png 640w">`},
		{`<img srcset="{{u}}">`, `/a.png onerror=x`, `<img srcset="/a.png">`},
	} {
		if got := render(t, c.src, `{"u":`+jsonString(c.u)+`}`); got != c.want {
			t.Errorf("%s with %q:\ngot  %q\nwant %q", c.src, c.u, got, c.want)
		}
	}
}

// isLink says whether the first URL attribute of out, read as a browser
// reads it, has a scheme that runs code or shows HTML.
func isLink(out string) bool {
	i := strings.IndexAny(out, `"'`)
	j := strings.IndexByte(out[i+1:], out[i])
	v := html.UnescapeString(out[i+1 : i+1+j])
	v = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, strings.TrimFunc(v, func(r rune) bool { return r <= ' ' }))
	v = strings.ToLower(v)
	for _, s := range []string{"javascript:", "vbscript:", "data:text", "data:image/svg", "file:"} {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestParseRefusals(t *testing.T) {
	cases := []struct {
		name string
		src  string
		line int
		want string
	}{
		{"triple stash", "<p>\n{{title}}\n{{{raw}}}</p>", 3, "unescaped"},
		{"ampersand", "<p>\n\n{{& raw}}</p>", 3, "unescaped"},
		{"unknown helper", "<p>\n{{shout name}}</p>", 2, `unknown helper "shout"`},
		{"log", "a\nb\n{{log x}}", 3, `unknown helper "log"`},
		{"raymond extra", "a\n{{#ifEq a b}}x{{/ifEq}}", 2, "unknown block helper"},
		{"unknown in subexpr", "a\n\n\n{{formatNumber (double x) 2}}", 4, `unknown helper "double"`},
		{"partial", "a\n{{> header}}", 2, "partials"},
		{"syntax", "<p>\n{{#if x}}\n</p>", 2, "not closed"},
		{"mismatch", "{{#if x}}\n{{/each}}", 2, "does not close"},
		{"unclosed", "a\nb {{ name", 2, "not closed"},
		{"script", "<p>{{a}}</p>\n<script>\nvar x = {{a}};\n</script>", 3, "inside <script>"},
		{"style", "<style>\n.a { color: {{c}} }</style>", 2, "inside <style>"},
		{"event attr", "<div>\n<img\n  onerror=\"{{x}}\">", 3, "event handler"},
		{"style attr", "\n<p style=\"color: {{c}}\">", 2, "style attribute"},
		{"unquoted", "<p>\n<a href={{u}}>", 2, "unquoted"},
		{"tag name", "<p>\n<{{t}}>", 2, "tag name"},
		{"attr name", "<p>\n<div {{a}}=\"x\">", 2, "attribute name"},
		{"attr name part", "<p>\n<div data-{{a}}=\"x\">", 2, "attribute name"},
		{"comment", "\n<!-- {{x}} -->", 2, "comment"},
		{"scheme from data", "\n\n<a href=\"{{s}}:alert(1)\">", 3, "scheme"},
		{"entity split", "<a href=\"javascript&#5{{x}}\">", 1, "character reference"},
		{"srcdoc", "<iframe\nsrcdoc=\"{{x}}\">", 2, "srcdoc"},
		{"svg animate", "<svg><set\n attributeName=\"href\" to=\"{{x}}\"/>", 2, "animation"},
		{"branch opens attribute", "<a {{#if x}}href=\"{{/if}}\">", 1, "branches"},
		{"branch in url", "<a\n href=\"{{#if x}}javascript{{/if}}:{{y}}\">", 2, "branches"},
		{"value in javascript: URL", "<a\n href=\"javascript:go('{{y}}')\">", 2, "scheme is not"},
		{"value in data:text/html", "<iframe\n src=\"data:text/html,{{y}}\">", 2, "scheme is not"},
		{"value in data: type", "<img\n src=\"data:{{y}}\">", 2, "scheme is not"},
		{"glued attribute name", "<a {{#if x}}hr{{/if}}ef=\"{{u}}\">", 1, "must end"},
		{"block in tag name", "<d{{#if x}}iv{{/if}}>", 1, "not allowed"},
		{"hash", "\n{{formatNumber x decimals=2}}", 2, "hash"},
		{"arity", "\n{{formatCurrency x}}", 2, "takes 2"},
		{"bad currency literal", "\n\n{{formatCurrency x \"EURO\"}}", 3, "ISO 4217"},
		{"bad decimals literal", "\n{{formatNumber x 99}}", 2, "between 0 and 20"},
		{"inverted section", "a\n{{^x}}y{{/x}}", 2, "inverted"},
		{"section", "a\n{{#items}}y{{/items}}", 2, "unknown block helper"},
		{"tilde", "a\n{{~x}}", 2, "whitespace control"},
		{"each as value", "\n{{each x}}", 2, "block helper"},
		{"two else", "{{#if a}}\n{{else}}\n{{else}}{{/if}}", 3, "second"},
		{"raw block", "\n{{{{raw}}}}x{{{{/raw}}}}", 2, "raw"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, want a *SyntaxError", c.src, err)
			}
			if se.Line != c.line || !strings.Contains(se.Problem, c.want) {
				t.Errorf("Parse(%q) = line %d %q; want line %d, containing %q", c.src, se.Line, se.Problem, c.line, c.want)
			}
		})
	}
	// Allowed: blocks between attributes, in values, and in the text of
	// <script> (they print only the template's own text).
	for _, src := range []string{
		`<input type="checkbox" {{#if on}}checked{{/if}}>`,
		`<p class="a {{#if on}}b{{else}}c{{/if}} {{cls}}">`,
		`<a href="{{#if x}}/a{{else}}/b{{/if}}?q={{q}}">`,
		`<script>{{#if debug}}var debug = true;{{/if}}</script>`,
		`<a href="https://x.test/{{#each p}}{{this}}/{{/each}}">`,
		`<meta charset="utf-8"><title>{{title}}</title>`,
		`<img src="data:image/png;base64,{{logo}}">`,
		`<a href="mailto:{{email}}?subject={{s}}">`,
		`<input {{#if a}}checked{{/if}} {{#if b}}disabled{{/if}}>`,
	} {
		if _, err := Parse(src); err != nil {
			t.Errorf("Parse(%q): %v", src, err)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	cases := []struct {
		name, src, data string
		line            int
		path, want      string
	}{
		{"each over number", "<ul>\n\n{{#each items}}<li>{{this}}</li>{{/each}}</ul>", `{"items":5}`, 3, "items", "#each needs a list or an object"},
		{"nested path", "{{#each items}}\n{{formatNumber price 2}}\n{{/each}}", `{"items":[{"price":1},{"price":"abc"}]}`, 2, "items[1].price", "not a number"},
		{"with scope", "{{#with order}}\n{{#each lines}}{{/each}}{{/with}}", `{"order":{"lines":true}}`, 2, "order.lines", "#each needs"},
		{"block param", "{{#each rows as |r|}}\n\n{{formatDate r.d \"2006\"}}{{/each}}", `{"rows":[{"d":"yesterday"}]}`, 3, "rows[0].d", "not a date"},
		{"currency from data", "\n{{formatCurrency x c}}", `{"x":1,"c":"XXXX"}`, 2, "x", "ISO 4217"},
		{"bad locale", "{{x}}", `{"_locale":"not a locale!"}`, 0, "_locale", "BCP 47"},
		{"qr too long", "\n<img src=\"{{qr big}}\">", `{"big":"` + strings.Repeat("x", 5000) + `"}`, 2, "big", "too long"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := mustParse(t, c.src).Render(mustData(t, c.data))
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a *RenderError", err)
			}
			if re.Line != c.line || re.Path != c.path || !strings.Contains(re.Problem, c.want) {
				t.Errorf("got %+v; want line %d path %q problem containing %q", *re, c.line, c.path, c.want)
			}
		})
	}
}

func TestEachBounded(t *testing.T) {
	inner := make([]any, 10_000)
	for i := range inner {
		inner[i] = i
	}
	outer := make([]any, 10_000)
	for i := range outer {
		outer[i] = map[string]any{"xs": inner}
	}
	tp := mustParse(t, "<table>\n{{#each rows}}<tr>\n{{#each xs}}<td>{{this}}</td>{{/each}}</tr>{{/each}}</table>")
	start := time.Now()
	_, err := tp.Render(map[string]any{"rows": outer})
	var re *RenderError
	if !errors.As(err, &re) || !strings.Contains(re.Problem, "iterations") || re.Line != 3 {
		t.Fatalf("got %v, want the iteration bound at line 3", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	t.Logf("stopped after %v: %v", time.Since(start), err)
}

func TestOutputBound(t *testing.T) {
	// 10 MB of output is fine (under MaxOutputBytes) ...
	big := strings.Repeat("x", 1000)
	rows := make([]any, 10_000)
	for i := range rows {
		rows[i] = big
	}
	out, err := mustParse(t, `{{#each rows}}{{this}}{{/each}}`).Render(map[string]any{"rows": rows})
	if err != nil || len(out) != 10_000_000 {
		t.Fatalf("10 MB: %d bytes, %v", len(out), err)
	}
	// ... 30 MB is not, whether it comes from values or from the template's
	// own text repeated, and the render stops when it passes the bound.
	rows = append(rows, rows...)
	rows = append(rows, rows[:10_000]...)
	for _, src := range []string{
		`{{#each rows}}{{this}}{{/each}}`,
		"{{#each rows}}" + big + "{{/each}}",
		"{{#each few}}{{#each ../few}}<br>0123456789012345678901234567890123456789{{/each}}{{/each}}",
	} {
		_, err := mustParse(t, src).Render(map[string]any{"rows": rows, "few": rows[:900]})
		var re *RenderError
		if !errors.As(err, &re) || !strings.Contains(re.Problem, "larger than") {
			t.Errorf("%.40s: got %v, want the output bound", src, err)
		}
	}
}

func TestDecodeData(t *testing.T) {
	deep := func(n int) string {
		return `{"a":` + strings.Repeat(`[`, n-2) + `{}` + strings.Repeat(`]`, n-2) + `}`
	}
	if _, err := DecodeData([]byte(deep(100))); err != nil {
		t.Errorf("100 levels: %v", err)
	}
	_, err := DecodeData([]byte(deep(101)))
	var de *DataError
	if !errors.As(err, &de) || !strings.HasPrefix(de.Path, "a[0][0]") || !strings.Contains(de.Problem, "100 levels") {
		t.Errorf("101 levels: %v", err)
	}
	for _, c := range []struct{ in, path, want string }{
		{`[1,2]`, "", "must be a JSON object"},
		{`"x"`, "", "must be a JSON object"},
		{`{"a":1} {}`, "", "more after"},
		{`{"a":{"b":[1,}}`, "a.b[1]", "invalid JSON"},
		{`{"a":`, "a", "ends too soon"},
	} {
		_, err := DecodeData([]byte(c.in))
		if !errors.As(err, &de) || de.Path != c.path || !strings.Contains(de.Problem, c.want) {
			t.Errorf("DecodeData(%s) = %v; want path %q, %q", c.in, err, c.path, c.want)
		}
	}
	if _, err := DecodeData(make([]byte, MaxDataBytes+1)); !errors.As(err, &de) {
		t.Errorf("too large: %v", err)
	}
	d := mustData(t, `{"n":12345678901234567890.123456789}`)
	if n, ok := d["n"].(json.Number); !ok || string(n) != "12345678901234567890.123456789" {
		t.Errorf("number not exact: %#v", d["n"])
	}
}

const invoice = `<!DOCTYPE html>
<html lang="de-DE">
<head><meta charset="utf-8"><title>Rechnung {{number}}</title></head>
<body>
<h1>Rechnung {{number}}</h1>
<p class="to">{{customer.name}}<br>{{customer.street}}<br>{{customer.city}}</p>
<p>Datum: {{formatDate date "2. January 2006"}}</p>
<table>
<thead><tr><th>Pos.</th><th>Artikel</th><th>Menge</th><th>Preis</th><th>Summe</th></tr></thead>
<tbody>
{{#each items}}
<tr class="{{#if @first}}first{{/if}}">
  <td>{{@index}}</td>
  <td><a href="{{url}}">{{name}}</a></td>
  <td>{{formatNumber qty 0}}</td>
  <td>{{formatCurrency price ../currency}}</td>
  <td>{{formatCurrency total ../currency}}</td>
</tr>
{{/each}}
</tbody>
</table>
<p>Summe: {{formatCurrency sum currency}}</p>
{{#if note}}<p class="note">{{note}}</p>{{/if}}
<img alt="Zahlung" src="{{qr payment}}">
</body>
</html>`

func invoiceData(b testing.TB) map[string]any {
	var items []string
	for i := 0; i < 10; i++ {
		items = append(items, fmt.Sprintf(`{"name":"Artikel %d <b>","url":"https://shop.test/p/%d","qty":%d,"price":"19.99","total":"%d.90"}`, i, i, i+1, 20*(i+1)))
	}
	return mustData(b, `{"number":"2024-0042","date":"2024-03-04","currency":"EUR","sum":"1099.50","note":"Danke & bis bald",
		"payment":"BCD\n002\n1\nSCT\n\nDocrender GmbH\nDE89370400440532013000\nEUR1099.50",
		"customer":{"name":"Erika Mustermann","street":"Heidestraße 17","city":"51147 Köln"},
		"items":[`+strings.Join(items, ",")+`]}`)
}

func TestInvoice(t *testing.T) {
	out, err := mustParse(t, invoice).Render(invoiceData(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Datum: 4. März 2024", "1.099,50\u00a0€", "Artikel 3 &lt;b&gt;", "Danke &amp; bis bald", `src="data:image/png;base64,`, "19,99\u00a0€"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
}

func BenchmarkRenderInvoice(b *testing.B) {
	tp := mustParse(b, invoice)
	data := invoiceData(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tp.Render(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderInvoiceNoQR is the same invoice without its QR code: the
// cost of the template language itself.
func BenchmarkRenderInvoiceNoQR(b *testing.B) {
	tp := mustParse(b, strings.Replace(invoice, `<img alt="Zahlung" src="{{qr payment}}">`, "", 1))
	data := invoiceData(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tp.Render(data); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzRender(f *testing.F) {
	f.Add(invoice, `{"items":[{"name":"x"}]}`)
	f.Add(`<a href="{{u}}" title='{{t}}'>{{#each xs}}{{@index}}{{this}}{{/each}}</a>`, `{"u":"javascript:1","t":"'\"","xs":[1,"<b>"]}`)
	f.Add(`<img srcset="{{a}} 1x, {{b}} 2x">{{formatNumber n 2}}{{formatCurrency n "JPY"}}`, `{"a":"x","b":"data:image/png,1","n":"1e5","_locale":"fr-FR"}`)
	f.Add(`{{#with o}}{{#if a}}{{lookup ../m k}}{{else}}{{formatDate d "Jan 2006"}}{{/if}}{{/with}}`, `{"o":{"a":0},"d":"2024-01-01"}`)
	f.Add(`<textarea>{{x}}</textarea><title>{{x}}</title>`, `{"x":"</textarea><script>"}`)
	f.Add(`<svg><title><a href="{{x}}">{{x}}</a></title><style><![CDATA[a>b{}]]></style><text>{{x}}</text></svg><math><mi>{{x}}</mi></math>`, `{"x":"javascript:1"}`)
	f.Fuzz(func(t *testing.T, src, data string) {
		tp, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 {
				t.Fatalf("Parse error %T %v", err, err)
			}
			return
		}
		d, err := DecodeData([]byte(data))
		if err != nil {
			var de *DataError
			if !errors.As(err, &de) {
				t.Fatalf("DecodeData error %T %v", err, err)
			}
			return
		}
		out, err := tp.Render(d)
		if err != nil {
			var re *RenderError
			if !errors.As(err, &re) || strings.Contains(re.Problem, "internal error") {
				t.Fatalf("Render error %T %v", err, err)
			}
			return
		}
		if len(out) > MaxOutputBytes {
			t.Fatalf("output %d bytes", len(out))
		}
	})
}
