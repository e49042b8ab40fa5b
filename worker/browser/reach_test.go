package browser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// needRoot skips a test of Chromium's own account: only a worker running
// as root starts Chromium as another user, and only root can hand
// directories to others.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: Chromium runs as another user only when the worker is root")
	}
}

// TestBlockedDir: the walk decides as the kernel does from the mode bits,
// by owner, then group, then others, exclusively.
func TestBlockedDir(t *testing.T) {
	needRoot(t)
	acct := &account{name: "test", uid: 4242, gid: 4343}
	base, err := os.MkdirTemp("/tmp", "docrender-reach-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	mk := func(rel string, mode os.FileMode, uid, gid int) string {
		t.Helper()
		p := filepath.Join(base, rel)
		if err := os.Mkdir(p, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	closed := mk("closed", 0o700, 0, 0)
	open := mk("open", 0o701, 0, 0)
	groupX := mk("groupx", 0o710, 0, 4343)
	groupNoX := mk("groupnox", 0o701, 0, 4343) // others may, the group may not
	ownerNoX := mk("ownernox", 0o077, 4242, 0) // others may, the owner may not
	mine := mk("mine", 0o700, 4242, 0)
	inClosed := mk("closed/inner", 0o777, 0, 0)
	link := filepath.Join(base, "open", "link")
	if err := os.Symlink(inClosed, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, blocked string }{
		{closed, closed},
		{open, ""},
		{groupX, ""},
		{groupNoX, groupNoX},
		{ownerNoX, ownerNoX},
		{mine, ""},
		{inClosed, closed},
		{link, closed},
	} {
		got, err := acct.blockedDir(tt.path)
		if err != nil || got != tt.blocked {
			t.Errorf("blockedDir(%s) = %q, %v; want %q", tt.path, got, err, tt.blocked)
		}
	}
}

// TestProfileRootSaysWhy: with TMPDIR and every fallback closed to
// Chromium's user, the start fails naming the directories, the user and
// the settings that fix it; with a fallback open, the profile goes there
// and the warning says why.
func TestProfileRootSaysWhy(t *testing.T) {
	needRoot(t)
	acct := &account{name: "nobody", uid: 65534, gid: 65534}
	closed := func() string {
		d, err := os.MkdirTemp("/tmp", "docrender-closed-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d // 0700, root's
	}
	tmpdir, other := closed(), closed()

	_, _, err := profileRoot(acct, tmpdir, other, "/no/such/dir")
	if err == nil {
		t.Fatal("no error with every directory closed")
	}
	t.Log(err)
	for _, want := range []string{"user nobody", "cannot enter " + tmpdir + " (TMPDIR)", "nor " + other, "set TMPDIR", "DOCRENDER_CHROMIUM_USER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}

	// Closed above TMPDIR: named as on the way to it.
	inner := filepath.Join(tmpdir, "inner")
	if err := os.Mkdir(inner, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, _, err := profileRoot(acct, inner); err == nil || !strings.Contains(err.Error(), "cannot enter "+tmpdir+" (on the way to TMPDIR "+inner+")") {
		t.Errorf("closed above TMPDIR: %v", err)
	}

	root, warning, err := profileRoot(acct, tmpdir, other, "/tmp")
	if err != nil || root != "/tmp" {
		t.Fatalf("profileRoot = %q, %v; want /tmp", root, err)
	}
	for _, want := range []string{"user nobody", tmpdir, "/tmp", "set TMPDIR", "DOCRENDER_CHROMIUM_USER"} {
		if !strings.Contains(warning, want) {
			t.Errorf("warning lacks %q: %s", want, warning)
		}
	}
	if root, warning, err := profileRoot(acct, "/tmp", tmpdir); root != "/tmp" || warning != "" || err != nil {
		t.Errorf("an open TMPDIR: %q, %q, %v", root, warning, err)
	}
}
