package pdfium

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The process mode (the default once main has called RunChildIfAsked):
// each PDFium instance lives in a child process of its own, the worker's
// executable run again (child.go). A call runs at full speed (no wazero
// termination checks), and still ends at its context's deadline: the child
// under it is killed (SIGKILL) and another started. PDFium's memory and
// its garbage collector's pauses are the child's: a page that keeps PDFium
// busy for seconds no longer stops the worker's (and an embedded gateway's)
// world.

// childStartTimeout bounds a child's start: running the executable,
// loading (or, the first time, compiling) PDFium and its instance.
const childStartTimeout = time.Minute

// childHeapSlack: a child's Go heap beyond its instance's linear memory
// (the runtime, PDFium's compiled code is mapped outside it), for its
// GOMEMLIMIT: the collector works harder near it, so that the copies a
// growing linear memory leaves behind are returned before the heap doubles.
const childHeapSlack = 256 << 20

// childBaseline is a child's resident memory before any document, about:
// the Go runtime, PDFium's compiled code and a fresh instance (measured
// 56 MiB). A child above RecycleAbove more than that is replaced after
// its call.
const childBaseline = 64 << 20

// childExitWait bounds the wait for a killed child's exit status.
const childExitWait = 5 * time.Second

var errClosed = errors.New("pdfium: engine closed")

// procs is the parent's side: one slot per Config.Instances, each holding
// a running child or none.
type procs struct {
	cfg      Config
	exe      string
	log      *slog.Logger
	tmpCache bool // cfg.CacheDir was made for this engine; removed on Close
	// idle holds a token per slot no call holds: a ready child, or nil
	// (none started, or its start failed: the next call starts one).
	idle chan *child
	// want carries a call's wish for a slot none is free for: a text call
	// spreading over other slots' children gives one back (yield).
	want chan struct{}
	done chan struct{} // closed by close
	// netns: children start in a user and network namespace of their own
	// (no network). Cleared when the kernel refuses that.
	netns atomic.Bool

	// replaced counts children killed and replaced, by Replacement
	// reason, for the worker's metrics.
	replaced [numReasons]atomic.Int64

	mu       sync.Mutex
	closed   bool
	live     map[*child]struct{}
	starting sync.WaitGroup // replacements being started
}

// child is one running child process.
type child struct {
	pid     int
	cmd     *exec.Cmd
	req     *os.File      // requests, to the child
	respF   *os.File      // answers, from it
	resp    *bufio.Reader // over respF
	exited  chan struct{} // closed once it has exited; waitErr is then set
	waitErr error
	kill    func() // SIGKILL, once
	// tail is the end of its output (a Go panic's trace, its last
	// words), for the warning when it fails; drained is closed once all
	// of it is read.
	tail    tail
	drained chan struct{}
	// ownPIDs: it runs in a PID namespace of its own, where it is pid 1.
	ownPIDs bool
}

// tail keeps the last tailBytes of a child's output.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 2 << 10

func (t *tail) add(line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, line...)
	if n := len(t.buf); n > tailBytes {
		t.buf = append(t.buf[:0], t.buf[n-tailBytes:]...)
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func (c *child) dead() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// newProcs starts the first child (so New fails if children cannot run)
// and the others behind it, which load PDFium from the compilation cache
// the first filled.
func newProcs(ctx context.Context, cfg Config) (*procs, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, fmt.Errorf("pdfium: the executable to run children: %w", err)
	}
	p := &procs{cfg: cfg, exe: exe, log: cfg.Log, idle: make(chan *child, cfg.Instances), want: make(chan struct{}, 1), done: make(chan struct{}), live: map[*child]struct{}{}}
	p.netns.Store(netnsSupported)
	if p.cfg.CacheDir == "" {
		if p.cfg.CacheDir, p.tmpCache, err = defaultCacheDir(); err != nil {
			return nil, fmt.Errorf("pdfium: compilation cache: %w", err)
		}
	}
	// Not the caller's context: the first start may compile PDFium
	// (seconds, on a cold cache), which a job's short deadline or a client
	// gone away would otherwise cut short at every try, each compile lost.
	// childStartTimeout bounds it.
	first, err := p.start(context.WithoutCancel(ctx))
	if err != nil {
		_ = p.close()
		return nil, err
	}
	p.idle <- first
	for range cfg.Instances - 1 {
		p.replace()
	}
	return p, nil
}

// defaultCacheDir is where children keep PDFium compiled by wazero: under
// the user's cache directory, shared by the worker's restarts (a child then
// starts in a fraction of the compile time), else a directory of this
// engine's own.
func defaultCacheDir() (string, bool, error) {
	if d, err := os.UserCacheDir(); err == nil {
		d = filepath.Join(d, "docrender", "pdfium-wasm")
		if os.MkdirAll(d, 0o700) == nil {
			return d, false, nil
		}
	}
	d, err := os.MkdirTemp("", "docrender-pdfium-")
	return d, true, err
}

// start runs a child and waits for it to be ready.
func (p *procs) start(ctx context.Context) (*child, error) {
	var c *child
	var err error
	for {
		netns := p.netns.Load()
		c, err = p.spawn(netns)
		if err == nil || !netns || !namespacesRefused(err) {
			break
		}
		// No user namespaces here (a kernel or container that forbids
		// them): children run with the worker's network.
		p.netns.Store(false)
		p.log.Warn("pdfium: children cannot run in a network namespace of their own; they keep the network", "error", err)
	}
	if err != nil {
		return nil, fmt.Errorf("pdfium: start a child: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, childStartTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, c.kill)
	err = writeFrame(c.req, encodeConfig(p.cfg))
	var b []byte
	if err == nil {
		b, err = readFrame(c.resp, maxReadyFrame)
	}
	if !stop() {
		return nil, ctx.Err()
	}
	if err == nil {
		d := dec{b: b}
		if d.byte() != stReady {
			err = fmt.Errorf("%w: not a ready frame", errGarbled)
		} else if v := d.uint(); d.err == nil && v != protocolVersion {
			err = fmt.Errorf("child speaks protocol %d, not %d", v, protocolVersion)
		} else if pid := d.int(); d.done() != nil || (pid != int64(c.pid) && !(c.ownPIDs && pid == 1)) {
			err = fmt.Errorf("%w: ready frame: %v", errGarbled, d.err)
		}
	}
	if err != nil {
		c.kill()
		return nil, p.failure(c, err)
	}
	return c, nil
}

// spawn runs the executable as a child, its environment cleared but for
// the marker (no credentials of the worker reach it).
func (p *procs) spawn(netns bool) (*child, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		respR.Close()
		respW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        p.exe,
		Args:        []string{"docrender-pdfium"},
		Env:         []string{childEnv + "=" + p.cfg.childMode, "GOMEMLIMIT=" + strconv.FormatInt(p.cfg.MaxMemory+childHeapSlack, 10)},
		Dir:         "/",
		Stdout:      logW,
		Stderr:      logW,
		ExtraFiles:  []*os.File{reqR, respW}, // fd 3, fd 4
		SysProcAttr: childAttr(netns),
	}
	err = cmd.Start()
	// The child has its copies; the parent keeps its own ends only, so a
	// dead child is EOF on answers and EPIPE on requests.
	reqR.Close()
	respW.Close()
	logW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		logR.Close()
		return nil, err
	}
	c := &child{pid: cmd.Process.Pid, cmd: cmd, req: reqW, respF: respR, resp: bufio.NewReaderSize(respR, 64<<10), exited: make(chan struct{}), drained: make(chan struct{}),
		ownPIDs: netns && netnsSupported}
	c.kill = sync.OnceFunc(func() { _ = cmd.Process.Kill() })
	go p.drain(logR, c)
	go func() {
		c.waitErr = cmd.Wait()
		reqW.Close()
		respR.Close()
		p.mu.Lock()
		delete(p.live, c)
		p.mu.Unlock()
		close(c.exited)
	}()
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.live[c] = struct{}{}
	}
	p.mu.Unlock()
	if closed {
		c.kill()
		return nil, errClosed
	}
	return c, nil
}

// drain copies a child's stdout and stderr into the log at debug, a line
// at a time (long lines in pieces).
func (p *procs) drain(r *os.File, c *child) {
	defer close(c.drained)
	defer r.Close()
	br := bufio.NewReaderSize(r, 4<<10)
	for {
		line, err := br.ReadSlice('\n')
		c.tail.add(line)
		if s := strings.TrimRight(string(line), "\n"); s != "" {
			p.log.Debug("pdfium child", "pid", c.pid, "output", s)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// failure is the error of a call whose child failed (it died, or sent a
// frame that is not an answer): the "instance failed" error of the
// in-process engine, the child's exit status for the log.
func (p *procs) failure(c *child, err error) error {
	c.kill()
	select {
	case <-c.exited:
		if c.waitErr != nil {
			err = fmt.Errorf("%w (child %d: %v)", err, c.pid, c.waitErr)
		}
	case <-time.After(childExitWait):
	}
	select {
	case <-c.drained:
	case <-time.After(childExitWait):
	}
	p.log.Warn("pdfium: a child failed; it is replaced", "pid", c.pid, "error", err, "output", c.tail.String())
	return fmt.Errorf("pdfium: instance failed and was replaced: %w", err)
}

// take waits for a slot and returns its child, started if it has none.
// A call that has to wait asks a spreading text call for one of the slots
// it borrowed (want): a job's slot is its own to use (DESIGN §5).
func (p *procs) take(ctx context.Context) (*child, error) {
	var c *child
	select {
	case c = <-p.idle:
		return p.ready(ctx, c)
	default:
	}
	select {
	case p.want <- struct{}{}:
	default:
	}
	select {
	case <-p.done:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	case c = <-p.idle:
		return p.ready(ctx, c)
	}
}

// ready is the child of a slot just taken, started if it has none.
func (p *procs) ready(ctx context.Context, c *child) (*child, error) {
	if c != nil && !c.dead() {
		return c, nil
	}
	c, err := p.start(ctx)
	if err != nil {
		p.idle <- nil
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return c, nil
}

// takeIdle takes up to n slots whose child is ready, without waiting.
func (p *procs) takeIdle(n int) []*child {
	var got []*child
	for len(got) < n {
		select {
		case c := <-p.idle:
			if c == nil || c.dead() {
				p.idle <- c
				return got
			}
			got = append(got, c)
		default:
			return got
		}
	}
	return got
}

// release gives a slot back: its child when the call left it well, else
// a child started in its place (in the background; the slot is taken till
// then).
func (p *procs) release(c *child, ok bool) {
	if ok && !c.dead() {
		p.idle <- c
		return
	}
	c.kill()
	p.replace()
}

// replace starts a child in the background for a slot whose token it then
// gives back.
func (p *procs) replace() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.idle <- nil
		return
	}
	p.starting.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.starting.Done()
		c, err := p.start(context.Background())
		if err != nil {
			if !errors.Is(err, errClosed) {
				p.log.Warn("pdfium: a child did not start; the next call tries again", "error", err)
			}
			c = nil
		}
		p.idle <- c
	}()
}

// call sends q (and pdf) to c and returns its answer: the text, or the
// images, or the call's own error. A context done before the answer kills
// the child (the error is ctx.Err()); a child that dies or garbles its
// answer fails the call. Either way the slot gets a new child.
func (p *procs) call(ctx context.Context, c *child, q request, pdf []byte) (string, [][]byte, error) {
	stop := context.AfterFunc(ctx, c.kill)
	err := writeFrame(c.req, q.encode(), pdf)
	var b []byte
	if err == nil {
		b, err = readFrame(c.resp, p.maxAnswer())
	}
	if !stop() {
		p.log.Debug("pdfium: a call's context ended; its child was killed and is replaced", "pid", c.pid, "error", context.Cause(ctx))
		if !errors.Is(context.Cause(ctx), errYielded) {
			p.replaced[ReplacedDeadline].Add(1)
		}
		p.release(c, false)
		return "", nil, ctx.Err()
	}
	var text string
	var imgs [][]byte
	var callErr error
	if err == nil {
		text, imgs, callErr, err = answerOf(b)
	}
	if err != nil {
		err = p.failure(c, err)
		p.replaced[ReplacedFailed].Add(1)
		p.release(c, false)
		return "", nil, err
	}
	// A child that grew past RecycleAbove is replaced: its instance would
	// be (in the child), but the child's heap would keep the memory.
	keep := residentBytes(c.pid) <= p.cfg.RecycleAbove+childBaseline
	if !keep {
		p.replaced[ReplacedRecycled].Add(1)
	}
	p.release(c, keep)
	return text, imgs, callErr
}

// maxAnswer bounds an answer's frame: MaxOutput of images, or of text
// (checked in characters, up to 4 bytes each), and room for the rest.
func (p *procs) maxAnswer() int64 {
	return min(4*p.cfg.MaxOutput+1<<20, math.MaxUint32)
}

// one runs q on one child.
func (p *procs) one(ctx context.Context, q request, pdf []byte) (string, [][]byte, error) {
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	c, err := p.take(ctx)
	if err != nil {
		return "", nil, err
	}
	return p.call(ctx, c, q, pdf)
}

// text reads the pages asked as Text does in-process: on one child, or,
// when others are idle, cut in ranges read on them at once (spread.go's
// rule: at most one range a core and one per minSpreadPages pages). The
// number of pages is the child's to know when none are asked: each child
// is given the number of parts offered, reads its own range of the pages
// and nothing when the document has too few to spread that far.
func (p *procs) text(ctx context.Context, pdf []byte, pages []int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	c, err := p.take(ctx)
	if err != nil {
		return "", err
	}
	most := runtime.GOMAXPROCS(0)
	if pages != nil {
		most = min(most, len(pages)/minSpreadPages)
	}
	// A wish for a slot from before is stale: none was idle for it then.
	select {
	case <-p.want:
	default:
	}
	more := p.takeIdle(most - 1)
	parts := 1 + len(more)
	q := request{op: opText, pages: pages, parts: parts}
	if parts == 1 {
		text, _, err := p.call(ctx, c, q, pdf)
		return text, err
	}
	texts := make([]string, parts)
	errs := make([]error, parts)
	// The borrowed slots are given back when another call waits for one:
	// their child is stopped and the part read again on a slot of this
	// call's once its own part is done.
	bctx, yield := context.WithCancelCause(ctx)
	defer yield(nil)
	stopWatch := make(chan struct{})
	go func() {
		select {
		case <-p.want:
			yield(errYielded)
		case <-stopWatch:
		}
	}()
	var wg sync.WaitGroup
	for i, mc := range more {
		q := q
		q.part = i + 1
		wg.Go(func() { texts[i+1], _, errs[i+1] = p.call(bctx, mc, q, pdf) })
	}
	texts[0], _, errs[0] = p.call(ctx, c, q, pdf)
	wg.Wait()
	close(stopWatch)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	for i := 1; i < parts && errors.Is(context.Cause(bctx), errYielded); i++ {
		if errs[i] == nil || !errors.Is(errs[i], context.Canceled) {
			continue
		}
		c, err := p.take(ctx)
		if err != nil {
			return "", err
		}
		q := q
		q.part = i
		texts[i], _, errs[i] = p.call(ctx, c, q, pdf)
	}
	n := 0
	for i, err := range errs {
		if err != nil {
			return "", err
		}
		n += len(texts[i])
	}
	if int64(n) > p.cfg.MaxOutput {
		return "", badInput("pages", "the text of these pages is larger than %d bytes: ask for fewer pages", p.cfg.MaxOutput)
	}
	return strings.Join(texts, ""), nil
}

// errYielded is why a borrowed slot's part stopped: another call wanted
// the slot.
var errYielded = errors.New("pdfium: slot given back to a waiting call")

// close kills every child and waits for them.
func (p *procs) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	live := make([]*child, 0, len(p.live))
	for c := range p.live {
		live = append(live, c)
	}
	p.mu.Unlock()
	for _, c := range live {
		c.kill()
	}
	p.starting.Wait()
	for _, c := range live {
		select {
		case <-c.exited:
		case <-time.After(childExitWait):
		}
	}
	if p.tmpCache {
		return os.RemoveAll(p.cfg.CacheDir)
	}
	return nil
}

// pids are the children running now (tests).
func (p *procs) pids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	for c := range p.live {
		pids = append(pids, c.pid)
	}
	return pids
}

// Replacement is why a child was killed and replaced.
type Replacement int

const (
	// ReplacedDeadline: its call's context ended first (a slow or hostile
	// page, or a caller that went away).
	ReplacedDeadline Replacement = iota
	// ReplacedFailed: it died or answered with something not an answer.
	ReplacedFailed
	// ReplacedRecycled: it grew past RecycleAbove.
	ReplacedRecycled
	numReasons
)

// ReplacementReasons are every Replacement's label, in order.
func ReplacementReasons() []string {
	out := make([]string, 0, numReasons)
	for r := range numReasons {
		out = append(out, r.String())
	}
	return out
}

// String is the reason's metric label.
func (r Replacement) String() string {
	return [...]string{"deadline", "failed", "recycled"}[r]
}

// Replacements counts the children the engine killed and replaced, by
// reason; nil in process mode's absence (InProcess).
func (e *Engine) Replacements() map[Replacement]int64 {
	if e.procs == nil {
		return nil
	}
	out := make(map[Replacement]int64, numReasons)
	for r := range numReasons {
		out[r] = e.procs.replaced[r].Load()
	}
	return out
}
