//go:build !linux

package poppler

import "syscall"

// Outside Linux: no Pdeathsig, no prlimit; the deadline and the output cap
// still bound pdftotext.
func procAttr() *syscall.SysProcAttr { return nil }

func limit(int, int64) error { return nil }
