// Package term tells whether a file is a terminal, reads a password from
// one, and makes text from elsewhere safe to print on one, with the
// standard library only.
package term

import (
	"os"
	"syscall"
	"unsafe"
)

// IsTerminal reports whether f is a terminal (a character device that
// answers the terminal ioctl; /dev/null is a character device but not a terminal).
func IsTerminal(f *os.File) bool {
	_, err := getTermios(f.Fd())
	return err == nil
}

func getTermios(fd uintptr) (*syscall.Termios, error) {
	var t syscall.Termios
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&t))); e != 0 {
		return nil, e
	}
	return &t, nil
}

// NoEcho turns echo off on the terminal f until the returned function runs.
func NoEcho(f *os.File) (restore func(), err error) {
	fd := f.Fd()
	old, err := getTermios(fd)
	if err != nil {
		return func() {}, err
	}
	t := *old
	t.Lflag &^= syscall.ECHO
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(&t))); e != 0 {
		return func() {}, e
	}
	return func() {
		syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(old)))
	}, nil
}
