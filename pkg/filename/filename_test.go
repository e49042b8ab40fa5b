package filename

import "testing"

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "invoice-42.pdf", "invoice-42.pdf"},
		{"spaces kept", "annual report 2024.pdf", "annual report 2024.pdf"},
		{"letters of any script", "Überblick – 報告 – отчёт.pdf", "Überblick – 報告 – отчёт.pdf"},
		{"emoji", "notes 📝.pdf", "notes 📝.pdf"},
		{"right-to-left text kept", "تقرير.pdf", "تقرير.pdf"},
		{"RLO disguising the extension", "invoice\u202Efdp.exe", "invoicefdp.exe"},
		{"LRE RLE PDF LRO", "a\u202Ab\u202Bc\u202Cd\u202De", "abcde"},
		{"isolates", "a\u2066b\u2067c\u2068d\u2069e", "abcde"},
		{"marks", "a\u200Eb\u200Fc\u061Cd", "abcd"},
		{"zero-width space", "pay\u200Bpal.pdf", "paypal.pdf"},
		{"zero-width joiners", "a\u200Cb\u200Dc", "abc"},
		{"word joiner and BOM", "\uFEFFa\u2060b", "ab"},
		{"other format characters", "a\u00ADb\u2061c\U000E0041d", "abcd"},
		{"C0 controls", "a\x00b\tc\nd\re\x1b", "abcde"},
		{"DEL and C1 controls", "a\x7fb\u0085c\u009bd", "abcd"},
		{"line and paragraph separators", "a\u2028b\u2029c", "abc"},
		{"bytes that are not UTF-8", "a\xffb\xc3(c", "ab(c"},
		{"replacement character kept", "a\uFFFDb", "a\uFFFDb"},
		{"only hidden characters", "\u202E\u200B", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Clean(tc.in); got != tc.want {
				t.Fatalf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCleanKeepsCleanNamesAsIs(t *testing.T) {
	// No allocation for the common name: it is on every download.
	n := "invoice-42.pdf"
	if a := testing.AllocsPerRun(100, func() { _ = Clean(n) }); a != 0 {
		t.Fatalf("%v allocations for a clean name", a)
	}
}
