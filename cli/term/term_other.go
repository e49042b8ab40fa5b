//go:build !linux

// Package term tells whether a file is a terminal, reads a password from
// one, and makes text from elsewhere safe to print on one, with the
// standard library only.
package term

import "os"

// IsTerminal reports whether f is a character device: without the
// terminal ioctl of Linux, the best guess the standard library gives.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// NoEcho cannot turn echo off here: the password shows as it is typed.
func NoEcho(f *os.File) (restore func(), err error) { return func() {}, nil }
