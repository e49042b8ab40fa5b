// Package progress shows a batch's progress: a bar redrawn in place on a
// terminal, plain lines (one per change) anywhere else.
package progress

import (
	"fmt"
	"io"
	"strings"

	"github.com/docrender/docrender/cli/term"
	"github.com/docrender/docrender/client"
)

// Mode is how progress is shown.
type Mode string

const (
	// Auto is Bar on a terminal, Lines otherwise.
	Auto  Mode = "auto"
	Bar   Mode = "bar"
	Lines Mode = "plain"
	None  Mode = "none"
)

// ParseMode reads a --progress value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, Bar, Lines, None:
		return m, nil
	}
	return "", fmt.Errorf("--progress %q: want auto, bar, plain or none", s)
}

// Display shows the readings of one batch.
type Display interface {
	// Update shows a reading.
	Update(p client.Progress)
	// Close ends the display (a bar's line is ended).
	Close()
}

// New returns the display of mode on w; terminal says whether w is one (for Auto).
func New(w io.Writer, mode Mode, terminal bool, label string) Display {
	if mode == Auto {
		mode = Lines
		if terminal {
			mode = Bar
		}
	}
	switch mode {
	case Bar:
		return &bar{w: w, label: label, width: 30}
	case None:
		return none{}
	}
	return &lines{w: w, label: label}
}

type none struct{}

func (none) Update(client.Progress) {}
func (none) Close()                 {}

// lines writes a line for each reading that differs from the last.
type lines struct {
	w     io.Writer
	label string
	last  client.Progress
	any   bool
}

func (l *lines) Update(p client.Progress) {
	if l.any && p.Current == l.last.Current && p.Total == l.last.Total && p.Status == l.last.Status {
		return
	}
	l.last, l.any = p, true
	fmt.Fprintf(l.w, "%s: %d/%d %s\n", l.label, p.Current, p.Total, term.Safe(p.Status))
}

func (l *lines) Close() {}

// bar redraws one line: label [#####-----] 3/10 30%.
type bar struct {
	w      io.Writer
	label  string
	width  int
	drawn  bool
	closed bool
}

func (b *bar) Update(p client.Progress) {
	fmt.Fprintf(b.w, "\r\x1b[K%s", Render(b.label, p, b.width))
	b.drawn = true
}

func (b *bar) Close() {
	if b.drawn && !b.closed {
		fmt.Fprintln(b.w)
	}
	b.closed = true
}

// Render is the bar's text for p, width cells wide.
func Render(label string, p client.Progress, width int) string {
	frac := 0.0
	if p.Total > 0 {
		frac = float64(min(max(p.Current, 0), p.Total)) / float64(p.Total)
	}
	full := int(frac * float64(width))
	s := fmt.Sprintf("%s [%s%s] %d/%d %3.0f%%", label, strings.Repeat("#", full), strings.Repeat("-", width-full), p.Current, p.Total, frac*100)
	if p.Status != client.StatusProcessing && p.Status != "" {
		s += " " + term.Safe(p.Status)
	}
	return s
}
