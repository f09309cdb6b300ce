package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bgcheck/bgcheck/test/bench/internal/benchkit"
)

// child is a service process this program started and must stop.
type child struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited; err is then set
	err     error
}

// startChild runs one of the built binaries with env added, as name, its output in name.log in
// the work directory.
func (st *stack) startChild(name, binary string, env []string) (*child, error) {
	logPath := filepath.Join(st.work, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command(filepath.Join(st.work, binary))
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	benchkit.SetDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// waitReady polls u until it answers 200, the process exits, or 30 seconds pass.
func (c *child) waitReady(ctx context.Context, u string) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not answer 200 within 30s", c.name, u)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return fmt.Errorf("%s exited before it was ready: %v", c.name, c.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop asks the process to shut down gracefully and kills it if it has not within 40 seconds
// (the API allows itself 20, a worker 35 for attempts in flight).
func (c *child) stop() {
	if c.exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(40 * time.Second):
		logf("%s did not stop within 40s; killing it", c.name)
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
