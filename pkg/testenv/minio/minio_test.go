package minio

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// No TestMain here: these tests exercise the per-test server.

func live(addr string) error {
	resp, err := http.Get("http://" + addr + "/minio/health/live")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func TestStartStop(t *testing.T) {
	var endpoint string
	t.Run("start", func(t *testing.T) {
		began := time.Now()
		cfg := Start(t)
		t.Logf("MinIO ready after %v", time.Since(began).Round(time.Millisecond))
		if !strings.HasPrefix(cfg.Endpoint, "127.0.0.1:") || cfg.UseSSL {
			t.Fatalf("config %+v: want plain HTTP on loopback", cfg)
		}
		if err := live(cfg.Endpoint); err != nil {
			t.Fatal(err)
		}
		if other := Start(t); other.Endpoint == cfg.Endpoint || other.Bucket == cfg.Bucket {
			t.Fatalf("two Starts share %s / %s", cfg.Endpoint, cfg.Bucket)
		}
		endpoint = cfg.Endpoint
	})
	if endpoint == "" {
		t.SkipNow()
	}
	// The subtest's cleanup stopped the server.
	if err := live(endpoint); err == nil {
		t.Fatalf("server on %s still answers after cleanup", endpoint)
	}
}

// recorder stands in for a test to see whether Start skips or fails.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func startWith(r *recorder) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(r)
	}()
	<-done
}

func TestMissingBinary(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("DOCRENDER_CACHE", cache)
	want := filepath.Join(cache, "bin", "minio")
	if BinaryPath() != want {
		t.Fatalf("BinaryPath() = %s, want %s", BinaryPath(), want)
	}

	t.Setenv("CI", "")
	r := &recorder{}
	startWith(r)
	if !r.skipped || r.failed || !strings.Contains(r.msg, "scripts/setup --test") {
		t.Fatalf("outside CI: skipped=%v failed=%v %q", r.skipped, r.failed, r.msg)
	}

	t.Setenv("CI", "true")
	r = &recorder{}
	startWith(r)
	if !r.failed || r.skipped {
		t.Fatalf("CI=true: skipped=%v failed=%v %q", r.skipped, r.failed, r.msg)
	}

	// A file that is not executable counts as missing.
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = &recorder{}
	startWith(r)
	if !r.failed {
		t.Fatalf("non-executable binary under CI=true: %q", r.msg)
	}
}
