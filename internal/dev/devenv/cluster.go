package devenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// DefaultPort is where a cluster started by devenv listens when the port is free: beside the
// usual 5432, so it never collides with a system server.
const DefaultPort = 55432

// ErrNoServerBinaries means initdb and pg_ctl were found neither on PATH nor in Debian's
// versioned directories; its text says how to install them.
var ErrNoServerBinaries = errors.New("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in " +
	"/usr/lib/postgresql/*/bin to start one; install them (Debian/Ubuntu: sudo apt-get install postgresql; " +
	"macOS: brew install postgresql) or set DATABASE_URL to a running server")

// binDirGlob is where Debian and Ubuntu install the server binaries, off PATH; a test replaces it.
var binDirGlob = "/usr/lib/postgresql/*/bin"

// StartOptions say where and how StartPostgres runs a cluster.
type StartOptions struct {
	// DataDir is the cluster's data directory, made by initdb on first use and reused after. The
	// server's Unix sockets and its log (postgres.log) are kept in it too.
	DataDir string
	// Port is the TCP port on 127.0.0.1; 0 means DefaultPort when free, else any free port.
	Port int
	// Ephemeral turns off fsync and its kin: much faster, for a cluster thrown away after one run
	// (its data may not survive a crash of the machine).
	Ephemeral bool
}

// StartPostgres starts the cluster in opts.DataDir with the installed initdb and pg_ctl, creating
// it first (superuser postgres, trust authentication, reachable only from this machine) if the
// directory holds none yet. The server runs detached from the terminal, so Ctrl-C reaches the
// caller, which then calls Stop. A server already running in that directory (left by a run that
// was killed) is reused but not adopted: Started is false and Stop leaves it running.
func StartPostgres(ctx context.Context, opts StartOptions, log *slog.Logger) (*Postgres, error) {
	bin, err := findServerBinaries()
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	acct, err := serverAccount()
	if err != nil {
		return nil, err
	}
	if err := acct.prepareDataDir(dataDir); err != nil {
		return nil, err
	}
	pgCtl := filepath.Join(bin, "pg_ctl")
	// initdb and pg_ctl start are not cancelled with ctx: killed halfway, they would leave a
	// half-made cluster or a server that nobody stops. (A Ctrl-C reaches initdb directly, and it
	// then cleans up after itself.)
	startCtx := context.WithoutCancel(ctx)

	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		log.Info("creating a PostgreSQL cluster", "dir", dataDir, "bin", bin, "run_as", acct.String())
		out, err := acct.command(startCtx, filepath.Join(bin, "initdb"), "--pgdata", dataDir, "--username", "postgres",
			"--auth", "trust", "--encoding", "UTF8", "--locale", "C", "--no-sync").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("devenv: initdb %s: %w\n%s", dataDir, err, out)
		}
	} else if err != nil {
		return nil, err
	}

	if port, running, err := acct.runningPort(ctx, pgCtl, dataDir); err != nil {
		return nil, err
	} else if running {
		u := serverURL(port)
		if err := ping(ctx, u); err != nil {
			return nil, fmt.Errorf("devenv: a server already runs in %s but does not answer at %s: %w", dataDir, u, err)
		}
		log.Warn("reusing the PostgreSQL already running in the data directory; it keeps running after this process",
			"url", u, "stop_with", fmt.Sprintf("%s stop -D %s", pgCtl, dataDir))
		return &Postgres{URL: u}, nil
	}

	ports := []int{opts.Port}
	if opts.Port == 0 {
		// DefaultPort when free; and should another process take it before the server binds it
		// (two runs starting at once), once more on a port the kernel picks.
		ports = []int{pickPort(DefaultPort), pickPort(0)}
	}
	logFile := filepath.Join(dataDir, "postgres.log")
	var port int
	for _, port = range ports {
		// pg_ctl hands -o to /bin/sh, hence the quoting.
		serverOpts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s", port, shellQuote(socketDir(dataDir, port)))
		if opts.Ephemeral {
			serverOpts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
		}
		log.Info("starting PostgreSQL", "dir", dataDir, "port", port)
		var out []byte
		out, err = acct.command(startCtx, pgCtl, "start", "-D", dataDir, "-l", logFile, "-o", serverOpts,
			"-w", "-t", "60", "-s").CombinedOutput()
		if err == nil {
			break
		}
		err = fmt.Errorf("devenv: pg_ctl start: %w\n%s%s", err, out, tail(logFile, 2000))
	}
	if err != nil {
		return nil, err
	}
	p := &Postgres{URL: serverURL(port), Started: true}
	p.stop = func(ctx context.Context) error {
		out, err := acct.command(ctx, pgCtl, "stop", "-D", dataDir, "-m", "fast", "-w", "-t", "60", "-s").CombinedOutput()
		if err != nil {
			return fmt.Errorf("devenv: pg_ctl stop: %w\n%s", err, out)
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(err, p.Stop(startCtx))
	}
	if err := ping(ctx, p.URL); err != nil {
		return nil, errors.Join(fmt.Errorf("devenv: PostgreSQL started but does not answer at %s: %w", p.URL, err), p.Stop(startCtx))
	}
	log.Info("PostgreSQL started", "url", p.URL)
	return p, nil
}

func serverURL(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}

// findServerBinaries returns a directory holding both initdb and pg_ctl: initdb's own directory
// when it is on PATH (after symlinks, so pg_ctl is of the same version), else the newest of
// Debian's /usr/lib/postgresql/N/bin, which the postgresql package leaves off PATH.
func findServerBinaries() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	versioned, _ := filepath.Glob(binDirGlob)
	slices.SortFunc(versioned, func(a, b string) int { // newest first
		return strings.Compare(versionKey(b), versionKey(a))
	})
	dirs = append(dirs, versioned...)
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", ErrNoServerBinaries
}

// versionKey makes /usr/lib/postgresql/9.6/bin sort before …/15/bin.
func versionKey(binDir string) string {
	v := filepath.Base(filepath.Dir(binDir))
	major, minor, _ := strings.Cut(v, ".")
	return fmt.Sprintf("%08s.%08s", major, minor)
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// account is who runs initdb, pg_ctl and the server.
//
// PostgreSQL refuses to run as root (initdb, pg_ctl and postgres all stop with "cannot be run as
// root"), and on the project's machines every process runs as root. So, as root, they run as an
// unprivileged account instead, "postgres" where the server package created it and "nobody"
// otherwise, by setting SysProcAttr.Credential (no runuser or su needed), and that account is
// given the data directory. Any other user runs them as itself.
type account struct {
	name     string
	uid, gid uint32
	cred     *syscall.Credential // nil: the current user
}

func (a account) String() string {
	if a.cred == nil {
		return "current user"
	}
	return a.name
}

func serverAccount() (account, error) {
	if os.Geteuid() != 0 {
		return account{}, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return account{name: name, uid: uint32(uid), gid: uint32(gid),
			cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
	}
	return account{}, errors.New("devenv: PostgreSQL refuses to run as root, and there is neither a postgres " +
		"nor a nobody account to run it as; create one (useradd --system postgres) or run as another user")
}

// command runs a PostgreSQL program as the account, from / (which every account may enter).
func (a account) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	if a.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: a.cred}
	}
	return cmd
}

// prepareDataDir creates the data directory, makes it the account's with the permissions the
// server insists on, and checks that the account can reach it.
func (a account) prepareDataDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("devenv: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("devenv: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("devenv: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("devenv: data directory %s is not a directory", dir)
	}
	if p := st.Mode().Perm(); p != 0o700 && p != 0o750 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("devenv: %w", err)
		}
	}
	if a.cred == nil {
		return nil
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if !a.canSearch(d) {
			return fmt.Errorf("devenv: PostgreSQL runs as %s (it refuses root), which cannot enter %s; "+
				"allow it (chmod o+x %s) or choose a data directory elsewhere", a.name, d, d)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if owner(st) == a.uid {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(a.uid), int(a.gid))
	})
}

// canSearch reports whether the account may pass through directory d (supplementary groups
// aside, which the account is run without).
func (a account) canSearch(d string) bool {
	st, err := os.Stat(d)
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := st.Mode().Perm()
	switch {
	case sys.Uid == a.uid:
		return perm&0o100 != 0
	case sys.Gid == a.gid:
		return perm&0o010 != 0
	}
	return perm&0o001 != 0
}

func owner(st fs.FileInfo) uint32 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Uid
	}
	return 0
}

// runningPort asks pg_ctl whether a server runs in dataDir and, if so, reads its port from
// postmaster.pid (fourth line).
func (a account) runningPort(ctx context.Context, pgCtl, dataDir string) (int, bool, error) {
	err := a.command(ctx, pgCtl, "status", "-D", dataDir).Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 { // not running
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("devenv: pg_ctl status -D %s: %w", dataDir, err)
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, false, fmt.Errorf("devenv: a server runs in %s: %w", dataDir, err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, false, fmt.Errorf("devenv: cannot read the port of the server running in %s", dataDir)
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err != nil {
		return 0, false, fmt.Errorf("devenv: cannot read the port of the server running in %s: %w", dataDir, err)
	}
	return port, true, nil
}

// pickPort returns want if it is free on 127.0.0.1, else a port the kernel says is free (0 if
// even that fails, which makes pg_ctl's error explain).
func pickPort(want int) int {
	for _, addr := range []string{fmt.Sprintf("127.0.0.1:%d", want), "127.0.0.1:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		return port
	}
	return 0
}

// socketDir is where the server puts its Unix socket: the data directory, unless the socket's
// path would pass the 103-byte limit of sun_path on some systems, in which case the server gets
// no Unix socket at all ("") and is reached over TCP only, as devenv always does.
func socketDir(dataDir string, port int) string {
	if len(dataDir)+len("/.s.PGSQL.")+len(strconv.Itoa(port)) > 103 {
		return ""
	}
	return dataDir
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tail returns the end of a log file, to explain a server that would not start.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return "server log " + path + ":\n" + string(bytes.TrimSpace(b))
}
