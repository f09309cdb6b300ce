package devtemporal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// BinaryEnv names the environment variable that, when set, is the temporal CLI to run instead of
// the pinned one built in the repository (CI and test/run.sh set it once for all packages).
const BinaryEnv = "BGCHECK_TEMPORAL_BIN"

const (
	// modulePath identifies the repository root when walking up from the working directory.
	modulePath = "github.com/bgcheck/bgcheck"
	// toolsDir is the module, relative to the root, whose go.mod pins the CLI; its version is the
	// one place the version is written.
	toolsDir   = "internal/dev/temporalcli"
	cliModule  = "github.com/temporalio/cli"
	cliPackage = cliModule + "/cmd/temporal"
	// serverModule is the Temporal server the CLI embeds; the tools module pins its server and
	// SQL schema tool too, so the same version runs as a cluster on PostgreSQL.
	serverModule = "go.temporal.io/server"
	// binDir, relative to the root, keeps built CLIs between runs; .gitignore lists .data.
	binDir = ".data/bin"
)

// Binary returns the path of the pinned temporal CLI: $BGCHECK_TEMPORAL_BIN when set, else
// .data/bin/temporal-VERSION under the repository root, building it there from internal/dev/temporalcli
// first if it is missing. The first build takes a few minutes; concurrent callers (parallel test
// packages) wait on a lock file for one build rather than each starting their own. The root is
// found by walking up from the working directory, so Binary works from any package directory
// (as go test runs) but not from outside the repository unless $BGCHECK_TEMPORAL_BIN is set.
// A nil log means slog.Default().
func Binary(ctx context.Context, log *slog.Logger) (string, error) {
	if log == nil {
		log = slog.Default()
	}
	if p := os.Getenv(BinaryEnv); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("devtemporal: $%s is %s, which is not an executable file", BinaryEnv, p)
		}
		return p, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	version, err := requiredVersion(filepath.Join(root, toolsDir, "go.mod"), cliModule)
	if err != nil {
		return "", err
	}
	dest := filepath.Join(root, binDir, "temporal-"+version)
	return dest, ensureBuilt(ctx, dest, log, func(ctx context.Context, out string) error {
		log.Info("building the pinned temporal CLI; this takes a few minutes the first time",
			"version", version, "dest", dest)
		start := time.Now()
		ldflags := "-X " + cliModule + "/temporalcli.Version=" + strings.TrimPrefix(version, "v")
		if err := goBuild(ctx, filepath.Join(root, toolsDir), cliPackage, ldflags, out); err != nil {
			return err
		}
		log.Info("built the temporal CLI", "dest", dest, "took", time.Since(start).Round(time.Second))
		return nil
	})
}

// ensureBuilt makes dest exist by calling build (with a temporary path beside dest, renamed into
// place when it succeeds) unless it exists already, holding an exclusive flock on dest+".lock"
// meanwhile, so that only one caller at a time, in any process, builds.
func ensureBuilt(ctx context.Context, dest string, log *slog.Logger, build func(ctx context.Context, out string) error) error {
	if isExecutable(dest) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("devtemporal: %w", err)
	}
	unlock, err := lockFile(ctx, dest+".lock", log)
	if err != nil {
		return err
	}
	defer unlock()
	if isExecutable(dest) { // built by whoever held the lock before us
		return nil
	}
	tmp := fmt.Sprintf("%s.tmp-%d", dest, os.Getpid())
	defer os.Remove(tmp)
	if err := build(ctx, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("devtemporal: %w", err)
	}
	return nil
}

// lockFile takes an exclusive flock on path, polling so that ctx can end the wait, and returns
// the function that releases it. The kernel releases it too if the process dies.
func lockFile(ctx context.Context, path string, log *slog.Logger) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: %w", err)
	}
	for logged := false; ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the descriptor releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("devtemporal: lock %s: %w", path, err)
		}
		if !logged {
			log.Info("waiting for another process to finish building the temporal CLI", "lock", path)
			logged = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("devtemporal: waiting for %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// goBuild builds pkg from the tools module in dir. The CLI's version is stamped in (ldflags) as
// its own release builds do, so that `temporal --version` names it rather than 0.0.0-DEV.
func goBuild(ctx context.Context, dir, pkg, ldflags, out string) error {
	args := []string{"build", "-o", out}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off") // a go.work above the repository must not change what is built
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("devtemporal: building %s in %s: %w\n%s", pkg, dir, err, output)
	}
	return nil
}

// ModuleRoot walks up from the working directory to the directory whose go.mod declares the
// service's module (a benchmark module below it included).
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("devtemporal: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if p, err := goModPath(filepath.Join(dir, "go.mod")); err == nil && p == modulePath {
			return dir, nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("devtemporal: no go.mod of module %s in %s or above it; run from the "+
				"repository or set $%s to a temporal CLI", modulePath, wd, BinaryEnv)
		}
	}
}

// goModPath returns the module path a go.mod declares.
func goModPath(goMod string) (string, error) {
	var path string
	err := scanGoMod(goMod, func(fields []string) bool {
		if len(fields) >= 2 && fields[0] == "module" {
			path = strings.Trim(fields[1], `"`)
			return false
		}
		return true
	})
	if err == nil && path == "" {
		err = fmt.Errorf("devtemporal: %s has no module line", goMod)
	}
	return path, err
}

// requiredVersion returns the version of module that goMod requires, in either the one-line or
// the block form of require.
func requiredVersion(goMod, module string) (string, error) {
	var version string
	err := scanGoMod(goMod, func(fields []string) bool {
		if len(fields) >= 1 && fields[0] == "require" {
			fields = fields[1:]
		}
		if len(fields) >= 2 && fields[0] == module {
			version = fields[1]
			return false
		}
		return true
	})
	if err == nil && version == "" {
		err = fmt.Errorf("devtemporal: %s does not require %s", goMod, module)
	}
	return version, err
}

// scanGoMod calls line with the fields of each line of goMod, comments removed, until it returns
// false.
func scanGoMod(goMod string, line func(fields []string) bool) error {
	f, err := os.Open(goMod)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text, _, _ := strings.Cut(sc.Text(), "//")
		if !line(strings.Fields(text)) {
			return nil
		}
	}
	return sc.Err()
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
