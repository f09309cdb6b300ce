package devstack

import "syscall"

// deathSignal has the kernel end a started process with SIGTERM when its starter dies without
// stopping it (kill -9, a test binary's timeout), so no server outlives the run.
func deathSignal() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
