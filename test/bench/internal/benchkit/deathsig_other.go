//go:build !linux

package benchkit

import "os/exec"

// SetDeathSignal does nothing where the kernel offers no parent-death signal; the benchmarks'
// deferred stops still end their children on every exit but kill -9.
func SetDeathSignal(*exec.Cmd) {}
