package config

import "testing"

// DOCRENDER_WORKER_ADDR is an addition to DESIGN §2 (docs/decisions.md).
func TestWorkerAddr(t *testing.T) {
	for _, tc := range []struct {
		env, want string
	}{
		{"", ":9090"},
		{"127.0.0.1:0", "127.0.0.1:0"},
		{" :9191 ", ":9191"},
	} {
		c, err := Load(func(k string) string {
			if k == "DOCRENDER_WORKER_ADDR" {
				return tc.env
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		if c.WorkerAddr != tc.want {
			t.Errorf("DOCRENDER_WORKER_ADDR=%q: got %q, want %q", tc.env, c.WorkerAddr, tc.want)
		}
	}
}
