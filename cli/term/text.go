package term

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Safe makes text from elsewhere (a server's message, a file name, a
// URL) harmless to print on a terminal: every control character but tab
// (ESC, CR, BEL, backspace, the C1 controls, DEL, and newline too) and
// every byte that is not UTF-8 is shown escaped (\x1b, \u009b), so an
// answer cannot move the cursor, retitle the window, rewrite what was
// printed or forge lines of its own.
func Safe(s string) string { return clean(s, false) }

// SafeLines is Safe keeping newlines, for text printed on several lines
// on purpose.
func SafeLines(s string) string { return clean(s, true) }

func clean(s string, keepNewline bool) string {
	if !needsCleaning(s, keepNewline) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t', r == '\n' && keepNewline:
			b.WriteRune(r)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsCleaning(s string, keepNewline bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unicode.IsControl(r) && r != '\t' && (r != '\n' || !keepNewline) {
			return true
		}
		i += size
	}
	return false
}
