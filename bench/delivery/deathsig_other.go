//go:build !linux

package main

import "os/exec"

// setDeathSignal does nothing where the kernel offers no parent-death signal; the deferred stops
// in run still end the children on every exit but kill -9.
func setDeathSignal(*exec.Cmd) {}
