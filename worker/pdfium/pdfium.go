// Package pdfium reads PDFs people already have with PDFium (DESIGN §11):
// plain text, Markdown and images of pages, the things pdfcpu cannot do.
//
// PDFium runs as WebAssembly (go-pdfium's webassembly mode on wazero): no
// cgo, and each instance has a linear memory of its own with a hard bound,
// so a hostile PDF that exhausts it fails its own call and the instance is
// replaced. Each instance runs in a child process of the worker, its own
// executable run again (proc.go, child.go): a call past its deadline is
// ended by killing its child, and PDFium's memory and garbage-collector
// pauses stay out of the worker.
package pdfium

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"

	gopdfium "github.com/klippa-app/go-pdfium"
	pdfiumerrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// Defaults of Config. MaxMemory leaves room for a page at MaxPixels (4 bytes
// a pixel, 200 MB) plus PDFium's own decoded images and fonts.
const (
	DefaultMaxMemory = 1 << 30
	DefaultMaxPages  = 2000
	DefaultMaxPixels = 50_000_000
	DefaultMaxDPI    = 600
	DefaultMaxOutput = 512 << 20
	// A fresh instance has about 18 MiB; most documents stay far below.
	DefaultRecycleAbove = 256 << 20
	wasmPageSize        = 64 << 10
	maxWasmMemory       = 4 << 30 // wasm32 addresses at most 4 GiB.
	defaultJPEGQuality  = 90
)

// Config sizes an Engine. Zero fields take the defaults above.
type Config struct {
	// Instances is how many PDFium instances run at once: the worker's
	// render slots. Calls beyond it wait for a free instance.
	Instances int
	// MaxMemory bounds the linear memory of each instance, in bytes
	// (rounded down to 64 KiB wasm pages, at most 4 GiB).
	MaxMemory int64
	// MaxPages bounds the pages one call reads or renders.
	MaxPages int
	// MaxPixels bounds width×height of one rendered page, checked on the
	// page's size before anything is rendered.
	MaxPixels int64
	// MaxOutput bounds the bytes one call returns (text, or all images).
	MaxOutput int64
	// RecycleAbove: an instance whose linear memory grew past it is
	// replaced after its call instead of kept. Wasm memory never shrinks, so
	// without this each instance would keep the most any document took.
	RecycleAbove int64
	// Interruptible makes a done context stop PDFium in the middle of a
	// call (a page's parsing, text layer or rendering), at 3–4× the CPU time
	// of every call (docs/decisions.md "PDF tools: engines"). Without it,
	// in-process, a done context stops the work at the next call (the next
	// page), the instance is replaced as with it, and a call that never
	// returns keeps its instance and a core. Child processes do not need
	// it: a done context kills the child under the call.
	Interruptible bool
	// CacheDir, when set, keeps wazero's compiled PDFium there: a worker
	// that restarts on the same disk starts in a fraction of the compile
	// time (BenchmarkNew). Children (the process mode) use a directory
	// under the user's cache directory when it is empty, else a temporary
	// one of the engine's, so a replaced child starts fast.
	CacheDir string
	// InProcess runs the instances inside this process instead of one
	// child process each (proc.go). Child processes are the default once
	// main has called RunChildIfAsked; without that call the engine runs
	// in-process and Interruptible, and says so in Log.
	InProcess bool
	// Log takes the children's output (at debug) and the engine's
	// warnings; nil: none.
	Log *slog.Logger

	// childMode is childEnv's value for children: childRun, or a
	// misbehaviour of the tests' (TestMain).
	childMode string
}

func (c Config) withDefaults() Config {
	if c.Instances <= 0 {
		c.Instances = 1
	}
	if c.MaxMemory <= 0 {
		c.MaxMemory = DefaultMaxMemory
	}
	c.MaxMemory = min(c.MaxMemory, maxWasmMemory)
	if c.MaxPages <= 0 {
		c.MaxPages = DefaultMaxPages
	}
	if c.MaxPixels <= 0 {
		c.MaxPixels = DefaultMaxPixels
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.RecycleAbove <= 0 {
		c.RecycleAbove = DefaultRecycleAbove
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.childMode == "" {
		c.childMode = childRun
	}
	return c
}

// BadInputError is the client's fault: a file that is not a readable PDF,
// a password, a page or dpi out of bounds. Param names the request field to
// blame ("file", "pages", "dpi", "format", "quality") and Msg says what is
// wrong in the client's words; the caller answers 4xx with them.
type BadInputError struct {
	Param string
	Msg   string
	Err   error // PDFium's or wazero's error, for logs; may be nil
}

func (e *BadInputError) Error() string { return e.Msg }
func (e *BadInputError) Unwrap() error { return e.Err }

func badInput(param, format string, args ...any) *BadInputError {
	return &BadInputError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// Engine is a pool of PDFium WebAssembly instances, started once per worker
// process and shared by its jobs. It is safe for concurrent use: each call
// takes an instance for its duration.
type Engine struct {
	cfg   Config
	pool  gopdfium.Pool
	cache wazero.CompilationCache // nil without CacheDir
	// idle holds a token for each instance no call holds: a call takes one
	// before its instance, so a call can see whether others are idle
	// (spread) without waiting on the pool.
	idle chan struct{}
	// procs runs the instances in child processes; nil: in-process (the
	// fields above are then unused).
	procs *procs
}

// New compiles PDFium's WebAssembly module once and starts cfg.Instances
// instances of it. Measured on the 2-core dev machine (BenchmarkNew):
// compiling takes about 2.7 s (1.0 s from a CacheDir filled before), an
// instance 3.6 ms and about 18 MiB of Go heap (its linear memory, which
// grows with the documents it reads, up to MaxMemory).
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if !cfg.InProcess {
		if childCapable.Load() {
			p, err := newProcs(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return &Engine{cfg: cfg, procs: p}, nil
		}
		cfg.InProcess, cfg.Interruptible = true, true
		cfg.Log.Warn("pdfium: main does not call pdfium.RunChildIfAsked: PDFium runs inside this process, interruptible (3-4x the CPU time)")
	}
	rc := wazero.NewRuntimeConfig().
		// PDFium's setjmp/longjmp are lowered to wasm exceptions.
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
		WithMemoryLimitPages(uint32(cfg.MaxMemory / wasmPageSize)).
		// Interruptible: Kill cancels an instance's context, which stops a
		// running call at its next loop iteration. wazero does that by
		// leaving the compiled code for Go at every iteration of every loop
		// (580,000 times a page of testdata/long.pdf), 3.4× the time of the
		// call. Otherwise a done context is seen between calls.
		WithCloseOnContextDone(cfg.Interruptible)
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("pdfium: compilation cache: %w", err)
		}
		cache, rc = c, rc.WithCompilationCache(c)
	}
	pool, err := webassembly.Init(webassembly.Config{
		Context:  context.WithoutCancel(ctx), // the pool outlives the caller's context
		MinIdle:  cfg.Instances,
		MaxIdle:  cfg.Instances,
		MaxTotal: cfg.Instances,
		// Without a mount the instance cannot read the host's files: every
		// document reaches it as bytes. go-pdfium's default mounts "/".
		FSConfig:      wazero.NewFSConfig(),
		RuntimeConfig: rc,
		Stdout:        io.Discard,
		Stderr:        io.Discard,
		ReuseWorkers:  true,
	})
	if err != nil {
		if cache != nil {
			cache.Close(context.Background())
		}
		return nil, fmt.Errorf("pdfium: start: %w", err)
	}
	idle := make(chan struct{}, cfg.Instances)
	for range cfg.Instances {
		idle <- struct{}{}
	}
	return &Engine{cfg: cfg, pool: pool, cache: cache, idle: idle}, nil
}

// Close stops every instance; calls under way fail.
func (e *Engine) Close() error {
	if e.procs != nil {
		return e.procs.close()
	}
	err := e.pool.Close()
	if e.cache != nil {
		err = errors.Join(err, e.cache.Close(context.Background()))
	}
	return err
}

// instanceFailed marks an error after which the instance may be in any
// state (a trap, memory exhausted, a cancelled call): it is not returned to
// the pool but replaced.
type instanceFailed struct{ err error }

func (f instanceFailed) Error() string { return f.err.Error() }
func (f instanceFailed) Unwrap() error { return f.err }

// run takes an instance, opens pdf in it and hands both to fn. PDFium's
// errors on open are the client's; anything failing later inside the
// instance kills it (the pool starts a new one), and a panic becomes an
// error, so one document never breaks the next call.
func (e *Engine) run(ctx context.Context, pdf []byte, fn func(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(pdf) == 0 {
		return badInput("file", "the file is empty")
	}
	select {
	case <-e.idle:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { e.idle <- struct{}{} }()
	return e.runTaken(ctx, pdf, fn)
}

// runTaken is run once an idle token is taken; the caller gives it back.
func (e *Engine) runTaken(ctx context.Context, pdf []byte, fn func(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT) error) (err error) {
	in, err := e.pool.GetInstanceWithContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("pdfium: take an instance: %w", err)
	}
	// A done context kills the instance: an Interruptible one stops
	// mid-call, any other when the call under way returns; the next call
	// fails on the closed instance, and either way the error is ctx.Err().
	killed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = in.Kill()
		close(killed)
	})
	defer func() {
		if r := recover(); r != nil {
			err = instanceFailed{fmt.Errorf("pdfium: panic: %v %s", r, debug.Stack())}
		}
		if !stop() {
			<-killed
			err = ctx.Err()
			return
		}
		var failed instanceFailed
		if errors.As(err, &failed) {
			_ = in.Kill()
			err = classifyFailure(failed.err)
			return
		}
		if memorySize(in) > uint64(e.cfg.RecycleAbove) {
			_ = in.Kill()
			return
		}
		// Close frees the document and every handle and returns the
		// instance to the pool.
		if cerr := in.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("pdfium: release instance: %w", cerr)
		}
	}()

	data := pdf
	opened, err := in.FPDF_LoadMemDocument(&requests.FPDF_LoadMemDocument{Data: &data})
	if err != nil {
		return openError(err)
	}
	return fn(in, opened.Document)
}

// memorySize is an instance's linear memory in bytes, read through
// go-pdfium's implementation, whose types are internal (hence reflection:
// its exported Module field, Module.Memory().Size()). 0 if that changed,
// which TestRecycle catches.
func memorySize(in gopdfium.Pdfium) (n uint64) {
	defer func() {
		if recover() != nil {
			n = 0
		}
	}()
	v := reflect.ValueOf(in.GetImplementation())
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	m := v.FieldByName("Module")
	if !m.IsValid() || m.IsNil() {
		return 0
	}
	return m.MethodByName("Memory").Call(nil)[0].MethodByName("Size").Call(nil)[0].Uint()
}

// openError says why PDFium refused a document, in the client's words.
func openError(err error) error {
	b := &BadInputError{Param: "file", Err: err}
	switch {
	case errors.Is(err, pdfiumerrors.ErrPassword):
		b.Msg = "the PDF is encrypted with a password"
	case errors.Is(err, pdfiumerrors.ErrSecurity):
		b.Msg = "the PDF's encryption is not supported"
	case errors.Is(err, pdfiumerrors.ErrFormat), errors.Is(err, pdfiumerrors.ErrFile),
		errors.Is(err, pdfiumerrors.ErrUnknown), errors.Is(err, pdfiumerrors.ErrUnexpected):
		b.Msg = "the file is not a PDF or is too damaged to read"
	default:
		// Not PDFium's answer but the instance's own failure.
		return classifyFailure(err)
	}
	return b
}

// classifyFailure: a wasm trap while reading a document is the document's
// doing, whatever PDFium tripped on: running out of the memory bound (it
// aborts when malloc fails, a decompression bomb or a huge image) or a
// structure it cannot handle. The caller answers 4xx. Anything else (a Go
// panic here or in go-pdfium) is ours to log.
func classifyFailure(err error) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) || strings.Contains(err.Error(), "wasm error:") {
		return &BadInputError{Param: "file", Err: err,
			Msg: "the PDF could not be read within the reader's bounds: it needs more memory than allowed, or is damaged in a way the reader cannot handle"}
	}
	return fmt.Errorf("pdfium: instance failed and was replaced: %w", err)
}

// fail wraps an error from a PDFium call made after the document opened: the
// instance cannot be trusted after it.
func fail(err error) error {
	var b *BadInputError
	if errors.As(err, &b) {
		return err
	}
	if errors.Is(err, pdfiumerrors.ErrPage) {
		// PDFium's answer, not a failure: a page the page tree counts
		// (its /Count) but does not hold.
		return &BadInputError{Param: "file", Err: err, Msg: "a page the PDF counts cannot be found: its page tree is damaged"}
	}
	return instanceFailed{err}
}

// pageList turns the 1-based pages asked for (none: all) into 0-based
// indexes, bounded before anything is read.
func (e *Engine) pageList(in gopdfium.Pdfium, doc references.FPDF_DOCUMENT, pages []int) ([]int, error) {
	n, err := in.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: doc})
	if err != nil {
		return nil, fail(err)
	}
	return PageIndexes(n.PageCount, pages, e.cfg.MaxPages)
}

// PageIndexes are the 0-based indexes of pages (1-based; none: all) in a
// document of count pages, at most maxPages of them; a *BadInputError
// names what is wrong. The engines that read pages check them here.
func PageIndexes(count int, pages []int, maxPages int) ([]int, error) {
	if len(pages) > maxPages {
		return nil, badInput("pages", "%d pages asked; at most %d can be read at once", len(pages), maxPages)
	}
	if count <= 0 {
		return nil, badInput("file", "the PDF has no pages")
	}
	if len(pages) == 0 {
		if count > maxPages {
			return nil, badInput("pages", "the PDF has %d pages; at most %d can be read at once: ask for some with pages", count, maxPages)
		}
		idx := make([]int, count)
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	idx := make([]int, len(pages))
	for i, p := range pages {
		if p < 1 || p > count {
			return nil, badInput("pages", "page %d does not exist: the PDF has %d pages", p, count)
		}
		idx[i] = p - 1
	}
	return idx, nil
}

func pageByIndex(doc references.FPDF_DOCUMENT, i int) requests.Page {
	return requests.Page{ByIndex: &requests.PageByIndex{Document: doc, Index: i}}
}
