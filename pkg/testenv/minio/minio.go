// Package minio runs a real MinIO server for tests, from the pinned binary
// that `scripts/setup --test` builds into
// ${DOCRENDER_CACHE:-$HOME/.cache/docrender}/bin/minio.
//
// A test calls Start and gets an s3blob.Config with a bucket name of its
// own (not yet created). By default each Start launches a server that the
// test's cleanup stops. A package whose TestMain calls Main shares one
// server among all its tests instead, stopped when the tests end:
//
//	func TestMain(m *testing.M) { minio.Main(m) }
package minio

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/blob/s3blob"
	"github.com/docrender/docrender/pkg/testenv/freeport"
)

// Credentials of every server started here; loopback only, never secret.
const (
	RootUser     = "docrender-test"
	RootPassword = "docrender-test-secret"
)

const (
	readyTimeout = 60 * time.Second
	stopTimeout  = 10 * time.Second
	logLimit     = 64 << 10
)

// BinaryPath is where scripts/setup --test puts the MinIO server.
func BinaryPath() string {
	cache := os.Getenv("DOCRENDER_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "."
		}
		cache = filepath.Join(home, ".cache", "docrender")
	}
	return filepath.Join(cache, "bin", "minio")
}

// shared is the server of a package whose TestMain calls Main.
var shared struct {
	sync.Mutex
	enabled bool
	srv     *server
	dir     string
	err     error
}

// Main runs the tests with one MinIO shared by every Start of the package,
// started on first use and stopped after the last test, then exits.
func Main(m *testing.M) {
	os.Exit(runShared(m))
}

func runShared(m *testing.M) int {
	shared.Lock()
	shared.enabled = true
	shared.Unlock()
	defer func() {
		shared.Lock()
		defer shared.Unlock()
		if shared.srv != nil {
			shared.srv.stop()
		}
		if shared.dir != "" {
			os.RemoveAll(shared.dir)
		}
	}()
	return m.Run()
}

// Start returns the address and credentials of a running MinIO and a fresh
// bucket name. Without the binary it skips the test, except under CI=true,
// where a missing server must fail rather than let the suite pass untested.
func Start(t testing.TB) s3blob.Config {
	t.Helper()
	bin, err := findBinary()
	if err != nil {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatalf("minio: %v (CI=true: run `scripts/setup --test` in the CI image)", err)
		}
		t.Skipf("minio: %v; run `scripts/setup --test` to build it", err)
	}

	var srv *server
	shared.Lock()
	if shared.enabled {
		if shared.srv == nil && shared.err == nil {
			shared.dir, shared.err = os.MkdirTemp("", "docrender-minio-")
			if shared.err == nil {
				shared.srv, shared.err = start(bin, shared.dir)
			}
		}
		srv, err = shared.srv, shared.err
		shared.Unlock()
		if err != nil {
			t.Fatalf("minio: %v", err)
		}
	} else {
		shared.Unlock()
		srv, err = start(bin, t.TempDir())
		if err != nil {
			t.Fatalf("minio: %v", err)
		}
		t.Cleanup(func() {
			srv.stop()
			if t.Failed() {
				t.Logf("minio output:\n%s", srv.logs.String())
			}
		})
	}
	return s3blob.Config{
		Endpoint:  srv.addr,
		AccessKey: RootUser,
		SecretKey: RootPassword,
		Bucket:    "test-" + strings.ToLower(rand.Text()[:12]),
	}
}

func findBinary() (string, error) {
	bin := BinaryPath()
	st, err := os.Stat(bin)
	if err != nil {
		return "", fmt.Errorf("no server binary at %s", bin)
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", bin)
	}
	return bin, nil
}

type server struct {
	addr string // host:port of the S3 API
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	logs *tailBuffer
}

// start launches a server on free loopback ports. A port found free can be
// taken by someone else before MinIO binds it, so a server that exits during
// startup is retried on new ports.
func start(bin, dir string) (*server, error) {
	var err error
	for range 3 {
		var srv *server
		if srv, err = startOnce(bin, dir); err == nil {
			return srv, nil
		}
	}
	return nil, err
}

func startOnce(bin, dir string) (*server, error) {
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	cmd := exec.Command(bin, "server",
		"--address", addr,
		"--console-address", "127.0.0.1:"+strconv.Itoa(ports[1]),
		// Keep MinIO from creating ~/.minio/certs.
		"--certs-dir", filepath.Join(dir, ".certs"),
		filepath.Join(dir, "data"))
	cmd.Env = append(environWithoutMinio(),
		"MINIO_ROOT_USER="+RootUser,
		"MINIO_ROOT_PASSWORD="+RootPassword,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	logs := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	setParentDeath(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	srv := &server{addr: addr, cmd: cmd, done: make(chan struct{}), logs: logs}
	go func() {
		cmd.Wait()
		close(srv.done)
	}()
	if err := srv.waitReady(); err != nil {
		srv.stop()
		return nil, fmt.Errorf("%w\nminio output:\n%s", err, logs.String())
	}
	return srv, nil
}

// waitReady polls until MinIO serves S3 requests. /minio/health/live is not
// enough: it answers 200 as soon as HTTP is up, while requests still get
// "Server not initialized yet". /minio/health/cluster answers 200 only once
// the object layer, bucket metadata and IAM are initialized.
func (s *server) waitReady() error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	url := "http://" + s.addr + "/minio/health/cluster"
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("server exited during startup: %v", s.cmd.ProcessState)
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("server on %s not ready after %s", s.addr, readyTimeout)
}

// stop asks MinIO to shut down cleanly, then kills it if it lingers.
func (s *server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// environWithoutMinio drops MINIO_* settings of the caller's environment, so
// a developer's own MinIO configuration cannot change the test server.
func environWithoutMinio() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MINIO_") {
			env = append(env, kv)
		}
	}
	return env
}

// tailBuffer keeps the last logLimit bytes of the server's output, for error
// messages, without growing over a long test run.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - logLimit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
