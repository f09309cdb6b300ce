package devtemporal

import "syscall"

// sysProcAttr puts the server in its own process group, so that a Ctrl-C at the terminal reaches
// only the caller, which then stops the server in order; and has the kernel kill the server when
// the caller dies without stopping it (a test binary killed by its timeout, say).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
