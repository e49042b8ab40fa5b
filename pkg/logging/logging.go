// Package logging builds the process logger: JSON lines on stderr, with
// request, job and batch IDs added as attributes by the callers.
//
// IDs also travel in a context (With): a logger built here adds them to
// every line logged with that context (InfoContext and friends), so code
// deep in a job (the batch tracker, say) logs the job's IDs without being
// handed a logger for each job.
package logging

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
)

// New returns a JSON logger at the named level (debug, info, warn, error).
func New(level, component string) *slog.Logger {
	return NewTo(os.Stderr, level, component)
}

// NewTo is New writing to w.
func NewTo(w io.Writer, level, component string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})
	return slog.New(Handler(h)).With("component", component)
}

type ctxKey struct{}

// With returns ctx carrying the key/value pairs (e.g. "request_id", id) in
// addition to those it already carries. Empty values are left out.
func With(ctx context.Context, kv ...string) context.Context {
	prev, _ := ctx.Value(ctxKey{}).([]slog.Attr)
	attrs := append([]slog.Attr(nil), prev...)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			attrs = append(attrs, slog.String(kv[i], kv[i+1]))
		}
	}
	return context.WithValue(ctx, ctxKey{}, attrs)
}

// Attrs returns the attributes ctx carries.
func Attrs(ctx context.Context) []slog.Attr {
	if ctx == nil {
		return nil
	}
	a, _ := ctx.Value(ctxKey{}).([]slog.Attr)
	return a
}

// Handler wraps h so that each record logged with a context gets the
// context's attributes, and no line carries a key twice: the record's own
// value wins over the logger's (With), which wins over the context's. A
// logger re-tagged With("component", "batch") is then "batch", not both.
func Handler(h slog.Handler) slog.Handler {
	if ch, ok := h.(*ctxHandler); ok {
		return ch
	}
	return &ctxHandler{next: h}
}

type ctxHandler struct {
	next slog.Handler
	// bound are the logger's top-level attributes, kept here (not in next)
	// so that later ones replace earlier ones of the same key.
	bound []slog.Attr
	// grouped: after WithGroup, attributes land inside the group and are
	// passed through as they come.
	grouped bool
}

func (h *ctxHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.grouped {
		r.AddAttrs(Attrs(ctx)...)
		return h.next.Handle(ctx, r)
	}
	own := make(map[string]bool, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool { own[a.Key] = true; return true })
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	seen := make(map[string]bool, len(h.bound))
	for _, a := range h.bound {
		if !own[a.Key] {
			seen[a.Key] = true
			out.AddAttrs(a)
		}
	}
	for _, a := range Attrs(ctx) {
		if !own[a.Key] && !seen[a.Key] {
			seen[a.Key] = true
			out.AddAttrs(a)
		}
	}
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	return h.next.Handle(ctx, out)
}

func (h *ctxHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if h.grouped {
		return &ctxHandler{next: h.next.WithAttrs(attrs), grouped: true}
	}
	bound := make([]slog.Attr, 0, len(h.bound)+len(attrs))
	for _, a := range h.bound {
		if !hasKey(attrs, a.Key) {
			bound = append(bound, a)
		}
	}
	return &ctxHandler{next: h.next, bound: append(bound, attrs...)}
}

func (h *ctxHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	next := h.next
	if len(h.bound) > 0 {
		next = next.WithAttrs(h.bound)
	}
	return &ctxHandler{next: next.WithGroup(name), grouped: true}
}

func hasKey(attrs []slog.Attr, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}
