// Package poppler reads the plain text of PDFs with poppler's pdftotext
// (DESIGN §11, /pdf/text), run as a bounded child process per part of the
// pages asked.
//
// Why pdftotext and not PDFium, which reads the Markdown: the same 50-page
// document's text takes pdftotext ~70 ms on one core and PDFium in
// WebAssembly ~250 ms of CPU (docs/decisions.md "PDF tools: engines").
// pdftotext is the reference this route is measured against, it keeps
// reading order as PDFium does, and as a process of its own it is bounded
// like LibreOffice: an address-space limit, the job's deadline (killed), a
// cap on what it writes, no files (the PDF arrives on stdin), no network.
//
// Anything this engine cannot read the way it expects (a PDF pdftotext
// cannot open, its memory bound, pages it did not write) is ErrNotRead:
// the caller reads it with PDFium as before, so a file PDFium reads is
// never refused here.
package poppler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNotRead is a PDF this engine leaves to another: its text was not read.
var ErrNotRead = errors.New("poppler: text not read")

// Defaults of Config.
const (
	DefaultMaxMemory = 1 << 30
	DefaultMaxOutput = 512 << 20
	// minPartPages: fewer pages than this a process are read by one; a
	// process costs ~3 ms to start and parse the document again.
	minPartPages = 8
	maxStderr    = 4 << 10
)

// Config sizes an Engine. Zero fields take the defaults above.
type Config struct {
	// Path is pdftotext's; "" looks it up in PATH.
	Path string
	// MaxMemory bounds each process's address space (RLIMIT_AS), in bytes.
	MaxMemory int64
	// MaxOutput bounds the text of one call, in bytes.
	MaxOutput int64
	// Parts bounds the processes one call runs at once; 0: one a core.
	Parts int
}

// Engine runs pdftotext.
type Engine struct {
	cfg Config
}

// New finds pdftotext. An error says it is not installed: the caller then
// reads text another way.
func New(cfg Config) (*Engine, error) {
	if cfg.Path == "" {
		cfg.Path = "pdftotext"
	}
	p, err := exec.LookPath(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("poppler: %w", err)
	}
	cfg.Path = p
	if cfg.MaxMemory <= 0 {
		cfg.MaxMemory = DefaultMaxMemory
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.Parts <= 0 {
		cfg.Parts = runtime.GOMAXPROCS(0)
	}
	return &Engine{cfg: cfg}, nil
}

// TooLargeError is text past MaxOutput: the client asks for fewer pages.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the text of these pages is larger than %d bytes: ask for fewer pages", e.Max)
}

// Text is the text of pages (1-based, in the order asked; none: all) as
// pdftotext writes it: each page's lines, then a form feed. count is the
// document's page count when the caller knows it (a count it can trust
// without parsing the file), 0 otherwise; at most maxPages are read. The
// span from the first page asked to the last is read in contiguous parts
// at once (one process a part; one part when the count is not known) and
// the pages are taken from it in the order asked. ErrNotRead, for PDFium
// to answer in its words: pages that do not exist or are too many, a span
// much larger than the pages asked (their text would be read for nothing),
// and what the processes did not read as expected.
func (e *Engine) Text(ctx context.Context, pdf []byte, pages []int, count, maxPages int) ([]byte, error) {
	if len(pages) > maxPages || count > maxPages && len(pages) == 0 {
		return nil, fmt.Errorf("%w: too many pages", ErrNotRead)
	}
	lo, hi := 1, count // the span, 1-based; hi 0: to the end, unknown
	if len(pages) > 0 {
		lo, hi = pages[0], pages[0]
		distinct := map[int]bool{}
		for _, p := range pages {
			if p < 1 || count > 0 && p > count {
				return nil, fmt.Errorf("%w: page %d", ErrNotRead, p)
			}
			lo, hi = min(lo, p), max(hi, p)
			distinct[p] = true
		}
		if hi-lo+1 > 2*len(distinct)+minPartPages {
			return nil, fmt.Errorf("%w: pages %d to %d for %d of them", ErrNotRead, lo, hi, len(distinct))
		}
	}
	span := hi - lo + 1
	parts := 1
	if hi > 0 {
		parts = max(1, min(e.cfg.Parts, span/minPartPages))
	}
	texts := make([][][]byte, parts)
	errs := make([]error, parts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var read atomic.Int64 // bytes the parts have read so far, bounded by MaxOutput
	for p := range parts {
		from, to := lo+p*span/parts, lo+(p+1)*span/parts-1 // 1-based, inclusive
		if hi == 0 {
			to = maxPages + 1 // pdftotext stops at the last page
		}
		wg.Go(func() {
			texts[p], errs[p] = e.part(ctx, pdf, from, to, &read)
			if errs[p] == nil && hi > 0 && len(texts[p]) != to-from+1 {
				// A page whose text holds a form feed, or fewer pages than
				// the count said: not cut by page here.
				errs[p] = fmt.Errorf("%w: pdftotext wrote %d pages of %d", ErrNotRead, len(texts[p]), to-from+1)
			}
			if errs[p] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return nil, err
	}
	all := slices.Concat(texts...) // page lo+k's text, its form feed included
	if hi == 0 && (len(all) == 0 || len(all) > maxPages) {
		return nil, fmt.Errorf("%w: %d pages read", ErrNotRead, len(all))
	}
	if len(pages) == 0 {
		pages = make([]int, len(all))
		for k := range pages {
			pages[k] = k + 1
		}
	}
	var n int64
	for _, p := range pages {
		n += int64(len(all[p-lo]))
	}
	if n > e.cfg.MaxOutput {
		return nil, &TooLargeError{Max: e.cfg.MaxOutput}
	}
	out := make([]byte, 0, n)
	for _, p := range pages {
		out = append(out, all[p-lo]...)
	}
	return out, nil
}

// firstError is the error that explains the others: a context's error
// only when nothing else went wrong (the parts after a failure are
// cancelled).
func firstError(errs []error) error {
	var ctxErr error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			if ctxErr == nil {
				ctxErr = err
			}
		default:
			return err
		}
	}
	return ctxErr
}

// part reads pages from to to (1-based, inclusive; to past the last page
// reads to the end) and returns each page's text, its form feed included;
// read counts the bytes of all the parts at once, which together stay
// within MaxOutput. What keeps pdftotext from running or answering (a fork
// refused, prlimit refused by a sandbox) is ErrNotRead too: PDFium reads
// the PDF then, logged by the caller.
func (e *Engine) part(ctx context.Context, pdf []byte, from, to int, read *atomic.Int64) ([][]byte, error) {
	cmd := exec.CommandContext(ctx, e.cfg.Path, "-q", "-enc", "UTF-8",
		"-f", strconv.Itoa(from), "-l", strconv.Itoa(to), "-", "-")
	cmd.Env = []string{"LANG=C.UTF-8"}
	cmd.Dir = "/"
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRead, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotRead, err)
	}
	var stderr capped
	stderr.max = maxStderr
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start pdftotext: %v", ErrNotRead, err)
	}
	// Bounded before it reads a byte of the PDF: the PDF is written after.
	if err := limit(cmd.Process.Pid, e.cfg.MaxMemory); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%w: bound pdftotext: %v", ErrNotRead, err)
	}
	go func() {
		_, _ = stdin.Write(pdf)
		_ = stdin.Close()
	}()
	text, readErr := readBounded(stdout, read, e.cfg.MaxOutput)
	if readErr != nil {
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("poppler: pdftotext: %w", ctx.Err())
	case errors.Is(readErr, errTooLarge):
		return nil, &TooLargeError{Max: e.cfg.MaxOutput}
	case readErr != nil:
		return nil, fmt.Errorf("%w: read pdftotext: %v", ErrNotRead, readErr)
	case waitErr != nil:
		// Exit 1: a PDF it cannot open (damaged, a password); a signal:
		// its memory bound. PDFium reads or refuses each in its words.
		return nil, fmt.Errorf("%w: pdftotext %v: %s", ErrNotRead, waitErr, bytes.TrimSpace(stderr.buf.Bytes()))
	}
	pages := bytes.SplitAfter(text, []byte{'\f'})
	return pages[:len(pages)-1], nil // after the last form feed: nothing, or text of no page
}

var errTooLarge = errors.New("poppler: output past the bound")

// readBounded reads r to its end, adding what it reads to total, and
// stops with errTooLarge once total passes max.
func readBounded(r io.Reader, total *atomic.Int64, max int64) ([]byte, error) {
	var b []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if total.Add(int64(n)) > max {
			return b, errTooLarge
		}
		b = append(b, buf[:n]...)
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
