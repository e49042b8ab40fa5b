package e2e

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slowPage keeps the renderer busy for a while, so the browser can be
// faulted with the job in flight.
const slowPage = `<p>SURVIVED</p><script>const t = Date.now(); while (Date.now() - t < 2500) {}</script>`

func TestBrowserFaultsRetryTheJob(t *testing.T) {
	tests := []struct {
		name   string
		signal syscall.Signal
	}{
		{"crash (SIGKILL)", syscall.SIGKILL},
		{"hang (SIGSTOP)", syscall.SIGSTOP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := startService(t, func(cfg *configT) { cfg.RenderTimeout = 20 * time.Second })
			c := newClient(t, svc)
			pool := svc.Worker.Pool()
			pid := pool.PID()
			go func() {
				time.Sleep(800 * time.Millisecond)
				_ = syscall.Kill(pid, tc.signal)
			}()
			resp := c.generate([]file{htmlFile("index.html", slowPage)}, nil)
			mustStatus(t, resp, http.StatusOK)
			if txt := text(t, readAll(t, resp)); !strings.Contains(txt, "SURVIVED") {
				t.Fatalf("text %q", txt)
			}
			if pool.Restarts() < 1 {
				t.Fatal("browser was not relaunched")
			}
			if pool.PID() == pid {
				t.Fatal("same browser process after the fault")
			}
			if got := c.usage(); got != 1 {
				t.Errorf("conversions counted %d times, want once", got)
			}
			// And the next job runs normally.
			c.generatePDF(simpleHTML, nil)
		})
	}
}
