package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/testenv/freeport"
	"github.com/docrender/docrender/pkg/testenv/syncbuf"
)

// External services of the machine (scripts/setup --test starts them).
const (
	externalNATS  = "nats://127.0.0.1:4222"
	externalRedis = "redis://127.0.0.1:6379/0"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// binaries builds bin/gateway and bin/worker once per test binary.
func binaries(t testing.TB) (gateway, worker string) {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "docrender-bin-")
		if binErr != nil {
			return
		}
		cleanups = append(cleanups, func() { os.RemoveAll(binDir) })
		for _, pkg := range []string{"gateway/cmd/gateway", "worker/cmd/worker"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, filepath.Base(pkg)), "./"+pkg)
			cmd.Dir = repoRoot()
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "gateway"), filepath.Join(binDir, "worker")
}

func repoRoot() string {
	wd, _ := os.Getwd()
	for d := wd; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d
		}
	}
	return wd
}

func freePort(t testing.TB) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// proc is a started docrender process with its output kept for failures.
type proc struct {
	cmd *exec.Cmd
	out *syncBuffer
}

type syncBuffer = syncbuf.Buffer

// startProc runs bin with env added to the environment; it is killed with the test.
func startProc(t testing.TB, bin string, env map[string]string) *proc {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &proc{cmd: cmd, out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), tail(p.out.String(), 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitReady polls /readyz until it answers 200.
func waitReady(t testing.TB, url string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready:\n%s", url, tail(p.out.String(), 3000))
}

// namespace returns a fresh queue namespace on the machine's NATS, deleted
// with the test, so runs never see each other's jobs.
func namespace(t testing.TB) string {
	t.Helper()
	ns := "t" + strings.ToLower(rand.Text()[:10])
	t.Cleanup(func() {
		nc, err := nats.Connect(externalNATS)
		if err != nil {
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		n := queue.NamesFor(ns)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, n.Stream)
		_ = js.DeleteStream(ctx, n.WebhookStream)
	})
	return ns
}

// startSplitGateway starts bin/gateway alone (no workers) on a free port,
// against the machine's NATS and Redis under ns, and waits until it is ready.
func startSplitGateway(t testing.TB, ns, dataDir string) (url string, gw *proc) {
	t.Helper()
	gwBin, _ := binaries(t)
	addr := freePort(t)
	url = "http://" + addr
	gw = startProc(t, gwBin, splitEnv(ns, dataDir, map[string]string{"DOCRENDER_ADDR": addr, "DOCRENDER_BASE_URL": url}))
	waitReady(t, url, gw)
	return url, gw
}

// splitEnv is the environment of a scaled-out process on the machine's services.
func splitEnv(ns, dataDir string, extra map[string]string) map[string]string {
	env := map[string]string{
		"DOCRENDER_NATS_URL":        externalNATS,
		"DOCRENDER_REDIS_URL":       externalRedis,
		"DOCRENDER_QUEUE_NAMESPACE": ns,
		"DOCRENDER_DATA_DIR":        dataDir,
		"DOCRENDER_WORKERS":         "2",
		"DOCRENDER_RENDER_TIMEOUT":  "15s",
		// Any free port: several workers run at once (tests override it
		// when they probe the worker).
		"DOCRENDER_WORKER_ADDR": "127.0.0.1:0",
		// Test users all sign up from 127.0.0.1.
		"DOCRENDER_AUTH_ATTEMPTS_PER_MINUTE": "100000",
		// Tests drive one account hard.
		"DOCRENDER_PLAN_HOBBY_CONCURRENCY": "100000",
		"DOCRENDER_PLAN_HOBBY_RATE":        "100000",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}
