package pdfium

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// A child is the worker's own executable run again with childEnv set: it
// holds one PDFium instance (an in-process Engine of one instance, not
// interruptible) and answers the parent's calls one at a time on two pipes,
// fd 3 (requests) and fd 4 (answers). Its stdout and stderr go to the
// parent's log. It ends when the parent closes its end of the requests
// (or dies: Pdeathsig on Linux), or is killed by the parent when a call
// outlives its context.

// childEnv is the marker a child is started with; its value is childRun.
// Tests start misbehaving children with other values (TestMain).
const (
	childEnv = "DOCRENDER_PDFIUM_CHILD"
	childRun = "1"
)

// protocolVersion is in the child's ready frame: a child of another build
// is refused (the parent runs /proc/self/exe, so it should never be).
const protocolVersion = 1

// childCapable is set once main has called RunChildIfAsked: only then can
// the executable be started as a child, and New uses child processes.
var childCapable atomic.Bool

// RunChildIfAsked runs a PDFium child process when this process was started
// as one (by an Engine of this executable) and returns true once it ends;
// otherwise it returns false at once. Every main that may start an Engine
// (the worker, the embedded gateway, test binaries through TestMain) calls
// it first thing and returns when it says true:
//
//	if pdfium.RunChildIfAsked() {
//		return
//	}
//
// A process that never called it runs PDFium in-process, interruptible
// (New says so in its log).
func RunChildIfAsked() bool {
	childCapable.Store(true)
	if os.Getenv(childEnv) != childRun {
		return false
	}
	if err := runChild(os.NewFile(3, "pdfium-requests"), os.NewFile(4, "pdfium-answers")); err != nil {
		fmt.Fprintln(os.Stderr, "pdfium child:", err)
		os.Exit(1)
	}
	return true
}

// Frame bounds. A request carries a PDF (the parent's upload bound applies
// before it gets here); the child trusts its parent but still bounds it.
const (
	maxConfigFrame  = 64 << 10
	maxRequestFrame = 1<<32 - 1
	maxReadyFrame   = 64 << 10
)

// runChild serves calls until the parent closes req.
func runChild(req, resp *os.File) error {
	in := bufio.NewReaderSize(req, 64<<10)
	out := bufio.NewWriterSize(resp, 64<<10)
	b, err := readFrame(in, maxConfigFrame)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	cfg, err := decodeConfig(b)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	e, err := New(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	var r enc
	r.byte(stReady)
	r.uint(protocolVersion)
	r.int(int64(os.Getpid()))
	if err := writeFrame(out, r.b); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	for {
		b, err := readFrame(in, maxRequestFrame)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the parent is done with us
			}
			return fmt.Errorf("request: %w", err)
		}
		q, err := decodeRequest(b)
		if err != nil {
			return fmt.Errorf("request: %w", err)
		}
		if err := writeFrame(out, answer(e, q)...); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// answer runs one call on the child's engine. Its context never ends: the
// parent kills the process instead.
func answer(e *Engine, q request) [][]byte {
	ctx := context.Background()
	var r enc
	switch q.op {
	case opText:
		s, err := e.textPart(ctx, q.pdf, q.pages, q.part, q.parts)
		if err != nil {
			return encodeError(err)
		}
		r.byte(stText)
		return [][]byte{r.b, []byte(s)}
	case opMarkdown:
		s, err := e.Markdown(ctx, q.pdf, q.pages)
		if err != nil {
			return encodeError(err)
		}
		r.byte(stText)
		return [][]byte{r.b, []byte(s)}
	case opImages:
		imgs, err := e.Images(ctx, q.pdf, q.pages, q.format, q.dpi, q.quality)
		if err != nil {
			return encodeError(err)
		}
		r.byte(stImages)
		r.uint(uint64(len(imgs)))
		for _, img := range imgs {
			r.uint(uint64(len(img)))
		}
		return append([][]byte{r.b}, imgs...)
	}
	return encodeError(fmt.Errorf("pdfium child: unknown call %d", q.op))
}

// Calls.
const (
	opText byte = iota + 1
	opMarkdown
	opImages
)

// request is one call; pdf is the rest of its frame.
type request struct {
	op           byte
	pages        []int
	format       string
	dpi, quality int
	part, parts  int // Text only: this part of the pages asked (parts 0: all)
	pdf          []byte
}

// encode is the frame's head; pdf follows it.
func (q request) encode() []byte {
	var e enc
	e.byte(q.op)
	e.ints(q.pages)
	e.string(q.format)
	e.int(int64(q.dpi))
	e.int(int64(q.quality))
	e.int(int64(q.part))
	e.int(int64(q.parts))
	return e.b
}

func decodeRequest(b []byte) (request, error) {
	d := dec{b: b}
	q := request{op: d.byte(), pages: d.ints(), format: d.string(), dpi: d.int32(), quality: d.int32(), part: d.int32(), parts: d.int32()}
	if d.err != nil {
		return request{}, d.err
	}
	q.pdf = d.b
	return q, nil
}

// Answers, by their first byte.
const (
	stReady  byte = iota + 1 // version, pid
	stText                   // the rest of the frame is the text
	stImages                 // count, each length, then the images one after another
	stBad                    // a *BadInputError: param, msg, its error's text
	stError                  // any other error: its text
)

func encodeError(err error) [][]byte {
	var e enc
	var bad *BadInputError
	if errors.As(err, &bad) {
		e.byte(stBad)
		e.string(bad.Param)
		e.string(bad.Msg)
		if bad.Err != nil {
			e.string(bad.Err.Error())
		} else {
			e.string("")
		}
		return [][]byte{e.b}
	}
	e.byte(stError)
	e.string(err.Error())
	return [][]byte{e.b}
}

// answerOf decodes a child's answer to a call: the text, or the images
// (slices of b), or the call's error.
func answerOf(b []byte) (text string, imgs [][]byte, callErr error, err error) {
	d := dec{b: b}
	switch d.byte() {
	case stText:
		return string(d.b), nil, nil, d.err
	case stImages:
		n := d.uint()
		if n > uint64(len(d.b)) { // each length takes a byte at least
			d.fail("count past the end")
			return "", nil, nil, d.err
		}
		lens := make([]uint64, n)
		for i := range lens {
			lens[i] = d.uint()
		}
		imgs = make([][]byte, n)
		for i, l := range lens {
			if d.err != nil || l > uint64(len(d.b)) {
				d.fail("image past the end")
				return "", nil, nil, d.err
			}
			imgs[i], d.b = d.b[:l:l], d.b[l:]
		}
		return "", imgs, nil, d.done()
	case stBad:
		bad := &BadInputError{Param: d.string(), Msg: d.string()}
		if s := d.string(); s != "" {
			bad.Err = errors.New(s)
		}
		return "", nil, bad, d.done()
	case stError:
		msg := d.string()
		return "", nil, errors.New(msg), d.done()
	}
	d.fail("unknown answer")
	return "", nil, nil, d.err
}

// The child's Config: one instance, the parent's bounds.
func encodeConfig(c Config) []byte {
	var e enc
	e.uint(protocolVersion)
	e.int(c.MaxMemory)
	e.int(int64(c.MaxPages))
	e.int(c.MaxPixels)
	e.int(c.MaxOutput)
	e.int(c.RecycleAbove)
	e.bool(c.Interruptible)
	e.string(c.CacheDir)
	return e.b
}

func decodeConfig(b []byte) (Config, error) {
	d := dec{b: b}
	if v := d.uint(); d.err == nil && v != protocolVersion {
		return Config{}, fmt.Errorf("protocol %d, this build speaks %d", v, protocolVersion)
	}
	c := Config{Instances: 1, InProcess: true, MaxMemory: d.int(), MaxPages: d.int32(), MaxPixels: d.int(),
		MaxOutput: d.int(), RecycleAbove: d.int(), Interruptible: d.bool(), CacheDir: d.string()}
	return c, d.done()
}
