//go:build linux && amd64

package browser_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/docrender/docrender/worker/browser"
)

// noUserNSName is the name under which the test binary, started as the
// browser, refuses itself user namespaces and becomes Chromium.
const noUserNSName = "chromium-without-userns"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == noUserNSName {
		execWithoutUserNS()
	}
	os.Exit(m.Run())
}

// execWithoutUserNS execs Chromium under a seccomp filter that refuses user
// namespaces the way Docker's and containerd's default profiles do: unshare
// refused, clone with CLONE_NEWUSER refused, clone3 unknown.
func execWithoutUserNS() {
	type sockFilter struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	const (
		ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06 // BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JSET|K, BPF_RET|K
		allow, errno       = 0x7fff0000, 0x00050000
	)
	f := []sockFilter{
		{ld, 0, 0, 0}, // syscall number
		{jeq, 0, 1, syscall.SYS_UNSHARE},
		{ret, 0, 0, errno | uint32(syscall.EPERM)},
		{jeq, 0, 1, 435}, // clone3
		{ret, 0, 0, errno | uint32(syscall.ENOSYS)},
		{jeq, 0, 3, syscall.SYS_CLONE},
		{ld, 0, 0, 16}, // low half of the flags
		{jset, 0, 1, syscall.CLONE_NEWUSER},
		{ret, 0, 0, errno | uint32(syscall.EPERM)},
		{ret, 0, 0, allow},
	}
	prog := struct {
		n uint16
		f *sockFilter
	}{uint16(len(f)), &f[0]}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0); e != 0 {
		os.Exit(3)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_SECCOMP, 2 /* filter */, uintptr(unsafe.Pointer(&prog))); e != 0 {
		os.Exit(3)
	}
	bin, err := browser.FindChromium("")
	if err != nil {
		os.Exit(3)
	}
	syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), os.Environ())
	os.Exit(3)
}

// Where user namespaces are refused (a container's default seccomp
// profile), the start fails with Chromium's own reason and a message that
// names what is missing and the setting; it never falls back to running
// without the sandbox.
func TestSandboxRefusedByContainerFailsLoudly(t *testing.T) {
	if _, err := browser.FindChromium(""); err != nil {
		t.Skipf("no Chromium: %v", err)
	}
	// The test binary under the name above, where Chromium's user can run it.
	reachable, err := browser.ReachableDir("")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(reachable, "docrender-nouserns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	bin := filepath.Join(dir, noUserNSName)
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, self); err != nil {
		t.Fatal(err)
	}
	out.Close()

	var log bytes.Buffer
	p, err := startPool(t, browser.Config{Bin: bin}, &log)
	if err == nil {
		t.Fatalf("started with user namespaces refused (sandboxed=%v)", p.Sandboxed())
	}
	t.Log(err)
	for _, want := range []string{"No usable sandbox", "user namespaces", browser.NoSandboxVar} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
	// The same browser runs when the sandbox is allowed off.
	if _, err := startPool(t, browser.Config{Bin: bin, NoSandbox: true}, &log); err != nil {
		t.Fatalf("without the sandbox: %v", err)
	}
}
