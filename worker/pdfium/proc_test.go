package pdfium

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/testenv/rawpdf"
	"github.com/docrender/docrender/pkg/testenv/syncbuf"
)

// childTestEngine: one engine of two children for the tests of the
// process mode, with the bounds of the in-process testEngine.
var childTestEngine = sync.OnceValues(func() (*Engine, error) {
	return New(context.Background(), Config{Instances: 2, MaxMemory: 256 << 20, RecycleAbove: 64 << 20})
})

func childEngine(t testing.TB) *Engine {
	t.Helper()
	e, err := childTestEngine()
	if err != nil {
		t.Fatal(err)
	}
	if e.procs == nil {
		t.Fatal("the engine runs in-process: TestMain does not call RunChildIfAsked")
	}
	return e
}

// newChildEngine is an engine of its own, closed with the test.
func newChildEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestChildSameOutput: text, Markdown and images through children are the
// in-process engine's, byte for byte, and so are its refusals; a long
// document's text spread over both children is too.
func TestChildSameOutput(t *testing.T) {
	ce, ie := childEngine(t), engine(t)
	ctx := context.Background()
	gen := rawpdf.TextPages(612, 792, []string{"Hello world", "second line here"}, []string{"Page two (text)"}, []string{"Third page"})
	tagged, untagged, long := readFile(t, "testdata/tagged.pdf"), readFile(t, "testdata/untagged.pdf"), readFile(t, benchPDF)
	type result struct {
		text string
		imgs [][]byte
		err  error
	}
	text := func(pdf []byte, pages ...int) func(*Engine) result {
		return func(e *Engine) result { s, err := e.Text(ctx, pdf, pages); return result{text: s, err: err} }
	}
	markdown := func(pdf []byte, pages ...int) func(*Engine) result {
		return func(e *Engine) result { s, err := e.Markdown(ctx, pdf, pages); return result{text: s, err: err} }
	}
	images := func(pdf []byte, format string, dpi int, pages ...int) func(*Engine) result {
		return func(e *Engine) result {
			b, err := e.Images(ctx, pdf, pages, format, dpi, 0)
			return result{imgs: b, err: err}
		}
	}
	for _, tc := range []struct {
		name string
		call func(*Engine) result
	}{
		{"text generated", text(gen)},
		{"text generated reordered", text(gen, 3, 1)},
		{"text tagged", text(tagged)},
		{"text untagged", text(untagged)},
		{"text long, all (spread)", text(long)},
		{"text long, 17 pages (spread)", text(long, 50, 3, 1, 2, 49, 7, 7, 20, 33, 12, 11, 10, 9, 8, 40, 41, 42)},
		{"text long, 3 pages", text(long, 1, 17, 50)},
		{"markdown tagged", markdown(tagged)},
		{"markdown untagged", markdown(untagged)},
		{"markdown long", markdown(long)},
		{"png 72", images(gen, "png", 72)},
		{"png 150 one page", images(tagged, "png", 150, 1)},
		{"jpeg", images(untagged, "jpeg", 72)},
		{"webp", images(long, "webp", 50, 2, 1)},
		{"transparent", images(transparentPDF(), "png", 72)},
		{"refused: not a PDF", text([]byte("hello"))},
		{"refused: empty", markdown(nil)},
		{"refused: page past the end", text(gen, 4)},
		{"refused: password", images(readFile(t, "testdata/encrypted.pdf"), "png", 72)},
		{"refused: dpi", images(gen, "png", 601)},
		{"refused: format", images(gen, "gif", 72)},
		{"refused: memory", text(bombPDF(512 << 20))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, got := tc.call(ie), tc.call(ce)
			var wb, gb *BadInputError
			switch {
			case want.err != nil && !errors.As(want.err, &wb):
				t.Fatalf("in-process: %v", want.err)
			case want.err != nil:
				if !errors.As(got.err, &gb) || gb.Param != wb.Param || gb.Msg != wb.Msg {
					t.Errorf("child: %v (%T), want %s: %q", got.err, got.err, wb.Param, wb.Msg)
				}
			case got.err != nil:
				t.Fatalf("child: %v", got.err)
			case got.text != want.text:
				t.Errorf("child's text differs:\n%q\nwant\n%q", got.text, want.text)
			case !slices.EqualFunc(got.imgs, want.imgs, bytes.Equal):
				t.Errorf("child's images differ (%d, want %d)", len(got.imgs), len(want.imgs))
			}
		})
	}
}

// slowPDF keeps one PDFium call busy for seconds: 200 MB of content to
// inflate and parse on one page.
var slowPDF = sync.OnceValue(func() []byte { return bombPDF(200 << 20) })

// TestChildDeadline: a call whose context ends mid-call (inside PDFium,
// which cannot stop there) returns at once with the context's error, its
// child killed; the next call is served by a new child.
func TestChildDeadline(t *testing.T) {
	e := newChildEngine(t, Config{Instances: 1})
	good := rawpdf.TextPages(612, 792, []string{"still here"})
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 300*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.procs.pids()
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			_, err := e.Text(ctx, slowPDF(), nil)
			late := time.Since(start) - 300*time.Millisecond
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			t.Logf("returned %v after the context ended", late.Round(time.Millisecond))
			if late > time.Second {
				t.Errorf("returned %v after the context ended", late)
			}
			start = time.Now()
			if got, err := e.Text(context.Background(), good, nil); err != nil || got != "still here\n\f" {
				t.Fatalf("next call: %q, %v", got, err)
			}
			t.Logf("next call (a new child started) took %v", time.Since(start).Round(time.Millisecond))
			if after := e.procs.pids(); slices.Equal(before, after) || len(after) != 1 {
				t.Errorf("children %v before, %v after: want a new one", before, after)
			}
		})
	}
	// Counted for the worker's metrics, each under its reason.
	if got := e.Replacements(); got[ReplacedDeadline] != 2 || got[ReplacedFailed] != 0 || got[ReplacedRecycled] != 0 {
		t.Errorf("replacements %v, want 2 for deadlines", got)
	}
}

// TestChildKilled: a child killed from outside mid-call fails that call
// alone (an internal error, not the client's), and the next is served.
func TestChildKilled(t *testing.T) {
	e := newChildEngine(t, Config{Instances: 1})
	pids := e.procs.pids()
	if len(pids) != 1 {
		t.Fatalf("children %v", pids)
	}
	time.AfterFunc(300*time.Millisecond, func() { syscall.Kill(pids[0], syscall.SIGKILL) })
	start := time.Now()
	_, err := e.Text(context.Background(), slowPDF(), nil)
	var bad *BadInputError
	if err == nil || errors.As(err, &bad) || !strings.Contains(err.Error(), "instance failed") {
		t.Fatalf("got %v, want an instance failure", err)
	}
	t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
	if got, err := e.Text(context.Background(), rawpdf.TextPages(612, 792, []string{"x"}), nil); err != nil || got != "x\n\f" {
		t.Fatalf("next call: %q, %v", got, err)
	}
	if got := e.Replacements(); got[ReplacedFailed] != 1 || got[ReplacedDeadline] != 0 {
		t.Errorf("replacements %v, want 1 failed", got)
	}
}

// TestChildGarbage: an answer that is not one (a length past the bound,
// an unknown kind, counts and lengths past the frame, a child that exits)
// fails its call as an instance failure, without allocating what it claims
// and without waiting; a child that is not ready fails New.
func TestChildGarbage(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{
		{"huge", "larger than allowed"},
		{"garbage", "garbled"},
		{"lying-count", "garbled"},
		{"lying-length", "garbled"},
		{"exit", "exit status 3"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var logs syncBuffer
			e := newChildEngine(t, Config{Instances: 1, childMode: tc.mode, Log: slog.New(slog.NewTextHandler(&logs, nil))})
			start := time.Now()
			_, err := e.Images(context.Background(), rawpdf.TextPages(612, 792, []string{"x"}), nil, "png", 72, 0)
			if err == nil || !strings.Contains(err.Error(), "instance failed") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an instance failure: …%s…", err, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			// The child's last words reach the warning, at the default level.
			if tc.mode == "exit" && !strings.Contains(logs.String(), "LASTWORDS of the child") {
				t.Errorf("the warning lacks the child's output:\n%s", logs.String())
			}
		})
	}
	for _, mode := range []string{"bad-ready", "old-ready"} {
		t.Run(mode, func(t *testing.T) {
			e, err := New(context.Background(), Config{Instances: 1, childMode: mode})
			if err == nil {
				e.Close()
				t.Fatal("New accepted a child that is not ready")
			}
		})
	}
}

// TestChildConcurrent: Instances calls at once and more than that, each
// with its own answer, on children all of which serve.
func TestChildConcurrent(t *testing.T) {
	e := childEngine(t)
	for _, callers := range []int{e.cfg.Instances, 4 * e.cfg.Instances} {
		t.Run(fmt.Sprint(callers), func(t *testing.T) { callAtOnce(t, e, callers) })
	}
}

// TestChildIsolated: a child's environment is the marker and GOMEMLIMIT
// alone (nothing of the worker's, credentials included), and where the kernel lets it, its
// network namespace is not the worker's.
func TestChildIsolated(t *testing.T) {
	t.Setenv("DOCRENDER_S3_SECRET_KEY", "not for children")
	e := newChildEngine(t, Config{Instances: 1})
	pid := e.procs.pids()[0]
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Skip(err)
	}
	if got := strings.Split(strings.TrimRight(string(env), "\x00"), "\x00"); len(got) != 2 || got[0] != childEnv+"="+childRun || !strings.HasPrefix(got[1], "GOMEMLIMIT=") {
		t.Errorf("child's environment %q", got)
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	t.Logf("network namespace: worker %s, child %s (own: %v)", self, theirs, e.procs.netns.Load())
	if e.procs.netns.Load() && self == theirs {
		t.Errorf("child shares the worker's network namespace %s", self)
	}
	// Its own PID namespace: it sees no other process, so it cannot
	// signal the worker or another child.
	selfPID, _ := os.Readlink("/proc/self/ns/pid")
	theirPID, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if e.procs.netns.Load() && selfPID == theirPID {
		t.Errorf("child shares the worker's PID namespace %s", selfPID)
	}
	if os.Getenv(noUsernsEnv) != "" && (e.procs.netns.Load() || self != theirs) {
		t.Errorf("without user namespaces: netns %v, child's %s, worker's %s", e.procs.netns.Load(), theirs, self)
	}
	if got, err := e.Text(context.Background(), rawpdf.TextPages(612, 792, []string{"x"}), nil); err != nil || got != "x\n\f" {
		t.Errorf("text: %q, %v", got, err)
	}
}

// noUsernsEnv marks TestChildIsolated run where no user namespace can be
// made (TestChildWithoutNamespaces).
const noUsernsEnv = "DOCRENDER_PDFIUM_TEST_NO_USERNS"

// TestChildWithoutNamespaces: where the kernel refuses user namespaces (a
// container's seccomp profile, a sysctl), children start without them,
// with the worker's network. TestChildIsolated runs in a user namespace
// whose own limit of namespaces is 0.
func TestChildWithoutNamespaces(t *testing.T) {
	if os.Getenv(noUsernsEnv) != "" {
		t.Skip("the inner run")
	}
	if exec.Command("unshare", "-Ur", "true").Run() != nil {
		t.Skip("no unshare -Ur here")
	}
	cmd := exec.Command("unshare", "-Ur", "sh", "-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`, "sh",
		os.Args[0], "-test.run=^TestChildIsolated$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), noUsernsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !strings.Contains(string(out), "(own: false)") || !strings.Contains(string(out), "--- PASS: TestChildIsolated") {
		t.Errorf("inner run:\n%s", out)
	}
}

// TestNotChildCapable: a process whose main never called RunChildIfAsked
// runs PDFium in-process, interruptible.
func TestNotChildCapable(t *testing.T) {
	childCapable.Store(false)
	defer childCapable.Store(true)
	e := newChildEngine(t, Config{Instances: 1})
	if e.procs != nil || !e.cfg.Interruptible {
		t.Errorf("procs %v, interruptible %v: want in-process and interruptible", e.procs != nil, e.cfg.Interruptible)
	}
}

// TestFrames: the frame reader refuses a length past its bound before
// allocating, and an answer's counts and lengths are checked against the
// frame.
func TestFrames(t *testing.T) {
	if _, err := readFrame(bytes.NewReader([]byte{0, 0, 1, 0}), 255); !errors.Is(err, errFrameTooLarge) {
		t.Errorf("past the bound: %v", err)
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 9, 1, 2}), 255); err == nil {
		t.Error("short frame accepted")
	}
	var buf bytes.Buffer
	writeFrame(&buf, []byte("ab"), []byte("cd"))
	if b, err := readFrame(&buf, 4); err != nil || string(b) != "abcd" {
		t.Errorf("round trip: %q, %v", b, err)
	}
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"empty", nil},
		{"unknown kind", []byte{77}},
		{"images count past the end", []byte{stImages, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"image length past the end", []byte{stImages, 1, 9, 1, 2}},
		{"images left over", []byte{stImages, 1, 1, 'a', 'b'}},
		{"bad input cut short", []byte{stBad, 5, 'p'}},
		{"bad number", []byte{stError, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, _, err := answerOf(tc.frame); !errors.Is(err, errGarbled) {
				t.Errorf("got %v, want a garbled frame", err)
			}
		})
	}
	q := request{op: opImages, pages: []int{3, -1, 7}, format: "webp", dpi: 150, quality: 80, part: 1, parts: 2}
	got, err := decodeRequest(append(q.encode(), "%PDF"...))
	if q.pdf = []byte("%PDF"); err != nil || fmt.Sprint(got) != fmt.Sprint(q) {
		t.Errorf("request round trip: %+v, %v", got, err)
	}
	if _, err := decodeRequest([]byte{opText, 0xff, 0xff, 0xff, 0x0f}); !errors.Is(err, errGarbled) {
		t.Errorf("pages count past the end: %v", err)
	}
}

// TestChildDiesWithParent: a worker killed outright takes its children
// with it (Pdeathsig), in their namespaces too.
func TestChildDiesWithParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), testParentEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("parent said %q: %v", line, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return // gone (reaped)
		}
		// pid (comm) state …: a zombie has been killed, its reaper not yet by.
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d still running 3 s after its parent was killed", pid)
		}
	}
}

// TestChildGCNotHeld: while a child spends seconds in one PDFium call, the
// worker's garbage collector is not held up. In-process without
// Interruptible a collection waits for the call to leave wasm: 1.5 s
// measured here with this page, against 55 ms through a child (a loaded
// machine).
func TestChildGCNotHeld(t *testing.T) {
	e := newChildEngine(t, Config{Instances: 1})
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		e.Text(context.Background(), slowPDF(), nil)
	}()
	var worst time.Duration
	for {
		select {
		case <-done:
			t.Logf("longest runtime.GC() during a %v call: %v", time.Since(start).Round(time.Millisecond), worst)
			if worst > 500*time.Millisecond {
				t.Errorf("a GC took %v while a child was busy", worst)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		s := time.Now()
		runtime.GC()
		worst = max(worst, time.Since(s))
	}
}

// TestChildRecycle: a child whose memory grew past RecycleAbove on a
// document is replaced after its call (its heap would keep the memory).
func TestChildRecycle(t *testing.T) {
	e := newChildEngine(t, Config{Instances: 1, RecycleAbove: 64 << 20})
	before := e.procs.pids()
	if _, err := e.Text(context.Background(), bombPDF(80<<20), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Text(context.Background(), rawpdf.TextPages(612, 792, []string{"x"}), nil); err != nil {
		t.Fatal(err)
	}
	after := e.procs.pids()
	if len(after) != 1 || slices.Equal(before, after) {
		t.Fatalf("children %v before, %v after: want a new one", before, after)
	}
	if n := residentBytes(after[0]); n > 64<<20+childBaseline {
		t.Errorf("new child has %d MiB", n>>20)
	}
	if got := e.Replacements(); got[ReplacedRecycled] != 1 {
		t.Errorf("replacements %v, want 1 recycled", got)
	}
	if ReplacementReasons()[ReplacedRecycled] != "recycled" || len(ReplacementReasons()) != 3 {
		t.Errorf("reasons %v", ReplacementReasons())
	}
}

// TestChildStartOutlivesCaller: the first child starts whole even when the
// caller's context ends meanwhile (a job's short deadline would otherwise
// cut every compile of PDFium short, each lost); the engine then serves.
func TestChildStartOutlivesCaller(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	e, err := New(ctx, Config{Instances: 1})
	if err != nil {
		t.Fatalf("New under a 20 ms context: %v", err)
	}
	defer e.Close()
	if got, err := e.Text(context.Background(), rawpdf.TextPages(612, 792, []string{"served"}), nil); err != nil || got != "served\n\f" {
		t.Fatalf("text %q, %v", got, err)
	}
}

// TestChildYield (DESIGN §5): a text call spread over another slot's child
// gives the slot back when another call waits for one: the other call is
// served at once, not after the spreading call, whose text is whole.
func TestChildYield(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("spreading needs two cores")
	}
	e := newChildEngine(t, Config{Instances: 2})
	for deadline := time.Now().Add(10 * time.Second); len(e.procs.pids()) < 2 || len(e.procs.idle) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("children %v, %d idle", e.procs.pids(), len(e.procs.idle))
		}
		time.Sleep(10 * time.Millisecond)
	}
	slow := rawpdf.SlowPages(2*minSpreadPages, 40<<20)
	type answer struct {
		text string
		err  error
		took time.Duration
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		text, err := e.Text(context.Background(), slow, nil)
		done <- answer{text, err, time.Since(start)}
	}()
	time.Sleep(500 * time.Millisecond) // both children at work
	asked := time.Now()
	got, err := e.Text(context.Background(), rawpdf.TextPages(612, 792, []string{"my turn"}), nil)
	waited := time.Since(asked)
	if err != nil || got != "my turn\n\f" {
		t.Fatalf("the waiting call: %q, %v", got, err)
	}
	a := <-done
	t.Logf("waiting call served in %v; the spreading call took %v", waited.Round(time.Millisecond), a.took.Round(time.Millisecond))
	if a.err != nil || strings.Count(a.text, "\f") != 2*minSpreadPages {
		t.Fatalf("the spreading call: %d pages of text, %v", strings.Count(a.text, "\f"), a.err)
	}
	// Without the slot given back it waits for the borrowed part: about
	// half the spreading call (measured: 1.4 of 2.8 s); given back, a
	// child's restart (0.26 of 3.7 s).
	if 3*waited >= a.took {
		t.Errorf("the waiting call was served after %v of the spreading call's %v: no slot was given back", waited, a.took)
	}
	if got := e.Replacements(); got[ReplacedDeadline] != 0 {
		t.Errorf("a slot given back counted as a deadline: %v", got)
	}
}

// syncBuffer is a buffer safe for the log's goroutines.
type syncBuffer = syncbuf.Buffer
