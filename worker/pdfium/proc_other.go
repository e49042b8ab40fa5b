//go:build !linux

package pdfium

import (
	"os"
	"syscall"
)

// Outside Linux: no namespaces, no Pdeathsig (a child whose parent died
// ends when its requests pipe closes, between calls).
const netnsSupported = false

func childAttr(bool) *syscall.SysProcAttr { return nil }

func selfExe() (string, error) { return os.Executable() }

func residentBytes(int) int64 { return 0 }

func namespacesRefused(error) bool { return false }
