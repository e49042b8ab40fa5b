package pdfium

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestMain: this test binary is also the children's executable. A child
// started with childRun serves calls (RunChildIfAsked); the other values
// are children that misbehave for TestChildGarbage.
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" && mode != childRun {
		misbehave(mode)
		return
	}
	if RunChildIfAsked() {
		return
	}
	if os.Getenv(testParentEnv) != "" {
		parentOfChild()
		return
	}
	os.Exit(m.Run())
}

// testParentEnv makes this binary a worker of one child that prints the
// child's pid and waits to be killed (TestChildDiesWithParent).
const testParentEnv = "DOCRENDER_PDFIUM_TEST_PARENT"

func parentOfChild() {
	e, err := New(context.Background(), Config{Instances: 1})
	if err != nil || e.procs == nil {
		fmt.Println("no child:", err)
		os.Exit(1)
	}
	fmt.Println(e.procs.pids()[0])
	time.Sleep(time.Minute)
}

// misbehave is a child that answers the config with a ready frame (or
// not), then answers the first call with what mode names.
func misbehave(mode string) {
	in := bufio.NewReader(os.NewFile(3, "requests"))
	out := os.NewFile(4, "answers")
	if _, err := readFrame(in, maxConfigFrame); err != nil {
		os.Exit(1)
	}
	var r enc
	switch mode {
	case "bad-ready":
		r.byte(stText)
	case "old-ready":
		r.byte(stReady)
		r.uint(protocolVersion + 1)
		r.int(int64(os.Getpid()))
	default:
		r.byte(stReady)
		r.uint(protocolVersion)
		r.int(int64(os.Getpid()))
	}
	_ = writeFrame(out, r.b)
	if _, err := readFrame(in, maxRequestFrame); err != nil {
		os.Exit(1)
	}
	switch mode {
	case "huge":
		// A length of almost 4 GiB, and nothing after it.
		out.Write([]byte{0xff, 0xff, 0xff, 0xf0})
	case "garbage":
		_ = writeFrame(out, []byte{99, 1, 2, 3})
	case "lying-count":
		// Images: 2^40 of them in a few bytes.
		var e enc
		e.byte(stImages)
		e.uint(1 << 40)
		_ = writeFrame(out, e.b)
	case "lying-length":
		var e enc
		e.byte(stImages)
		e.uint(1)
		e.uint(1 << 30)
		_ = writeFrame(out, e.b, []byte("short"))
	case "exit":
		fmt.Fprintln(os.Stderr, "LASTWORDS of the child")
		os.Exit(3)
	}
	time.Sleep(time.Minute) // the parent kills it
}
