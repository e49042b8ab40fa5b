package term

import "testing"

func TestSafe(t *testing.T) {
	for _, tt := range []struct {
		in, safe, lines string
	}{
		{"plain text, café ✓", "plain text, café ✓", "plain text, café ✓"},
		{"a\tb", "a\tb", "a\tb"},
		{"two\nlines", `two\x0alines`, "two\nlines"},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`, `\x1b]0;pwned\x07title`},
		{"\x1b[2J\x1b[Hcleared", `\x1b[2J\x1b[Hcleared`, `\x1b[2J\x1b[Hcleared`},
		{"over\rwrite\x08\x7f", `over\x0dwrite\x08\x7f`, `over\x0dwrite\x08\x7f`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`, `c1 \u009b31m csi`},
		{"raw \x9b byte", `raw \x9b byte`, `raw \x9b byte`},
		{"", "", ""},
	} {
		if got := Safe(tt.in); got != tt.safe {
			t.Errorf("Safe(%q) = %q, want %q", tt.in, got, tt.safe)
		}
		if got := SafeLines(tt.in); got != tt.lines {
			t.Errorf("SafeLines(%q) = %q, want %q", tt.in, got, tt.lines)
		}
	}
}
