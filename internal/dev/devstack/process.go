package devstack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
)

// Build builds the service's commands (cmd/<name>) into dir. It builds in the service's module,
// found above the working directory, whose go.sum covers every dependency of the commands: a
// benchmark module's go.sum covers only what the benchmarks import.
func Build(ctx context.Context, dir string, commands ...string) error {
	root, err := devtemporal.ModuleRoot()
	if err != nil {
		return err
	}
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	for _, c := range commands {
		args = append(args, "github.com/bgcheck/bgcheck/cmd/"+c)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %w\n%s", commands, err, out)
	}
	return nil
}

// Process is a program a stack's user started and must stop: one of the service's binaries, or
// any other.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited; err is then set
	err  error
}

// StartProcess runs path with args, with this process's environment and env added, its output
// going to out. The kernel ends it with SIGTERM if this process dies without stopping it (on
// Linux).
func StartProcess(name, path string, args, env []string, out io.Writer) (*Process, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = deathSignal()
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Linux sends the parent-death signal when the thread that started the child exits, not
		// the process, and Go does end threads: the child is started from a thread locked to
		// this goroutine, which ends only once the child has.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// PID is the process's id, for accounting its CPU.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the process to end and returns how it ended.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Signal sends the process sig.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill ends the process at once, as a crash would, and waits for it.
func (p *Process) Kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// Stop asks the process to shut down with SIGTERM and kills it if it has not within grace.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// WaitReady polls url with header until it answers 200, the process exits, ctx ends or 30
// seconds pass.
func (p *Process) WaitReady(ctx context.Context, url string, header http.Header) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header = header
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not answer 200 within 30s", p.Name, url)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready: %v", p.Name, p.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
