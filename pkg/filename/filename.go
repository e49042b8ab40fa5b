// Package filename cleans the names docrender gives to files it hands out:
// download names (Content-Disposition) and ZIP entry names. A name is shown
// to a person by a browser, a file manager or an archive tool, so nothing in
// it may make it look like another name (DESIGN §5).
package filename

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean returns name without the characters that can disguise it: bidi
// controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) and
// zero-width characters (U+200B–U+200D, U+2060, U+FEFF), which are all
// Unicode format characters (Cf), the rest of Cf with them (none is
// visible), control characters (Cc), line and paragraph separators, and
// bytes that are not UTF-8. Everything else is kept as it is.
func Clean(name string) string {
	if !needsCleaning(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		if !(r == utf8.RuneError && size == 1) && !hidden(r) {
			b.WriteString(name[i : i+size])
		}
		i += size
	}
	return b.String()
}

// hidden reports whether r is dropped by Clean.
func hidden(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// needsCleaning spares the common plain-ASCII name a copy.
func needsCleaning(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f {
			return true
		}
	}
	return false
}
