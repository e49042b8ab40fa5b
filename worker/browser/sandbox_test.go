package browser_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

// startPool starts a one-tab pool with its own egress proxy; log receives
// the pool's messages.
func startPool(t *testing.T, cfg browser.Config, log *bytes.Buffer) (*browser.Pool, error) {
	t.Helper()
	if _, err := browser.FindChromium(""); err != nil {
		t.Skipf("no Chromium: %v", err)
	}
	lg := slog.New(slog.NewTextHandler(log, nil))
	proxy, err := egress.Start(netguard.New(nil), lg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	cfg.Proxy, cfg.HomeURL, cfg.Tabs, cfg.Log = proxy.Addr(), egress.HomeURL, 1, lg
	cfg.NewLane = func() (browser.Lane, error) { return proxy.NewLane() }
	p, err := browser.Start(context.Background(), cfg)
	if err == nil {
		t.Cleanup(p.Close)
	}
	return p, err
}

// proc is what /proc tells of one of the browser's processes.
type proc struct {
	pid     int
	kind    string // --type=, "" for the browser itself
	uid     string
	seccomp string
	userNS  string
}

// browserProcs lists the processes of the browser's process group.
func browserProcs(t *testing.T, pgid int) []proc {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []proc
	for _, d := range dirs {
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		p := proc{pid: pid}
		// Chromium rewrites its children's command lines with spaces.
		cmd, _ := os.ReadFile(d + "/cmdline")
		for _, a := range strings.FieldsFunc(string(cmd), func(r rune) bool { return r == 0 || r == ' ' }) {
			if k, ok := strings.CutPrefix(a, "--type="); ok {
				p.kind = k
			}
		}
		status, _ := os.ReadFile(d + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
				p.seccomp = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				p.uid = strings.Fields(v)[0]
			}
		}
		p.userNS, _ = os.Readlink(d + "/ns/user")
		out = append(out, p)
	}
	return out
}

// renderers returns the renderer processes and the browser process.
func renderers(t *testing.T, p *browser.Pool) (rs []proc, top proc) {
	t.Helper()
	for _, pr := range browserProcs(t, p.PID()) {
		switch {
		case pr.pid == p.PID():
			top = pr
		case pr.kind == "renderer":
			rs = append(rs, pr)
		}
	}
	if top.pid == 0 || len(rs) == 0 {
		t.Fatalf("browser %d: no renderer process found (%+v)", p.PID(), browserProcs(t, p.PID()))
	}
	return rs, top
}

// The sandbox is on by default: every renderer is confined by seccomp-bpf
// (mode 2) in a user namespace of its own, and a worker running as root
// starts Chromium as an unprivileged user.
func TestSandboxIsOnByDefault(t *testing.T) {
	var log bytes.Buffer
	p, err := startPool(t, browser.Config{}, &log)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Sandboxed() {
		t.Fatal("Sandboxed() = false by default")
	}
	rs, top := renderers(t, p)
	for _, r := range rs {
		if r.seccomp != "2" || r.userNS == top.userNS {
			t.Errorf("renderer %d not sandboxed: seccomp %q, user namespace %s (browser's %s)", r.pid, r.seccomp, r.userNS, top.userNS)
		}
	}
	if os.Geteuid() == 0 {
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Fatal(err)
		}
		if top.uid != nobody.Uid {
			t.Errorf("chromium runs as uid %s, want nobody (%s)", top.uid, nobody.Uid)
		}
	}
	if strings.Contains(log.String(), "WITHOUT its sandbox") {
		t.Errorf("warned of no sandbox: %s", log.String())
	}
}

// Without the sandbox, as DOCRENDER_CHROMIUM_NO_SANDBOX allows, the pool
// says so in the log and in Sandboxed (the metric's source); the renderers
// are indeed unconfined, which shows the check above can tell.
func TestNoSandboxIsReported(t *testing.T) {
	var log bytes.Buffer
	p, err := startPool(t, browser.Config{NoSandbox: true}, &log)
	if err != nil {
		t.Fatal(err)
	}
	if p.Sandboxed() {
		t.Fatal("Sandboxed() = true with NoSandbox")
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), browser.NoSandboxVar+"=true") {
		t.Errorf("no warning naming %s in the log: %s", browser.NoSandboxVar, log.String())
	}
	rs, _ := renderers(t, p)
	for _, r := range rs {
		if r.seccomp == "2" {
			t.Errorf("renderer %d has seccomp mode 2 with --no-sandbox", r.pid)
		}
	}
}

// A Chromium that cannot get its sandbox stops the start with an error that
// says what is missing and names the setting; it never falls back to
// running without. As root, DOCRENDER_CHROMIUM_USER=root is such a case:
// Chromium refuses its sandbox to root.
func TestSandboxMissingFailsLoudly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: Chromium refuses its sandbox only to root")
	}
	var log bytes.Buffer
	p, err := startPool(t, browser.Config{User: "root"}, &log)
	if err == nil {
		t.Fatalf("started without its sandbox (sandboxed=%v)", p.Sandboxed())
	}
	t.Log(err)
	for _, want := range []string{browser.NoSandboxVar, "root", "user namespaces"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(log.String(), "chromium started") {
		t.Errorf("a browser started: %s", log.String())
	}
}
