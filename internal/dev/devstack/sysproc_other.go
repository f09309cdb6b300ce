//go:build !linux

package devstack

import "syscall"

// deathSignal is Linux's only: elsewhere a process outlives a starter that dies without stopping it.
func deathSignal() *syscall.SysProcAttr { return nil }
