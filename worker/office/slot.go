package office

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// request and reply are the helper's JSON lines (see helper.py).
type request struct {
	ID         int    `json:"id"`
	In         string `json:"in"`
	Out        string `json:"out"`
	Kind       string `json:"kind"`
	Landscape  bool   `json:"landscape,omitempty"`
	PageRange  string `json:"pageRange,omitempty"`
	PDFVersion int    `json:"pdfVersion,omitempty"`
}

type reply struct {
	ID    int    `json:"id"`
	Ready bool   `json:"ready"`
	PID   int    `json:"pid"`
	OK    bool   `json:"ok"`
	Pages int    `json:"pages"`
	Class string `json:"class"`
	Error string `json:"error"`
}

// slot is one LibreOffice (and its helper). Only the holder of the slot
// (taken from Engine.free) converts on it; mu guards proc against Close.
type slot struct {
	e   *Engine
	n   int
	dir string

	mu   sync.Mutex
	proc *process
	docs int // documents since the last start
	seq  int // request ids
}

// process is one running helper with its LibreOffice, in a process group
// of their own.
type process struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies chan reply    // closed when the helper's stdout ends
	exited  chan struct{} // closed when the helper has been reaped
	soffice int           // LibreOffice's pid, for tests and logs
}

// start (re)starts the slot's process. A kept profile that fails to start
// is thrown away and the start tried once more on a fresh one.
func (s *slot) start(ctx context.Context, fresh bool) error {
	s.stop()
	err := s.startOnce(ctx, fresh)
	if err != nil && !fresh && ctx.Err() == nil {
		s.e.cfg.Log.Warn("office: slot failed to start on its kept profile; starting on a fresh one", "slot", s.n, "err", err)
		err = s.startOnce(ctx, true)
	}
	return err
}

func (s *slot) startOnce(ctx context.Context, fresh bool) error {
	began := time.Now()
	e := s.e
	profile := filepath.Join(s.dir, "profile")
	if err := writeProfile(profile, fresh); err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, "tmp")
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	// The pipe's name is unique per start, so a dying process's pipe is
	// never mistaken for the new one's.
	pipe := fmt.Sprintf("docrender-%d-%d-%d", os.Getpid(), s.n, time.Now().UnixNano())
	args := []string{e.python, filepath.Join(e.workDir, "helper.py"), e.soffice, profile, pipe, strconv.FormatInt(e.cfg.MaxMemory, 10)}
	if e.netns {
		// A network namespace with no interface but a downed loopback:
		// nothing a document links to (http, DDE/OLE servers, SMB) can be
		// reached. The UNO bridge is a Unix socket on the file system, so
		// the helper still reaches its LibreOffice.
		args = append([]string{"unshare", "--net", "--map-root-user", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+s.dir, "PYTHONDONTWRITEBYTECODE=1")
	// A group of its own, so one kill takes the helper and LibreOffice
	// (and anything they started); Pdeathsig so a worker that dies takes
	// its slots with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("office: start slot %d: %w", s.n, err)
	}
	p := &process{cmd: cmd, stdin: stdin, replies: make(chan reply, 1), exited: make(chan struct{})}
	go func() {
		defer close(p.replies)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var r reply
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				p.replies <- r
			}
		}
	}()
	go func() {
		// LibreOffice's own warnings ("failed to launch javaldx", ...):
		// for an operator chasing a problem, not for every request.
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			e.cfg.Log.Debug("office: slot says", "slot", s.n, "line", sc.Text())
		}
		// A line past the scanner's buffer ends the scan: the pipe is
		// still drained, or LibreOffice would block writing to it.
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	s.mu.Lock()
	s.proc = p
	s.docs = 0
	s.mu.Unlock()

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case r, ok := <-p.replies:
		if !ok || !r.Ready {
			s.stop()
			if r.Error == "" {
				r.Error = "the helper exited"
			}
			return fmt.Errorf("office: slot %d did not start: %s", s.n, r.Error)
		}
		p.soffice = r.PID
		e.cfg.Log.Debug("office: slot started", "slot", s.n, "took", time.Since(began), "pid", r.PID, "fresh", fresh)
		return nil
	case <-timer.C:
		s.stop()
		return fmt.Errorf("office: slot %d did not start within %s", s.n, startTimeout)
	case <-ctx.Done():
		s.stop()
		return ctx.Err()
	}
}

// stop kills the slot's process group and waits for it to be reaped.
func (s *slot) stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	// LibreOffice first, so its parent (the helper, which lets the kernel
	// reap its children) is alive to have it reaped; then the group.
	if p.soffice > 0 && syscall.Kill(p.soffice, syscall.SIGKILL) == nil {
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if syscall.Kill(p.soffice, 0) == syscall.ESRCH {
				break
			}
		}
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
}

// current is the running process, or nil.
func (s *slot) current() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// convert runs one document on the slot. restart says the slot's process
// was killed (or is due for its MaxDocuments restart) and must be started
// again before its next document.
func (s *slot) convert(ctx context.Context, in Input, req request) (pdf []byte, pages int, restart bool, err error) {
	e := s.e
	p := s.current()
	if p == nil {
		// Its last restart failed: try again now, for this document.
		if err := s.start(ctx, false); err != nil {
			return nil, 0, false, err
		}
		if p = s.current(); p == nil {
			return nil, 0, false, ErrClosed
		}
	}
	work := filepath.Join(s.dir, "io")
	_ = os.RemoveAll(work)
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, 0, false, err
	}
	defer os.RemoveAll(work)
	// The file is named by us (doc.<ext>), never by the client: the name
	// reaches LibreOffice's title and Calc's sheet names.
	req.In = filepath.Join(work, "doc."+req.Kind)
	req.Out = filepath.Join(work, "doc.pdf")
	if err := os.WriteFile(req.In, in.Data, 0o600); err != nil {
		return nil, 0, false, err
	}
	s.seq++
	req.ID = s.seq
	line, _ := json.Marshal(req)
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		s.stop()
		return nil, 0, true, s.closedOr(fmt.Errorf("%s: %w", in.Name, ErrCrashed))
	}

	timer := time.NewTimer(e.cfg.Timeout)
	defer timer.Stop()
	var r reply
	select {
	case got, ok := <-p.replies:
		if !ok {
			s.stop()
			return nil, 0, true, s.closedOr(fmt.Errorf("%s: %w", in.Name, ErrCrashed))
		}
		r = got
	case <-timer.C:
		e.cfg.Log.Warn("office: document timed out; slot restarted", "slot", s.n, "file", in.Name, "timeout", e.cfg.Timeout)
		s.stop()
		return nil, 0, true, fmt.Errorf("%s: %w (over %s)", in.Name, ErrTimeout, e.cfg.Timeout)
	case <-ctx.Done():
		// LibreOffice cannot be told to stop one conversion: the slot goes.
		s.stop()
		return nil, 0, true, ctx.Err()
	case <-e.closed:
		s.stop()
		return nil, 0, true, ErrClosed
	}
	if r.ID != req.ID {
		s.stop()
		return nil, 0, true, fmt.Errorf("office: slot %d answered request %d to request %d", s.n, r.ID, req.ID)
	}
	if !r.OK {
		switch r.Class {
		case "password":
			return nil, 0, false, &BadInputError{File: in.Name, Reason: "the document is password-protected; remove its password and send it again"}
		case "unreadable":
			e.cfg.Log.Debug("office: unreadable document", "file", in.Name, "err", r.Error)
			return nil, 0, false, &BadInputError{File: in.Name, Reason: fmt.Sprintf("LibreOffice cannot read it as a .%s document (damaged, or not that format)", req.Kind)}
		case "unsupported":
			return nil, 0, false, &BadInputError{File: in.Name, Reason: r.Error}
		case "crash":
			e.cfg.Log.Warn("office: LibreOffice died on a document; slot restarted", "slot", s.n, "file", in.Name, "err", r.Error)
			s.stop()
			return nil, 0, true, s.closedOr(fmt.Errorf("%s: %w", in.Name, ErrCrashed))
		default:
			// An export that failed may leave the document open or the
			// process in a state we cannot see: start afresh. The detail
			// may hold our paths, so it goes to the log only.
			e.cfg.Log.Warn("office: export failed; slot restarted", "slot", s.n, "file", in.Name, "err", r.Error)
			s.stop()
			return nil, 0, true, fmt.Errorf("%s: LibreOffice could not convert it", in.Name)
		}
	}
	pdf, err = os.ReadFile(req.Out)
	if err != nil {
		return nil, 0, false, fmt.Errorf("%s: LibreOffice wrote no PDF", in.Name)
	}
	s.docs++
	if s.docs >= e.cfg.MaxDocuments {
		s.stop()
		return pdf, r.Pages, true, nil
	}
	return pdf, r.Pages, false, nil
}

// closedOr is ErrClosed when the engine was closed under the conversion
// (its process was killed by Close, not by the document), else err.
func (s *slot) closedOr(err error) error {
	select {
	case <-s.e.closed:
		return ErrClosed
	default:
		return err
	}
}
