package browser

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// The tree's CPU counts a process below root, here a child of the test
// that burned CPU and ended.
func TestProcessTreeCPU(t *testing.T) {
	before := ProcessTreeCPU(os.Getpid())
	child := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	if err := child.Run(); err != nil {
		t.Skip(err)
	}
	used := child.ProcessState.UserTime() + child.ProcessState.SystemTime()
	got := ProcessTreeCPU(os.Getpid()) - before
	// /proc counts in ticks of 10 ms; the test process itself adds a little.
	if got < used-20*time.Millisecond {
		t.Errorf("tree CPU grew by %v, the child alone used %v", got, used)
	}
	if ProcessTreeCPU(-1) != 0 {
		t.Error("no such process: want 0")
	}
}
