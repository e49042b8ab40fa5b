package browser

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// NoSandboxVar is the setting that lets Chromium run without its sandbox.
const NoSandboxVar = "DOCRENDER_CHROMIUM_NO_SANDBOX"

// startTimeout bounds a launch: Chromium prints its DevTools address within
// a second or two when it starts at all.
const startTimeout = 30 * time.Second

// account is who Chromium runs as; nil means the worker's own user.
type account struct {
	name     string
	uid, gid uint32
}

// chromiumAccount is the account Chromium runs as. Chromium refuses its
// sandbox to root, so a worker running as root starts it as name (an
// unprivileged account, "nobody" by default) instead; any other worker
// starts it as itself.
func chromiumAccount(name string) (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	if name == "" {
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("browser: DOCRENDER_CHROMIUM_USER %q: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("browser: DOCRENDER_CHROMIUM_USER %q: %w", name, err)
	}
	return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// may reports whether a has permission bit (4 read, 2 write, 1 execute or
// search) on the file fi describes, as the kernel decides from the mode
// bits for a's uid and gid alone: Chromium gets no supplementary groups.
// ACLs are not read.
func (a *account) may(fi fs.FileInfo, bit fs.FileMode) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if a.uid == 0 || !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == a.uid:
		return perm&(bit<<6) != 0
	case st.Gid == a.gid:
		return perm&(bit<<3) != 0
	}
	return perm&bit != 0
}

// blockedDir returns the first directory on the way to path (path itself
// too, when it is a directory) that a cannot enter; "" when a can reach
// path. Both the path as written and the one its symbolic links lead to
// are walked, as the kernel walks both.
func (a *account) blockedDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	for _, p := range []string{abs, resolved} {
		var dirs []string
		for d := p; ; d = filepath.Dir(d) {
			dirs = append(dirs, d)
			if d == filepath.Dir(d) {
				break
			}
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			fi, err := os.Stat(dirs[i])
			if err != nil {
				return "", err
			}
			if !fi.IsDir() {
				break
			}
			if !a.may(fi, 1) {
				return dirs[i], nil
			}
		}
	}
	return "", nil
}

// checkBinary says, before a launch, why acct could not run bin: a
// directory on the way it cannot enter, or the file's mode. Started
// anyway, the child would fail with a bare "permission denied".
func (a *account) checkBinary(bin string) error {
	blocked, err := a.blockedDir(bin)
	if err != nil {
		return fmt.Errorf("browser: %s: %w", bin, err)
	}
	if blocked != "" {
		return fmt.Errorf("browser: chromium runs as user %s, which cannot enter %s on the way to %s: "+
			"install the browser where %s can reach it (DOCRENDER_CHROMIUM_PATH), or set DOCRENDER_CHROMIUM_USER to a user who can",
			a.name, blocked, bin, a.name)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return fmt.Errorf("browser: %s: %w", bin, err)
	}
	if !a.may(fi, 1) {
		return fmt.Errorf("browser: chromium runs as user %s, which may not run %s (mode %s): "+
			"make it executable by %s (DOCRENDER_CHROMIUM_PATH), or set DOCRENDER_CHROMIUM_USER to a user who may",
			a.name, bin, fi.Mode(), a.name)
	}
	return nil
}

// profileRoot is where Chromium's directories are made: tmpdir (the
// worker's TMPDIR) when acct can reach it, else the first of fallbacks it
// can reach, with a warning saying so. The worker's own TMPDIR may well be
// closed to others (a root-only /root/tmp), and Chromium, as acct, must
// enter its directory. Without acct, the worker makes and runs in tmpdir.
func profileRoot(acct *account, tmpdir string, fallbacks ...string) (root, warning string, err error) {
	if acct == nil {
		return tmpdir, "", nil
	}
	var refused []string
	for i, dir := range append([]string{tmpdir}, fallbacks...) {
		blocked, err := acct.blockedDir(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist) && i > 0:
			continue
		case err != nil:
			return "", "", fmt.Errorf("browser: directory for chromium's profile: %w", err)
		case blocked == "" && i == 0:
			return dir, "", nil
		case blocked == "":
			return dir, fmt.Sprintf("chromium runs as user %s, which cannot enter %s: its profile goes under %s instead; "+
				"set TMPDIR to a directory %s can reach, or DOCRENDER_CHROMIUM_USER to a user who can reach TMPDIR",
				acct.name, strings.Join(refused, ", nor "), dir, acct.name), nil
		}
		name := ""
		if i == 0 {
			name = "TMPDIR"
		}
		switch {
		case blocked == dir && name != "":
			refused = append(refused, fmt.Sprintf("%s (%s)", dir, name))
		case blocked == dir:
			refused = append(refused, dir)
		default:
			refused = append(refused, fmt.Sprintf("%s (on the way to %s)", blocked, strings.TrimSpace(name+" "+dir)))
		}
	}
	return "", "", fmt.Errorf("browser: chromium runs as user %s, which cannot enter %s: "+
		"set TMPDIR to a directory %s can reach (every directory on the way searchable by it, as /tmp usually is), "+
		"or DOCRENDER_CHROMIUM_USER to a user who can reach TMPDIR", acct.name, strings.Join(refused, ", nor "), acct.name)
}

// defaultProfileRoot is profileRoot for the worker's TMPDIR, falling back
// on the usual temporary directories, open to all.
func defaultProfileRoot(acct *account) (root, warning string, err error) {
	return profileRoot(acct, os.TempDir(), "/tmp", "/var/tmp")
}

// process is one running Chromium: a process group of its own, with a
// directory of its own as its home, profile and temporary files.
type process struct {
	cmd    *exec.Cmd
	dir    string
	exited chan struct{}
}

// startChromium runs bin with args as acct (nil: as the worker), in a new
// directory under root (profileRoot), and returns the process and its
// DevTools WebSocket address.
func startChromium(bin string, args []string, acct *account, root string) (*process, string, error) {
	if acct != nil {
		if err := acct.checkBinary(bin); err != nil {
			return nil, "", err
		}
	}
	dir, err := os.MkdirTemp(root, "docrender-chromium-")
	if err != nil {
		return nil, "", fmt.Errorf("browser: profile dir: %w", err)
	}
	attr := &syscall.SysProcAttr{
		// Kill reaches the whole tree (zygotes, renderers, GPU process).
		Setpgid: true,
		// A worker that dies without Close takes its browser along.
		Pdeathsig: syscall.SIGKILL,
	}
	if acct != nil {
		if err := os.Chown(dir, int(acct.uid), int(acct.gid)); err != nil {
			os.RemoveAll(dir)
			return nil, "", fmt.Errorf("browser: profile dir for %s: %w", acct.name, err)
		}
		attr.Credential = &syscall.Credential{Uid: acct.uid, Gid: acct.gid, Groups: []uint32{}}
	}
	cmd := exec.Command(bin, append(args, "--user-data-dir="+filepath.Join(dir, "profile"))...)
	cmd.Dir = dir
	cmd.Env = chromiumEnv(dir)
	cmd.SysProcAttr = attr
	// A pipe of our own rather than StderrPipe: Wait must not close it while
	// the address or an error is being read.
	r, w, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		os.RemoveAll(dir)
		if acct != nil && errors.Is(err, fs.ErrPermission) {
			// The checks above read the mode bits; ACLs, a noexec mount or
			// a security module can refuse what those allow.
			return nil, "", fmt.Errorf("browser: start %s as user %s, who must be able to run it and enter %s: %w", bin, acct.name, dir, err)
		}
		return nil, "", fmt.Errorf("browser: start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, dir: dir, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	found, drained := make(chan string, 1), make(chan struct{})
	tail := &lines{}
	go func() {
		defer close(drained)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if m := devtoolsRe.FindStringSubmatch(line); m != nil {
				found <- m[1]
				break
			}
			tail.add(line)
		}
		// Keep draining: a full pipe would block Chromium's logging.
		io.Copy(io.Discard, r)
	}()
	select {
	case u := <-found:
		return p, u, nil
	case <-p.exited:
		select {
		case <-drained: // all it printed, its children gone too
		case <-time.After(2 * time.Second):
		}
		p.Kill()
		p.Cleanup()
		return nil, "", fmt.Errorf("browser: %s exited at start (%s): %s", bin, cmd.ProcessState, tail)
	case <-time.After(startTimeout):
		p.Kill()
		p.Cleanup()
		return nil, "", fmt.Errorf("browser: %s printed no DevTools address in %s: %s", bin, startTimeout, tail)
	}
}

var devtoolsRe = regexp.MustCompile(`^DevTools listening on (ws://\S+)`)

// chromiumEnv is the environment Chromium gets: enough to find its
// libraries, fonts and locale, with dir as its home and temporary folder,
// and none of the worker's credentials.
func chromiumEnv(dir string) []string {
	env := []string{"HOME=" + dir, "TMPDIR=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, ".cache")}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "LANG", k == "LANGUAGE", k == "TZ", k == "LD_LIBRARY_PATH",
			strings.HasPrefix(k, "LC_"), strings.HasPrefix(k, "FONTCONFIG_"):
			env = append(env, kv)
		}
	}
	return env
}

// PID is the browser process's ID.
func (p *process) PID() int { return p.cmd.Process.Pid }

// Kill kills the browser and every process it started.
func (p *process) Kill() {
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	_ = p.cmd.Process.Kill()
}

// Cleanup waits for the killed browser to exit, then removes its directory.
func (p *process) Cleanup() {
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
	_ = os.RemoveAll(p.dir)
}

// lines keeps the last few lines Chromium printed, for errors.
type lines struct {
	mu  sync.Mutex
	buf []string
}

func (l *lines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 12 {
		l.buf = l.buf[1:]
	}
	l.buf = append(l.buf, s)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.buf, " | ")
}

// sandboxHelp explains, for a launch with the sandbox that failed, what the
// sandbox needs and which of it this machine lacks.
func sandboxHelp(acct *account) string {
	var missing []string
	if acct != nil && acct.uid == 0 {
		missing = append(missing, "DOCRENDER_CHROMIUM_USER is root, to whom Chromium refuses its sandbox")
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if read("/proc/sys/user/max_user_namespaces") == "0" {
		missing = append(missing, "user namespaces are off (user.max_user_namespaces=0)")
	}
	if read("/proc/sys/kernel/unprivileged_userns_clone") == "0" {
		missing = append(missing, "unprivileged user namespaces are off (kernel.unprivileged_userns_clone=0)")
	}
	if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
		missing = append(missing, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)")
	}
	if len(missing) == 0 {
		missing = append(missing, "this kernel allows user namespaces, so something refuses them to Chromium: "+
			"a container's seccomp profile (Docker's and containerd's defaults refuse clone and unshare of user namespaces) or AppArmor")
	}
	return "Chromium could not get its sandbox, which needs a non-root user and unprivileged user namespaces: " +
		strings.Join(missing, "; ") + ". See deploy/README.md, or set " + NoSandboxVar + "=true to run Chromium without its sandbox"
}

// chromiumArgs are Chromium's switches; --user-data-dir is added at start.
func chromiumArgs(proxy string, sandbox bool) []string {
	args := []string{
		"--headless",
		"--remote-debugging-port=0",
		"--no-first-run",
		"--no-startup-window",
		"--no-default-browser-check",
		"--disable-gpu",
		"--disable-quic",
		"--disable-component-update",
		"--disable-extensions",
		"--disable-background-networking",
		"--disable-background-timer-throttling",
		"--disable-backgrounding-occluded-windows",
		"--disable-breakpad",
		"--disable-client-side-phishing-detection",
		"--disable-component-extensions-with-background-pages",
		"--disable-default-apps",
		"--disable-dev-shm-usage",
		"--disable-hang-monitor",
		"--disable-ipc-flooding-protection",
		"--disable-prompt-on-repost",
		"--disable-renderer-backgrounding",
		"--disable-sync",
		// RenderDocument gives every new document a new frame host, in the
		// browser and the renderer: half of Chromium's CPU per navigation
		// (a job's and the park's after it; docs/benchmarks.md, session 9).
		// Without it a tab's frame is reused across its documents, as
		// Chromium long did. The jobs of a tab share its renderer process
		// either way, and what a job can leave in the tab is cleaned either
		// way (Pool.clean; e2e TestCleanedTabsKeepNoState).
		"--disable-features=site-per-process,TranslateUI,RenderDocument",
		"--disable-site-isolation-trials",
		"--enable-features=NetworkService,NetworkServiceInProcess",
		"--enable-automation",
		"--force-color-profile=srgb",
		"--metrics-recording-only",
		"--use-mock-keychain",
		"--hide-scrollbars",
		"--mute-audio",
		// Every request goes to the egress proxy, loopback included (by
		// default Chromium bypasses proxies for it).
		"--proxy-server=http://" + proxy,
		"--proxy-bypass-list=<-loopback>",
		// WebRTC may use only the proxy: no UDP (STUN, TURN, host
		// candidates) and TURN over TCP through the proxy, whose rules
		// refuse what they refuse to any request. Without a value the
		// switch sets the default policy, which sends STUN anywhere.
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		// Chromium itself never needs a name resolved (the proxy resolves,
		// under its rules): a DNS query from it, a prefetch say, could only
		// carry data out. The proxy's own address is the exception.
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
	}
	if !sandbox {
		args = append(args, "--no-sandbox")
	}
	return args
}
