package minio

import (
	"os/exec"
	"syscall"
)

// setParentDeath has the kernel kill the server if the test binary dies
// without running its cleanups (a panic, go test's -timeout), so no MinIO is
// left holding a port.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
