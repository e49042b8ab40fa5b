// Package logging builds the process logger: JSON lines on stderr, with
// request, job and batch IDs added as attributes by the callers.
package logging

import (
	"log/slog"
	"os"
	"strings"
)

// New returns a JSON logger at the named level (debug, info, warn, error).
func New(level, component string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})).With("component", component)
}
