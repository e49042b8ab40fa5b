// Package office converts office documents (Word, Excel, PowerPoint,
// OpenDocument, RTF, text, CSV) to PDF with LibreOffice.
//
// The engine keeps N slots. A slot is one LibreOffice process with a
// profile of its own, started once and reused for many documents: starting
// LibreOffice costs about a second, converting a small document a tenth of
// that. Each slot is driven by a small Python helper (embedded here, run
// with Debian's python3-uno) that talks to its LibreOffice over the UNO
// bridge on a named pipe; the engine talks to the helper with JSON lines on
// stdin/stdout and files in the slot's own directory. A slot runs in a
// network namespace of its own with no interfaces when user namespaces
// allow it, so a document cannot reach anything; its process group is
// killed and the slot restarted after a hang (past Timeout), a crash, or
// MaxDocuments documents.
package office

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

//go:embed helper.py
var helperScript []byte

// Defaults of Config's zero values.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxDocuments = 200
	// startTimeout bounds a slot's start (first start of a fresh profile
	// takes ~2 s on a quiet machine; a loaded one may take several times that).
	startTimeout = 60 * time.Second
	// maxInflatedFactor and maxInflatedFloor bound what a ZIP package may
	// declare it inflates to: 200× its size, and at least 256 MiB.
	maxInflatedFactor = 200
	maxInflatedFloor  = 256 << 20
)

// ErrUnavailable: this machine cannot convert office documents (no
// LibreOffice, or no python3-uno); the wrapped message says which and how
// to install it.
var ErrUnavailable = errors.New("office conversion unavailable")

// ErrTimeout: the document took longer than Config.Timeout; LibreOffice was
// killed and its slot restarted.
var ErrTimeout = errors.New("LibreOffice took too long on this document")

// ErrCrashed: LibreOffice died while converting the document (a crash, or
// its memory bound); its slot was restarted.
var ErrCrashed = errors.New("LibreOffice crashed on this document")

// ErrClosed: the engine was closed.
var ErrClosed = errors.New("office engine closed")

// BadInputError is a document the client must fix: not an office document,
// password-protected, empty, of a type not converted, or an option that does
// not fit it. Error() is said to the client: it names the file, never a path
// of ours.
type BadInputError struct {
	File   string
	Reason string
}

func (e *BadInputError) Error() string { return fmt.Sprintf("%s: %s", e.File, e.Reason) }

// Config of an Engine.
type Config struct {
	// Path of soffice (DOCRENDER_OFFICE_PATH); empty: soffice or
	// libreoffice found on PATH.
	Path string
	// Slots is how many LibreOffice processes convert at once (≥ 1).
	Slots int
	// MaxDocuments restarts a slot after that many documents, so what
	// LibreOffice leaks or caches does not grow without end; 0: default.
	MaxDocuments int
	// Timeout per document; 0: DefaultTimeout.
	Timeout time.Duration
	// MaxMemory bounds each slot's LibreOffice address space (RLIMIT_AS),
	// in bytes; 0: no bound. An idle slot maps ~620 MiB of address space
	// (~90 MiB resident), and a document adds to that: leave room (2 GiB or
	// more). Past the bound LibreOffice's allocation fails and it dies, which
	// fails that document alone (ErrCrashed) and restarts the slot.
	MaxMemory int64
	// WorkDir holds the slots' profiles and files; empty: a new directory
	// under the system's temporary directory, removed by Close.
	WorkDir string
	// Log; nil: slog.Default().
	Log *slog.Logger
}

// Input is one document: its client's file name (its extension says its
// format) and its bytes.
type Input struct {
	Name string
	Data []byte
}

// Options of one conversion.
type Options struct {
	// Landscape turns every page style to landscape (width and height
	// swapped) before export; a page already landscape stays.
	Landscape bool
	// PageRanges like "1-3,5" limits the pages exported; empty: all.
	PageRanges string
	// PDFA "2b" or "3b" makes LibreOffice write PDF/A-2b or PDF/A-3b; empty:
	// plain PDF.
	PDFA string
}

// Engine converts documents on its slots; safe for concurrent use.
type Engine struct {
	cfg     Config
	soffice string
	python  string
	netns   bool
	workDir string
	ownDir  bool

	free     chan *slot
	slots    []*slot
	closed   chan struct{}
	closeMu  sync.Once
	mu       sync.Mutex // guards isClosed against restarts.Add
	isClosed bool
	restarts sync.WaitGroup
}

// New finds LibreOffice and python3-uno, then starts cfg.Slots slots (in
// parallel); it returns when all are ready, or the first error.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Slots < 1 {
		cfg.Slots = 1
	}
	if cfg.MaxDocuments <= 0 {
		cfg.MaxDocuments = DefaultMaxDocuments
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	soffice, err := findSoffice(cfg.Path)
	if err != nil {
		return nil, err
	}
	python, err := findPythonUNO(ctx)
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, soffice: soffice, python: python, closed: make(chan struct{})}
	e.netns = netnsWorks(ctx)
	if !e.netns {
		cfg.Log.Warn("office: user namespaces unavailable; LibreOffice runs without a network namespace of its own (remote loading stays off in its profile)")
	}
	e.workDir = cfg.WorkDir
	if e.workDir == "" {
		if e.workDir, err = os.MkdirTemp("", "docrender-office-"); err != nil {
			return nil, err
		}
		e.ownDir = true
	} else if err := os.MkdirAll(e.workDir, 0o700); err != nil {
		return nil, err
	}
	helper := filepath.Join(e.workDir, "helper.py")
	if err := os.WriteFile(helper, helperScript, 0o600); err != nil {
		return nil, err
	}
	e.free = make(chan *slot, cfg.Slots)
	errs := make(chan error, cfg.Slots)
	for i := range cfg.Slots {
		s := &slot{e: e, n: i, dir: filepath.Join(e.workDir, fmt.Sprintf("slot%d", i))}
		e.slots = append(e.slots, s)
		go func() { errs <- s.start(ctx, true) }()
	}
	for range cfg.Slots {
		if err2 := <-errs; err2 != nil && err == nil {
			err = err2
		}
	}
	if err != nil {
		e.Close()
		return nil, err
	}
	for _, s := range e.slots {
		e.free <- s
	}
	return e, nil
}

// Check says, without starting anything, whether this machine can convert
// office documents with LibreOffice at path (Config.Path; empty: found on
// PATH): nil, or ErrUnavailable wrapped with what is missing and how to
// install it. A worker checks this before it takes office jobs.
func Check(ctx context.Context, path string) error {
	if _, err := findSoffice(path); err != nil {
		return err
	}
	_, err := findPythonUNO(ctx)
	return err
}

// findSoffice resolves Config.Path or looks for LibreOffice on PATH.
func findSoffice(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: DOCRENDER_OFFICE_PATH %q is not an executable LibreOffice (%v)", ErrUnavailable, path, err)
		}
		return p, nil
	}
	for _, name := range []string{"soffice", "libreoffice"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: LibreOffice not found (no soffice or libreoffice on PATH); install it with `apt-get install --no-install-recommends libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui python3-uno` (scripts/setup does) or set DOCRENDER_OFFICE_PATH", ErrUnavailable)
}

// findPythonUNO finds a Python that imports uno. Debian's python3-uno is
// built for the system Python, so /usr/bin/python3 comes first: a python3
// earlier on PATH (pyenv, a virtualenv) usually lacks it.
func findPythonUNO(ctx context.Context) (string, error) {
	var tried []string
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		tried = append(tried, path)
		if exec.CommandContext(ctx, path, "-c", "import uno, unohelper").Run() == nil {
			return path, nil
		}
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("%w: no python3 to run LibreOffice's UNO bridge; install it with `apt-get install python3-uno` (scripts/setup does)", ErrUnavailable)
	}
	return "", fmt.Errorf("%w: python3-uno missing (%v cannot import uno); install it with `apt-get install python3-uno` (scripts/setup does)", ErrUnavailable, tried)
}

// netnsWorks says whether `unshare --net --map-root-user` runs here (it
// needs unprivileged user namespaces, or root).
func netnsWorks(ctx context.Context) bool {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return false
	}
	return exec.CommandContext(ctx, unshare, "--net", "--map-root-user", "true").Run() == nil
}

// Isolated says whether slots run in a network namespace of their own.
func (e *Engine) Isolated() bool { return e.netns }

// pageRangesPattern is LibreOffice's PageRange syntax as we accept it: numbers
// and ranges (an open end allowed), comma-separated.
const pageRangesPattern = `^\s*\d+\s*(-\s*\d*\s*)?(,\s*\d+\s*(-\s*\d*\s*)?)*$`

// Convert converts in to PDF, returning its bytes and page count. Errors: a
// *BadInputError for the client to fix; ErrTimeout or ErrCrashed (wrapped)
// when LibreOffice hung or died on this document (the slot is restarted and
// the next document converts); ctx's error if ctx ended first.
func (e *Engine) Convert(ctx context.Context, in Input, opt Options) ([]byte, int, error) {
	maxInflated := max(int64(len(in.Data))*maxInflatedFactor, maxInflatedFloor)
	kind, err := checkInput(in, maxInflated)
	if err != nil {
		return nil, 0, err
	}
	req := request{Kind: kind, Landscape: opt.Landscape}
	if opt.PageRanges != "" {
		if !regexp.MustCompile(pageRangesPattern).MatchString(opt.PageRanges) {
			return nil, 0, &BadInputError{File: in.Name, Reason: fmt.Sprintf("pageRanges %q is not a list of pages and ranges like 1-3,5", opt.PageRanges)}
		}
		req.PageRange = opt.PageRanges
	}
	switch opt.PDFA {
	case "":
	case "2b":
		req.PDFVersion = 2
	case "3b":
		req.PDFVersion = 3
	default:
		return nil, 0, &BadInputError{File: in.Name, Reason: fmt.Sprintf("PDF/A level %q is not 2b or 3b", opt.PDFA)}
	}

	var s *slot
	select {
	case s = <-e.free:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	case <-e.closed:
		return nil, 0, ErrClosed
	}
	pdf, pages, restart, err := s.convert(ctx, in, req)
	if restart {
		// The slot's process was killed (hang, crash, cancel) or has done
		// its MaxDocuments: it comes back to the pool once restarted, in
		// the background, so this call answers now.
		e.restart(s)
	} else {
		e.free <- s
	}
	return pdf, pages, err
}

// restart starts s again in the background and then returns it to the pool.
func (e *Engine) restart(s *slot) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.isClosed {
		return
	}
	e.restarts.Add(1)
	go func() {
		defer e.restarts.Done()
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		if err := s.start(ctx, false); err != nil {
			e.cfg.Log.Warn("office: restart failed; the slot tries again at its next document", "slot", s.n, "err", err)
		}
		e.free <- s
	}()
}

// Close kills every slot and removes the engine's own work directory.
func (e *Engine) Close() {
	e.closeMu.Do(func() {
		e.mu.Lock()
		e.isClosed = true
		close(e.closed)
		e.mu.Unlock()
		for _, s := range e.slots {
			s.stop()
		}
		e.restarts.Wait()
		// A restart that raced Close may have started a process after the
		// first stop.
		for _, s := range e.slots {
			s.stop()
		}
		if e.ownDir {
			_ = os.RemoveAll(e.workDir)
		}
	})
}
