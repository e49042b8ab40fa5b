package browser_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docrender/docrender/worker/browser"
)

// closedDir is a new directory of root's, mode 0700, in /tmp: closed to
// Chromium's user.
func closedDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: Chromium runs as another user only when the worker is root")
	}
	d, err := os.MkdirTemp("/tmp", "docrender-closed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// A worker whose TMPDIR Chromium's user cannot enter still starts its
// browser: the profile goes where that user can reach, and the log says
// why. (It used to die with "fork/exec ...: permission denied".)
func TestChromiumStartsWithTMPDIRClosedToItsUser(t *testing.T) {
	closed := closedDir(t)
	t.Setenv("TMPDIR", closed)
	var log bytes.Buffer
	p, err := startPool(t, browser.Config{}, &log)
	if err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", p.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(cwd, closed) {
		t.Errorf("chromium's directory %s is in the closed TMPDIR", cwd)
	}
	for _, want := range []string{"level=WARN", "user nobody", "cannot enter " + closed, "TMPDIR", "DOCRENDER_CHROMIUM_USER"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q: %s", want, log.String())
		}
	}
}

// A browser its user cannot reach fails the start with an error naming the
// directory, the user and the settings, not a bare "permission denied".
func TestChromiumOutOfItsUsersReachSaysWhy(t *testing.T) {
	closed := closedDir(t)
	chromium, err := browser.FindChromium("")
	if err != nil {
		t.Skipf("no Chromium: %v", err)
	}
	bin := filepath.Join(closed, "chromium")
	if err := os.Symlink(chromium, bin); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err = startPool(t, browser.Config{Bin: bin}, &log); err == nil {
		t.Fatal("started a browser its user cannot reach")
	}
	t.Log(err)
	for _, want := range []string{"user nobody", "cannot enter " + closed, "DOCRENDER_CHROMIUM_PATH", "DOCRENDER_CHROMIUM_USER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
}
