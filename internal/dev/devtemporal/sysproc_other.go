//go:build !linux

package devtemporal

import "syscall"

// sysProcAttr puts the server in its own process group, so that a Ctrl-C at the terminal reaches
// only the caller, which then stops the server in order. Only Linux can also tie the server's life
// to the caller's; elsewhere a caller that dies without stopping it leaves it running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
