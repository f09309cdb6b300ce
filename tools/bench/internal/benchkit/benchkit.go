// Package benchkit holds what the benchmark programs share beyond devstack (the stack both they
// and the end-to-end tests start): the machine's CPU counters, repeated NAME=VALUE flags, free
// ports and the ends of log files.
package benchkit

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
)

// HostCPU reads the machine's busy and total ticks from the first line of /proc/stat.
func HostCPU() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, false
	}
	var idle uint64
	for i, v := range f[1:] {
		if i >= 8 { // guest time is already counted in user
			break
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return total - idle, total, true
}

// EnvFlag collects repeated NAME=VALUE flags.
type EnvFlag []string

func (e *EnvFlag) String() string { return strings.Join(*e, " ") }

// Set adds one NAME=VALUE.
func (e *EnvFlag) Set(v string) error {
	if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
		return errors.New("want NAME=VALUE")
	}
	*e = append(*e, v)
	return nil
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Tail returns the last n bytes of a file, for error messages.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
