package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cluster is docrender scaled out by scripts/cluster-up: two bin/gateway
// and three bin/worker processes on the machine's NATS and Redis, with a
// MinIO of its own. The processes are not the test's children; they are
// found and faulted through what the script records (.cluster/env).
type cluster struct {
	dir        string
	env        map[string]string
	gateways   []*service
	workerPIDs []int
	workerURLs []string
}

// clusterUp runs scripts/cluster-up in a directory of the test's own and
// scripts/cluster-down when the test ends.
func clusterUp(t *testing.T) *cluster {
	t.Helper()
	cl := &cluster{dir: t.TempDir()}
	t.Cleanup(func() {
		if t.Failed() {
			cl.dumpLogs(t)
		}
		if out, err := cl.script("cluster-down"); err != nil {
			t.Errorf("cluster-down: %v\n%s", err, out)
		}
	})
	cl.up(t)
	return cl
}

// script runs one of the cluster scripts on this cluster's directory.
func (cl *cluster) script(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(), "scripts", name))
	// Test users all sign up from 127.0.0.1.
	cmd.Env = append(os.Environ(), "DOCRENDER_CLUSTER_DIR="+cl.dir, "DOCRENDER_AUTH_ATTEMPTS_PER_MINUTE=100000",
		"DOCRENDER_PLAN_HOBBY_CONCURRENCY=100000", "DOCRENDER_PLAN_HOBBY_RATE=100000")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// up runs cluster-up (again: it restarts what died) and reads the env file.
func (cl *cluster) up(t *testing.T) {
	t.Helper()
	start := time.Now()
	if out, err := cl.script("cluster-up"); err != nil {
		t.Fatalf("cluster-up: %v\n%s", err, out)
	}
	t.Logf("cluster-up took %s", time.Since(start).Round(100*time.Millisecond))
	cl.readEnv(t)
}

func (cl *cluster) readEnv(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cl.dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	cl.env = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("env line %q is not KEY=VALUE", line)
		}
		cl.env[k] = v
	}
	for _, k := range []string{"GATEWAY_URLS", "WORKER_PIDS", "NATS_URL", "REDIS_URL", "S3_ENDPOINT"} {
		if cl.env[k] == "" {
			t.Fatalf("env has no %s:\n%s", k, b)
		}
	}
	cl.gateways = nil
	for _, u := range strings.Fields(cl.env["GATEWAY_URLS"]) {
		cl.gateways = append(cl.gateways, &service{URL: u})
	}
	cl.workerPIDs = nil
	for _, p := range strings.Fields(cl.env["WORKER_PIDS"]) {
		pid, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("WORKER_PIDS %q", cl.env["WORKER_PIDS"])
		}
		cl.workerPIDs = append(cl.workerPIDs, pid)
	}
	cl.workerURLs = strings.Fields(cl.env["WORKER_URLS"])
}

// gatewayPID is the PID of gateway i (0-based).
func (cl *cluster) gatewayPID(t *testing.T, i int) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.Fields(cl.env["GATEWAY_PIDS"])[i])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// workerLog is worker i's output so far.
func (cl *cluster) workerLog(i int) string {
	b, _ := os.ReadFile(filepath.Join(cl.dir, "logs", fmt.Sprintf("worker-%d.log", i+1)))
	return string(b)
}

func (cl *cluster) dumpLogs(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(cl.dir, "logs", "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("%s:\n%s", filepath.Base(l), tail(string(b), 3000))
	}
}

// procState is the state letter of pid in /proc (R, S, T, Z, ...), or ""
// when there is no such process.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The fields after the command name, which is in parentheses.
	s := string(b)
	if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 {
		return f[0]
	}
	return ""
}

// processGone reports whether pid has exited (a zombie counts: these
// processes are not the test's children, so it cannot reap them).
func processGone(pid int) bool {
	st := procState(pid)
	return st == "" || st == "Z"
}

// signalAndWait sends sig to pid and waits until it has exited.
func signalAndWait(t *testing.T, pid int, sig syscall.Signal, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	eventually(t, limit, fmt.Sprintf("pid %d to exit after %s", pid, sig), func() bool { return processGone(pid) })
	return time.Since(start)
}

// procStat is one process of /proc: its session, parent and command line.
type procStat struct {
	pid, ppid, sid int
	cmdline        []string
}

func readProc(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 4 || f[0] == "Z" {
		return procStat{}, false
	}
	ps := procStat{pid: pid}
	ps.ppid, _ = strconv.Atoi(f[1])
	ps.sid, _ = strconv.Atoi(f[3])
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	ps.cmdline = strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	return ps, true
}

// descendants lists the live processes below root.
func descendants(root int) []procStat {
	entries, _ := os.ReadDir("/proc")
	byParent := map[int][]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ps, ok := readProc(pid); ok {
			byParent[ps.ppid] = append(byParent[ps.ppid], ps)
		}
	}
	var out []procStat
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range byParent[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// chromiumOf finds the browser process (not a renderer, GPU or utility
// child) that the worker process pid drives: a descendant whose program is
// Chromium and that has no --type= argument.
func chromiumOf(t *testing.T, pid int) int {
	t.Helper()
	for _, ps := range descendants(pid) {
		if len(ps.cmdline) == 0 || !strings.Contains(filepath.Base(ps.cmdline[0]), "chrom") {
			continue
		}
		isChild := false
		for _, a := range ps.cmdline[1:] {
			if strings.HasPrefix(a, "--type=") {
				isChild = true
			}
		}
		if !isChild {
			return ps.pid
		}
	}
	t.Fatalf("no Chromium browser process below pid %d", pid)
	return 0
}

// on is the same user talking to another gateway.
func (c *client) on(svc *service) *client {
	cp := *c
	cp.svc = svc
	return &cp
}

// sseFollow reads a batch's progress stream the way a browser's
// EventSource does: when the stream closes (or breaks) before a complete
// or error event, it reconnects, here to the next gateway in turn. It
// returns every event and the index of each gateway it read from. It runs
// in a goroutine of its own, so it reports failure as an error.
func sseFollow(gws []*service, key, id string, first int, opened chan<- struct{}) ([]sseEvent, []int, error) {
	var events []sseEvent
	var used []int
	deadline := time.Now().Add(3 * time.Minute)
	for i := first; time.Now().Before(deadline); i = (i + 1) % len(gws) {
		used = append(used, i)
		evs, _ := readStream(gws[i].URL, key, id, opened)
		if len(evs) > 0 {
			opened = nil // closed by readStream
		}
		events = append(events, evs...)
		if n := len(events); n > 0 && (events[n-1].Name == "complete" || events[n-1].Name == "error") {
			return events, used, nil
		}
		time.Sleep(200 * time.Millisecond) // an EventSource waits its retry time too
	}
	return events, used, fmt.Errorf("no final event within 3 minutes after %d events", len(events))
}

// readStream reads one connection's events until it closes or breaks; it
// never fails the test on a broken connection (that is what is faulted).
func readStream(base, key, id string, opened chan<- struct{}) ([]sseEvent, error) {
	req, err := http.NewRequest("GET", base+"/pdf/progress/"+id+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur = sseEvent{Name: strings.TrimPrefix(line, "event: ")}
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				return events, fmt.Errorf("data line %q: %w", line, err)
			}
		case line == "":
			cur.At = time.Now()
			events = append(events, cur)
			if opened != nil {
				close(opened)
				opened = nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return events, err
	}
	return events, errors.New("closed by the server")
}
