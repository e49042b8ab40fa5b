package tmpl

import (
	"errors"
	"strings"
	"testing"
)

// The inputs below took seconds to minutes before their bounds: each test
// runs the input at that size and wants a clear error or a result.

func TestLongNamesRefused(t *testing.T) {
	long := strings.Repeat("x", 400_000)
	for _, c := range []struct{ name, src, want string }{
		{"attribute", "<p>\n<p " + long + ">", "attribute name is longer"},
		{"tag", "<p>\n<" + long + ">", "tag name is longer"},
		{"end tag", "<p>\n</" + long + ">", "tag name is longer"},
		{"attribute after a value", "<p>\n<p a=\"1\" " + long + "=\"2\">", "attribute name is longer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.src)
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line != 2 || !strings.Contains(se.Problem, c.want) {
				t.Fatalf("got %v; want a *SyntaxError at line 2 containing %q", err, c.want)
			}
		})
	}
	// A name split by a {{!comment}} is one name.
	_, err := Parse("<p " + strings.Repeat("x", 200) + "{{! c }}" + strings.Repeat("y", 200) + ">")
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Problem, "attribute name is longer") {
		t.Errorf("split name: %v", err)
	}
	// Names up to the bound, upper case included, still work.
	name := strings.Repeat("A", maxNameBytes)
	out := render(t, `<svg><a xlink:HREF="{{u}}" `+name+`="1">{{t}}</a></svg>`, `{"u":"javascript:alert(1)","t":"<b>"}`)
	if !strings.Contains(out, `xlink:HREF="about:invalid"`) || !strings.Contains(out, "&lt;b&gt;") {
		t.Errorf("got %q", out)
	}
}

func TestDataLongKeyAndLongList(t *testing.T) {
	zeros := strings.Repeat("0,", 100_000) + "0"
	// 600 KB: a 400 KB key on a 100k-element list.
	_, err := DecodeData([]byte(`{"` + strings.Repeat("k", 400_000) + `":[` + zeros + `]}`))
	var de *DataError
	if !errors.As(err, &de) || de.Path != "" || !strings.Contains(de.Problem, "key is longer than 1024 bytes") {
		t.Fatalf("long key: %v", err)
	}
	_, err = DecodeData([]byte(`{"a":{"b":[{"` + strings.Repeat("k", MaxKeyBytes+1) + `":1}]}}`))
	if !errors.As(err, &de) || de.Path != "a.b[0]" || !strings.Contains(de.Problem, "key is longer") {
		t.Fatalf("nested long key: %v", err)
	}
	// The same list under a key at the bound decodes.
	key := strings.Repeat("k", MaxKeyBytes)
	d := mustData(t, `{"`+key+`":[`+zeros+`]}`)
	if l, ok := d[key].([]any); !ok || len(l) != 100_001 {
		t.Fatalf("list: %T", d[key])
	}
	// Errors still name their path.
	_, err = DecodeData([]byte(`{"odd key":[1,{"x":[2,` + zeros + `,}]}]}`))
	if !errors.As(err, &de) || de.Path != `["odd key"][1].x[100002]` || !strings.Contains(de.Problem, "invalid JSON") {
		t.Fatalf("path: %v", err)
	}
}

func TestLongNumbersRefused(t *testing.T) {
	digits := strings.Repeat("7", 200_000)
	for _, src := range []string{"<p>\n{{formatNumber o.n 2}}</p>", "<p>\n{{formatCurrency o.n \"EUR\"}}</p>"} {
		for _, n := range []string{digits, `"` + digits + `"`, "0." + digits, "1" + strings.Repeat("0", 100) + ".5"} {
			_, err := mustParse(t, src).Render(mustData(t, `{"o":{"n":`+n+`}}`))
			var re *RenderError
			if !errors.As(err, &re) || re.Line != 2 || re.Path != "o.n" || !strings.Contains(re.Problem, "significant digits") {
				t.Fatalf("%s with %.20s…: %v", src, n, err)
			}
		}
	}
	// Zeros that do not count, and numbers at the bound, still format.
	for _, c := range []struct{ n, want string }{
		{`"0000000000000000000000000000000000000000000000000000000000000000000001.5"`, "1.50"},
		{"2.5000000000000000000000000000000000000000000000000000000000000000000000", "2.50"},
		{strings.Repeat("9", 64), "9" + strings.Repeat(",999", 21) + ".00"},
		{"1e400", "10" + strings.Repeat(",000", 133) + ".00"},
		{"1234567", "1,234,567.00"},
		{"123", "123.00"},
		{"-1234", "-1,234.00"},
	} {
		if got := render(t, `{{formatNumber n 2}}`, `{"n":`+c.n+`}`); got != c.want {
			t.Errorf("formatNumber %.30s = %.60q, want %.60q", c.n, got, c.want)
		}
	}
	if got := render(t, `{{formatNumber n 0}}`, `{"_locale":"en-IN","n":123456789012}`); got != "1,23,45,67,89,012" {
		t.Errorf("en-IN: %q", got)
	}
}

func TestForeignContentAndRawText(t *testing.T) {
	refused := []struct {
		name, src string
		line      int
		want      string
	}{
		{"svg title holds HTML script", "<svg><title>\n<script>{{x}}</script></title></svg>", 2, "inside <script>"},
		{"svg title holds HTML style", "<svg><title>\n<style>{{x}}</style></title></svg>", 2, "inside <style>"},
		{"svg desc holds HTML script", "<svg><desc><script>\n{{x}}</script></desc></svg>", 2, "inside <script>"},
		{"svg foreignObject script", "<svg><foreignObject>\n<script>{{x}}</script>", 2, "inside <script>"},
		{"svg script", "<svg>\n<script>{{x}}</script></svg>", 2, "inside <script>"},
		{"svg style", "<svg>\n<style>.a{fill:{{x}} }</style></svg>", 2, "inside <style>"},
		{"svg script with CDATA", "<svg><script><![CDATA[\n</script>{{x}}]]></script></svg>", 2, "inside <script>"},
		{"svg script with comment", "<svg><script><!--</script>-->\n{{x}}</script></svg>", 2, "inside <script>"},
		{"svg script nested", "<svg><script><script></script>\n{{x}}</script></svg>", 2, "inside <script>"},
		{"svg script closed by svg", "<svg><script></svg>\n{{x}}</script>", 2, "inside <script>"},
		{"svg textarea script", "<svg><textarea>\n<script>{{x}}</script></textarea></svg>", 2, "inside <script>"},
		{"svg CDATA", "<svg><text><![CDATA[\n{{x}}]]></text></svg>", 2, "CDATA"},
		{"math mtext script", "<math><mtext>\n<script>{{x}}</script></mtext></math>", 2, "inside <script>"},
		{"math style", "<math><mi><mglyph>\n<style>{{x}}</style></mglyph></mi></math>", 2, "inside <style>"},
		{"svg title in svg after self-closing title", "<svg><title/><textarea>\n<script>{{x}}</script>", 2, "inside <script>"},
		{"noscript href", "<noscript>\n<a href=\"{{x}}\">", 2, "inside <noscript>"},
		{"noscript text", "<noscript>\n{{x}}</noscript>", 2, "inside <noscript>"},
		{"iframe", "<iframe src=\"/a\">\n{{x}}</iframe>", 2, "inside <iframe>"},
		{"noembed", "<noembed>\n{{x}}", 2, "inside <noembed>"},
		{"noframes", "<noframes>\n<a href=\"{{x}}\">", 2, "inside <noframes>"},
		{"xmp", "<xmp>\n{{x}}</xmp>", 2, "inside <xmp>"},
		{"plaintext never ends", "<plaintext></plaintext>\n<p>{{x}}</p>", 2, "inside <plaintext>"},
		{"textarea href", "<textarea>\n<a href=\"{{x}}\">", 2, "after a '<'"},
		{"title script", "<title>\n<script>{{x}}</script></title>", 2, "after a '<'"},
		{"comment splits CDATA", "<svg><!{{! x }}[CDATA[\n]]>", 1, "may not split"},
		{"script comment", "<script>\n<!--<script></script>\n{{x}}</script>", 2, "<!-- inside <script>"},
		{"svg animate still banned", "<svg><title></title>\n<set attributeName=\"href\" to=\"{{x}}\"/>", 2, "animation"},
	}
	for _, c := range refused {
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
	const js = `{"x":"javascript:alert(1)","t":"</title><script>alert(1)</script>"}`
	for _, c := range []struct{ name, src, want string }{
		{"svg a href", `<svg><a href="{{x}}">l</a></svg>`, `<svg><a href="about:invalid">l</a></svg>`},
		{"svg a xlink:href", `<svg><a xlink:href="{{x}}">l</a></svg>`, `<svg><a xlink:href="about:invalid">l</a></svg>`},
		{"svg text", `<svg><text>{{t}}</text></svg>`, `<svg><text>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</text></svg>`},
		{"svg title text", `<svg><title>{{t}}</title></svg>`, `<svg><title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title></svg>`},
		{"svg textarea is markup", `<svg><textarea><a href="{{x}}"></a></textarea></svg>`, `<svg><textarea><a href="about:invalid"></a></textarea></svg>`},
		{"svg noscript is markup", `<svg><noscript><a href="{{x}}"></a></noscript></svg>`, `<svg><noscript><a href="about:invalid"></a></noscript></svg>`},
		{"svg title a href", `<svg><title><a href="{{x}}">{{t}}</a></title></svg>`, `<svg><title><a href="about:invalid">&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</a></title></svg>`},
		{"after svg script", `<svg><script>go()</script><text>{{t}}</text></svg>`, `<svg><script>go()</script><text>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</text></svg>`},
		{"after svg CDATA", `<svg><style><![CDATA[a > b {}]]></style><text>{{t}}</text></svg>`, `<svg><style><![CDATA[a > b {}]]></style><text>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</text></svg>`},
		{"html title after svg", `<svg></svg><title>{{t}}</title>`, `<svg></svg><title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>`},
		{"html title after self-closing svg", `<svg/><title>{{t}}</title>`, `<svg/><title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>`},
		{"iframe src", `<iframe src="{{x}}"></iframe>`, `<iframe src="about:invalid"></iframe>`},
		{"blocks in svg", `<svg>{{#if x}}<g><text>{{t}}</text></g>{{else}}<g class="a"></g>{{/if}}</svg>`, `<svg><g><text>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</text></g></svg>`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := render(t, c.src, js); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
