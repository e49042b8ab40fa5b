package pdfium

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// netnsSupported: children are first tried in a user and network namespace
// of their own (unprivileged user namespaces, or root); start falls back
// when the kernel refuses.
const netnsSupported = true

// childAttr: the child is killed when the worker dies (Pdeathsig), in a
// process group of its own (a terminal's ^C to the worker does not stop
// it mid-call; the worker stops it), and with netns in namespaces where no
// network exists (a downed loopback only) and no other process is seen (a
// PID namespace: the child is its init, and cannot signal the worker or
// its siblings), its user mapped to itself.
func childAttr(netns bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if netns {
		a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// namespacesRefused: the kernel would not make the child's namespaces
// (EPERM: unprivileged user namespaces off, or a seccomp profile; ENOSPC,
// EUSERS: a limit of 0; EINVAL: not built in), not a failure to run it.
func namespacesRefused(err error) bool {
	for _, e := range []error{syscall.EPERM, syscall.EACCES, syscall.ENOSPC, syscall.EUSERS, syscall.EINVAL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// selfExe is the running executable itself, even if its file has since
// been replaced (a deploy) or removed: a child is always this build.
func selfExe() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err != nil {
		return os.Executable()
	}
	return self, nil
}

// residentBytes is a process's resident memory (0 if unknown).
func residentBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
