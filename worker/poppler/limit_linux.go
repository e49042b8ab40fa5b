package poppler

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// procAttr: pdftotext dies with the worker (Pdeathsig) and is in a process
// group of its own (a terminal's ^C to the worker does not reach it; the
// worker ends it).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// limit bounds the process pid before it reads its input: its address
// space to mem bytes, and no file of its own written (it writes to pipes
// only).
func limit(pid int, mem int64) error {
	for _, l := range []struct {
		res int
		max uint64
	}{{unix.RLIMIT_AS, uint64(mem)}, {unix.RLIMIT_FSIZE, 0}} {
		if err := unix.Prlimit(pid, l.res, &unix.Rlimit{Cur: l.max, Max: l.max}, nil); err != nil {
			return err
		}
	}
	return nil
}
