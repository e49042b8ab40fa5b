package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/testenv/freeport"

	"github.com/docrender/docrender/bench/internal/benchapi"
)

// memory runs an n-document batch in the scaled-out setup and reports the
// peak resident memory of the gateway and of each worker process (and,
// apart, of each worker's Chromium).
func memory(n int, binDir string) error {
	natsURL := envOr("DOCRENDER_BENCH_NATS_URL", "nats://127.0.0.1:4222")
	redisURL := envOr("DOCRENDER_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
	ns := "bench" + strings.ToLower(rand.Text()[:8])
	defer dropNamespace(natsURL, ns)
	dir, err := os.MkdirTemp("", "docrender-benchmem-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := freeport.Addr()
	if err != nil {
		return err
	}
	base := "http://" + addr
	env := []string{
		"DOCRENDER_NATS_URL=" + natsURL, "DOCRENDER_REDIS_URL=" + redisURL, "DOCRENDER_QUEUE_NAMESPACE=" + ns,
		"DOCRENDER_DATA_DIR=" + dir, "DOCRENDER_ADDR=" + addr, "DOCRENDER_BASE_URL=" + base,
		"DOCRENDER_PLAN_HOBBY_CONVERSIONS=100000000", "DOCRENDER_PLAN_HOBBY_CONCURRENCY=100000", "DOCRENDER_PLAN_HOBBY_RATE=100000",
		"DOCRENDER_PLAN_HOBBY_MAX_BATCH=" + strconv.Itoa(n),
		"DOCRENDER_LOG_LEVEL=warn",
	}
	procs := []*proc{}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	gw, err := startProc("gateway", filepath.Join(binDir, "gateway"), env)
	if err != nil {
		return err
	}
	procs = append(procs, gw)
	if err := waitReady(base); err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		// Each worker's own ops listener on a free port.
		wenv := append(env, "DOCRENDER_WORKER_ADDR=127.0.0.1:0")
		w, err := startProc(fmt.Sprintf("worker %d", i), filepath.Join(binDir, "worker"), wenv)
		if err != nil {
			return err
		}
		procs = append(procs, w)
	}
	c, err := benchapi.New(base)
	if err != nil {
		return err
	}
	start := time.Now()
	var started struct {
		BatchID string `json:"batchId"`
	}
	if err := c.PostJSON("/pdf/generate-batch", "", batchRequest(n, true), &started); err != nil {
		return err
	}
	for {
		for _, p := range procs {
			p.sample()
		}
		b, err := c.Get("/pdf/progress/" + started.BatchID)
		if err != nil {
			return err
		}
		var pr struct{ Status, Message string }
		_ = json.Unmarshal(b, &pr)
		if pr.Status == "error" {
			return fmt.Errorf("batch failed: %s", pr.Message)
		}
		if pr.Status == "completed" {
			break
		}
		time.Sleep(time.Second)
	}
	took := time.Since(start)
	zip, err := c.Get("/pdf/download/" + started.BatchID)
	if err != nil {
		return err
	}
	for _, p := range procs {
		p.sample()
	}
	if err := benchapi.CheckZip(zip, n); err != nil {
		return err
	}
	fmt.Printf("\ndocrender batch memory: %d documents, scaled out (bin/gateway + 2 bin/worker, NATS %s, Redis), %s, %.2f PDFs/s, ZIP %.1f MB\n",
		n, natsURL, took.Round(time.Second), rate(n, took), float64(len(zip))/1e6)
	fmt.Printf("%-10s | %-14s | %s\n", "process", "peak RSS", "its Chromium: peak PSS summed over its processes")
	for _, p := range procs {
		fmt.Printf("%-10s | %8.1f MB    | %8.1f MB\n", p.name, float64(p.peak())/1e6, float64(p.childPeak)/1e6)
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func waitReady(base string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready (are NATS and Redis running? scripts/setup --test starts them)", base)
}

func dropNamespace(url, ns string) {
	nc, err := nats.Connect(url)
	if err != nil {
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	names := queue.NamesFor(ns)
	_ = js.DeleteStream(ctx, names.Stream)
	_ = js.DeleteStream(ctx, names.WebhookStream)
}

// proc is a started binary whose memory is sampled.
type proc struct {
	name      string
	cmd       *exec.Cmd
	childPeak int64
}

func startProc(name, bin string, env []string) (*proc, error) {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &proc{name: name, cmd: cmd}, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// peak is the process's own high-water mark of resident memory (VmHWM).
func (p *proc) peak() int64 { return statusKB(p.cmd.Process.Pid, "VmHWM:") * 1024 }

// sample records the current memory of the process's descendants
// (Chromium): proportional set size, so pages its processes share are
// counted once, not once per process.
func (p *proc) sample() {
	var sum int64
	for _, pid := range descendants(p.cmd.Process.Pid) {
		sum += procKB(pid, "smaps_rollup", "Pss:") * 1024
	}
	p.childPeak = max(p.childPeak, sum)
}

func statusKB(pid int, field string) int64 { return procKB(pid, "status", field) }

// procKB reads a "<field> <n> kB" line of /proc/<pid>/<file>.
func procKB(pid int, file, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb
		}
	}
	return 0
}

// descendants lists every process below pid (not pid itself).
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", id))
		if err != nil {
			continue
		}
		// The command name may hold spaces: the fields after its closing paren are fixed.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			ppid, _ := strconv.Atoi(fields[1])
			children[ppid] = append(children[ppid], id)
		}
	}
	var out []int
	queue := children[pid]
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		out = append(out, id)
		queue = append(queue, children[id]...)
	}
	return out
}
