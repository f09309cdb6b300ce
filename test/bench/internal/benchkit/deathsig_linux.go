package benchkit

import (
	"os/exec"
	"syscall"
)

// SetDeathSignal has the kernel send the child SIGTERM if this program dies without cleaning up
// (kill -9), so no server outlives the run.
func SetDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
