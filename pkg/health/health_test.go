package health

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestReady(t *testing.T) {
	ok := func(context.Context) error { return nil }
	bad := func(context.Context) error { return errors.New("down") }
	// A check that ignores its context (a driver stuck in a syscall).
	stuck := func(context.Context) error { time.Sleep(time.Hour); return nil }
	tests := []struct {
		name   string
		checks map[string]Check
		status int
		failed []string
	}{
		{"all pass", map[string]Check{"a": ok, "b": ok}, http.StatusOK, nil},
		{"one fails", map[string]Check{"a": ok, "b": bad}, http.StatusServiceUnavailable, []string{"b"}},
		{"one never answers", map[string]Check{"a": ok, "b": stuck}, http.StatusServiceUnavailable, []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			rep := Ready(context.Background(), tt.checks)
			if took := time.Since(start); took > Timeout+time.Second {
				t.Fatalf("took %s, past the probe's %s", took, Timeout)
			}
			if rep.Status != tt.status || len(rep.Failed) != len(tt.failed) {
				t.Fatalf("status %d, failed %v; want %d, %v", rep.Status, rep.Failed, tt.status, tt.failed)
			}
			checks := rep.Body["checks"].(map[string]string)
			for _, n := range tt.failed {
				if checks[n] != "failing" || rep.Failed[n] == nil {
					t.Fatalf("%s: %q", n, checks[n])
				}
			}
		})
	}
}

func TestLive(t *testing.T) {
	if rep := Live(nil, func() error { return nil }); rep.Status != http.StatusOK {
		t.Fatalf("live: %d", rep.Status)
	}
	if rep := Live(func() error { return errors.New("no browser for 2m") }); rep.Status != http.StatusServiceUnavailable {
		t.Fatalf("dead: %d", rep.Status)
	}
}
