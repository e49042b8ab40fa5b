package app

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/config"
)

func TestWarnBatchesThatNeverFit(t *testing.T) {
	tests := []struct {
		name     string
		maxQueue int
		maxBatch int
		warn     bool
	}{
		{"defaults: enterprise 5000 fits half of 10000", 10000, 5000, false},
		{"one more does not", 10000, 5001, true},
		{"no queue limit", 0, 1 << 20, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			cfg := config.Config{MaxQueue: tc.maxQueue, Plans: map[string]config.Plan{"enterprise": {MaxBatch: tc.maxBatch}}}
			warnBatchesThatNeverFit(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
			if got := strings.Contains(buf.String(), "plan=enterprise"); got != tc.warn {
				t.Fatalf("warned %v, want %v: %s", got, tc.warn, buf.String())
			}
		})
	}
}
