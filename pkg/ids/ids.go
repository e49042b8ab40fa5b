// Package ids makes every identifier the service hands out: accounts, keys,
// jobs, batches, stored files. One form for all (128 random bits, URL-safe
// base64, 22 characters) means one check of that form wherever an ID comes
// back from a client.
package ids

import (
	"crypto/rand"
	"encoding/base64"
)

// Len is the length of an ID.
const Len = 22

// New returns a new unguessable ID. It never starts with '-': an ID given
// to a command line (docrender files rm ID) would read as a flag. That
// costs a 64th of one character's randomness (about 127.98 bits left).
func New() string {
	var b [16]byte
	for {
		rand.Read(b[:]) // never fails (crypto/rand: it panics rather than return short)
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

// Valid reports whether s has the form of an ID: anything else is unknown
// without a lookup.
func Valid(s string) bool {
	if len(s) != Len {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
