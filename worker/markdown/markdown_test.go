package markdown

import (
	"errors"
	"strings"
	"testing"
)

func TestPage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src      string
		template string
		want     []string
		not      []string
	}{
		{"table", "# Report\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n", "",
			[]string{`<title>Report</title>`, `<h1 id="report">Report</h1>`, `<table>`, `<th>a</th>`, `<td style="text-align:right">2</td>`}, nil},
		{"task list", "- [x] done\n- [ ] to do\n", "",
			[]string{`<input checked="" disabled="" type="checkbox"`, `<input disabled="" type="checkbox"`}, nil},
		{"fenced code", "```go\nfmt.Println(\"<b>\")\n```\n", "",
			[]string{`<pre><code class="language-go">fmt.Println(&quot;&lt;b&gt;&quot;)`}, []string{"<b>"}},
		{"strikethrough and autolink", "~~old~~ https://example.com\n", "",
			[]string{`<del>old</del>`, `<a href="https://example.com">https://example.com</a>`}, nil},
		{"heading markup in the title", "## The *big* `plan` & more\n", "",
			[]string{`<title>The big plan &amp; more</title>`}, nil},
		{"raw HTML kept", "<div class=\"note\">hi</div>\n", "",
			[]string{`<div class="note">hi</div>`}, []string{"raw HTML omitted"}},
		{"in a template", "# T\n\nWrite {{content}} in a template.\n", "<html><body><main>{{content}}</main></body></html>",
			[]string{`<html><body><main><h1 id="t">T</h1>`, `Write {{content}} in a template.`, `</main></body></html>`}, []string{"<title>", "markdown-body"}},
		{"no heading, no title", "just text\n", "",
			[]string{`<title></title>`, `<p>just text</p>`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tpl []byte
			if tc.template != "" {
				tpl = []byte(tc.template)
			}
			out, err := Page([]byte(tc.src), tpl)
			if err != nil {
				t.Fatal(err)
			}
			got := string(out)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("holds %q:\n%s", n, got)
				}
			}
		})
	}
}

func TestPageRefused(t *testing.T) {
	if _, err := Page([]byte("# x"), []byte("<html>no place</html>")); !errors.Is(err, ErrNoPlaceholder) {
		t.Errorf("template without placeholder: %v", err)
	}
	if _, err := Page([]byte(strings.Repeat("a", MaxBytes+1)), nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too large: %v", err)
	}
}

// Hostile Markdown: deep nesting and long runs finish and stay bounded.
func TestPageHostile(t *testing.T) {
	for _, src := range []string{
		strings.Repeat(">", 100000) + " deep",
		strings.Repeat("- ", 20000) + "x",
		strings.Repeat("[", 50000) + strings.Repeat("]", 50000),
		strings.Repeat("*a", 100000),
		strings.Repeat("| a ", 5000) + "|\n" + strings.Repeat("|---", 5000) + "|\n",
	} {
		out, err := Page([]byte(src), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 40*len(src)+4096 {
			t.Errorf("%d bytes of output for %d of input", len(out), len(src))
		}
	}
}

func FuzzPage(f *testing.F) {
	for _, s := range []string{"# a\n\n| x |\n|---|\n| y |\n", "- [ ] t\n", "```\ncode\n```", "<b>x</b>", "[a](b) ~~c~~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := Page([]byte(s), nil); err != nil {
			t.Fatal(err)
		}
	})
}
