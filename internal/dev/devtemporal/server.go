// Package devtemporal runs Temporal as a child process, for local runs, end-to-end tests, CI and
// the benchmark: the dev server (`temporal server start-dev`) of the CLI version pinned in
// internal/dev/temporalcli, or a cluster of the server version that CLI embeds
// (`temporal-server`) on PostgreSQL, as production runs it.
package devtemporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// Namespace is the namespace the dev server creates and Start checks; the only one it serves.
const Namespace = "default"

const (
	// startTimeout bounds how long Start waits for the server to answer.
	startTimeout = 60 * time.Second
	// stopGrace is how long Stop lets the server shut down before killing it.
	stopGrace = 5 * time.Second
	// portAttempts is how often Start tries when it picks the port itself and the server dies
	// before answering because another process took one of its ports meanwhile.
	portAttempts = 3
)

// Options say how Start runs the dev server. The zero value is an in-memory, headless server on
// a free port.
type Options struct {
	// Port is the frontend's gRPC port on 127.0.0.1; 0 picks a free one.
	Port int
	// UIPort serves the Web UI at http://127.0.0.1:UIPort; 0 runs the server headless.
	UIPort int
	// DBFile keeps the server's state in this SQLite file, which survives Stop and Kill, so that a
	// later Start with the same file resumes the workflows. Empty keeps everything in memory. The
	// file is opened in WAL mode with synchronous=normal: without them the dev server manages only
	// a few workflows a second.
	DBFile string
	// SearchAttributes are custom search attributes of type Keyword, registered in Namespace
	// before Start returns (also on a DBFile made by an earlier run without them).
	SearchAttributes []string
	// DynamicConfig sets dynamic config keys; each value is JSON (`"text"`, `10`, `true`).
	DynamicConfig map[string]string
	// LogFile receives the server's output (warnings and errors, as text), appended. Empty means a
	// temporary file, removed when the server has stopped.
	LogFile string
	// Logger receives Binary's messages (such as that the CLI is being built); nil means
	// slog.Default().
	Logger *slog.Logger
	// Postgres, when set, runs a Temporal cluster (temporal-server, the version the CLI embeds)
	// on PostgreSQL instead of the dev server: as production runs it. UIPort and DBFile must be
	// unset then; the rest applies alike.
	Postgres *Postgres
	// SQLite runs temporal-server (the cluster's binary, all services in one process) on SQLite
	// instead of the CLI's dev server: in memory, or in DBFile (history) and DBFile+"-visibility"
	// in WAL mode. The dev server keeps history and visibility in one database behind one
	// connection, so each of its database operations waits for the one before; here visibility has
	// a database and a connection of its own. No Web UI. make bench-delivery, a burst of 4,000 on
	// the 2-core machine: 160-166 deliveries/s against 103-133/s on the dev server, Temporal's
	// CPU per delivery 7.1 ms against 8.6-10.3 ms.
	SQLite bool
}

// Server is a running dev server or cluster, started by Start; Stop or Kill ends it.
type Server struct {
	// Address is the frontend's host:port, as client.Options.HostPort wants it.
	Address string
	// Port is Address's port, for starting a server again where clients look for it.
	Port int
	// UIAddress is the Web UI's base URL, or empty when the server is headless.
	UIAddress string
	// LogFile holds the server's output.
	LogFile string

	cmd        *exec.Cmd
	exited     chan struct{} // closed once the process has exited and been waited for
	removeLog  bool
	removeDirs []string // a cluster's configuration, removed when it has stopped
	cluster    bool     // temporal-server rather than the dev server: it registers the namespace
	stopOnce   sync.Once
}

// Start starts a dev server with the pinned CLI (see Binary) and returns once it answers a health
// check and lists opts.SearchAttributes in Namespace, or fails after 60 seconds, or when ctx ends,
// with the end of the server's log in the error. ctx bounds only the start: the server runs until
// Stop or Kill, or until this process dies, which kills it too (on Linux).
func Start(ctx context.Context, opts Options) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Postgres != nil || opts.SQLite {
		return startCluster(ctx, opts, log)
	}
	bin, err := Binary(ctx, log)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	attempts := 1
	if opts.Port == 0 {
		attempts = portAttempts
	}
	for attempt := 1; ; attempt++ {
		s, err := start(bin, opts)
		if err != nil {
			return nil, err
		}
		err = s.waitReady(ctx, opts.SearchAttributes)
		if err == nil {
			return s, nil
		}
		portTaken := s.hasExited() && strings.Contains(s.LogTail(), "address already in use")
		s.Kill()
		if !portTaken || attempt == attempts || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("another process took the port the Temporal dev server was to use; trying another", "err", err)
	}
}

// start runs the dev server process.
func start(bin string, opts Options) (*Server, error) {
	port := opts.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	s := &Server{
		Address: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Port:    port,
		exited:  make(chan struct{}),
	}
	if opts.UIPort != 0 {
		s.UIAddress = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.UIPort))
	}
	return s, s.spawn(opts.LogFile, exec.Command(bin, serverArgs(port, opts)...))
}

// spawn starts cmd as the server's process, its output appended to logPath (a temporary file
// when empty).
func (s *Server) spawn(logPath string, cmd *exec.Cmd) error {
	logFile, err := s.openLog(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own copy

	s.cmd = cmd
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = sysProcAttr()
	started := make(chan error, 1)
	go func() {
		// Linux sends the parent-death signal when the thread that started the child exits, not
		// the process; so the child is started from a thread kept until the child has gone.
		runtime.LockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		s.releaseLog()
		return fmt.Errorf("devtemporal: %w", err)
	}
	return nil
}

// serverArgs are the arguments of `temporal` that start a dev server as opts say, on port.
func serverArgs(port int, opts Options) []string {
	args := []string{"server", "start-dev",
		"--ip", "127.0.0.1", "--port", strconv.Itoa(port), "--namespace", Namespace,
		"--log-level", "warn", "--log-format", "text"}
	if opts.UIPort != 0 {
		args = append(args, "--ui-port", strconv.Itoa(opts.UIPort))
	} else {
		args = append(args, "--headless")
	}
	if opts.DBFile != "" {
		args = append(args, "--db-filename", opts.DBFile,
			"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal")
	}
	for _, name := range opts.SearchAttributes {
		args = append(args, "--search-attribute", name+"=Keyword")
	}
	keys := make([]string, 0, len(opts.DynamicConfig))
	for k := range opts.DynamicConfig {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same options give the same command line
	for _, k := range keys {
		args = append(args, "--dynamic-config-value", k+"="+opts.DynamicConfig[k])
	}
	return args
}

// waitReady polls the server until it is healthy and has the search attributes, registering any
// that are missing: start-dev registers them only when it creates the namespace, so not on a
// DBFile from a run without them.
func (s *Server) waitReady(ctx context.Context, searchAttributes []string) error {
	quiet := sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	// Dialling a port nobody listens on retries until its deadline: end it when the server dies.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	var c client.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var last error
	for {
		if c == nil {
			c, last = dial(ctx, s.Address, quiet)
		}
		if c != nil {
			last = nil
			if s.cluster {
				last = registerNamespace(ctx, c)
			}
			if last == nil {
				last = checkReady(ctx, c, searchAttributes)
			}
			if last == nil && s.UIAddress != "" {
				last = checkUI(ctx, s.UIAddress)
			}
			if last == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if s.hasExited() {
				return fmt.Errorf("devtemporal: the dev server exited while starting (%s)\n%s", s.cmd.ProcessState, s.LogTail())
			}
			return fmt.Errorf("devtemporal: the dev server at %s is not ready: %w (last: %v)\n%s",
				s.Address, ctx.Err(), last, s.LogTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func dial(ctx context.Context, address string, log sdklog.Logger) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return client.DialContext(ctx, client.Options{HostPort: address, Namespace: Namespace, Logger: log})
}

// checkReady returns nil when the server is healthy, serves Namespace, and lists every one of
// searchAttributes there as a Keyword.
func checkReady(ctx context.Context, c client.Client, searchAttributes []string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	if _, err := c.WorkflowService().DescribeNamespace(ctx,
		&workflowservice.DescribeNamespaceRequest{Namespace: Namespace}); err != nil {
		return err
	}
	if len(searchAttributes) == 0 {
		return nil
	}
	ops := c.OperatorService()
	listed, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: Namespace})
	if err != nil {
		return err
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range searchAttributes {
		typ, ok := listed.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		case typ != enumspb.INDEXED_VALUE_TYPE_KEYWORD:
			// Not fatal here: the caller gives up after its timeout with this as the reason.
			return fmt.Errorf("search attribute %s is a %s, not a Keyword", name, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: Namespace, SearchAttributes: missing})
	if err != nil && !errors.As(err, new(*serviceerror.AlreadyExists)) {
		return fmt.Errorf("registering search attributes: %w", err)
	}
	return fmt.Errorf("search attributes %v were not listed yet", slices.Sorted(maps.Keys(missing)))
}

// checkUI returns nil once the Web UI answers HTTP at all.
func checkUI(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("web UI: %w", err)
	}
	resp.Body.Close()
	return nil
}

// PID is the server's process, for accounting its CPU.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop ends the server with SIGTERM, or SIGKILL if it has not exited within a few seconds, and
// waits for it. Calling it again, or after Kill, does nothing.
func (s *Server) Stop() { s.stop(syscall.SIGTERM) }

// Kill ends the server at once with SIGKILL, as a crash would, and waits for it: what it last
// wrote to a DBFile may be lost, as after a crash. Calling it again, or after Stop, does nothing.
func (s *Server) Kill() { s.stop(syscall.SIGKILL) }

func (s *Server) stop(sig syscall.Signal) {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(sig)
		select {
		case <-s.exited:
		case <-time.After(stopGrace):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		s.releaseLog()
	})
}

func (s *Server) hasExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// openLog opens path for appending, or a new temporary file when path is empty.
func (s *Server) openLog(path string) (*os.File, error) {
	var f *os.File
	var err error
	if path == "" {
		f, err = os.CreateTemp("", "temporal-dev-*.log")
		s.removeLog = true
	} else {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("devtemporal: %w", err)
	}
	s.LogFile = f.Name()
	return f, nil
}

func (s *Server) releaseLog() {
	if s.removeLog {
		os.Remove(s.LogFile)
	}
	for _, dir := range s.removeDirs {
		os.RemoveAll(dir)
	}
}

// logTail returns the end of the server's log, for error messages.
// LogTail returns the end of the server's log, for a failure's report.
func (s *Server) LogTail() string {
	const max = 4000
	b, err := os.ReadFile(s.LogFile)
	if err != nil {
		return ""
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// freePort returns a port on 127.0.0.1 that was free a moment ago. Like the CLI's own
// devserver.GetFreePort, it leaves a connection to it in TIME_WAIT, so that Linux does not hand
// the same port to the next bind(:0) while the server is starting; the server can still bind it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("devtemporal: no free port: %w", err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err == nil {
		if sc, err := l.Accept(); err == nil {
			sc.Close() // the accepting side closes first, so it holds the TIME_WAIT
		}
		c.Close()
	}
	return l.Addr().(*net.TCPAddr).Port, nil
}
