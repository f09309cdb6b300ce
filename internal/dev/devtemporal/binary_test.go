package devtemporal

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestModuleRootAndPinnedVersion(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "dev", "devtemporal", "binary.go")); err != nil {
		t.Fatalf("moduleRoot = %s, which does not hold this package: %v", root, err)
	}
	version, err := requiredVersion(filepath.Join(root, toolsDir, "go.mod"), cliModule)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, "v1.") {
		t.Errorf("pinned CLI version = %q", version)
	}
}

func TestCLIVersionForms(t *testing.T) {
	for name, goMod := range map[string]string{
		"block": "module m\n\ngo 1.26\n\ntool github.com/temporalio/cli/cmd/temporal\n\nrequire (\n" +
			"\tcel.dev/expr v0.23.1 // indirect\n\tgithub.com/temporalio/cli v1.5.1 // indirect\n)\n",
		"one line": "module m\nrequire github.com/temporalio/cli v1.5.1\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "go.mod")
			if err := os.WriteFile(path, []byte(goMod), 0o644); err != nil {
				t.Fatal(err)
			}
			if v, err := requiredVersion(path, cliModule); v != "v1.5.1" || err != nil {
				t.Errorf("requiredVersion = %q, %v; want v1.5.1", v, err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "go.mod")
	os.WriteFile(path, []byte("module m\n// github.com/temporalio/cli v9.9.9\n"), 0o644)
	if v, err := requiredVersion(path, cliModule); err == nil {
		t.Errorf("requiredVersion of a go.mod without the CLI = %q, want an error", v)
	}
}

// TestBinaryIsPinned runs the CLI that Binary gives (building it if need be) and checks that it
// is the version internal/dev/temporalcli pins.
func TestBinaryIsPinned(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	version, err := requiredVersion(filepath.Join(root, toolsDir, "go.mod"), cliModule)
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(root, binDir, "temporal-"+version)
	if env := os.Getenv(BinaryEnv); env != "" && env != own {
		t.Skipf("$%s is %s, not the repository's build %s", BinaryEnv, env, own)
	}
	bin, err := Binary(context.Background(), slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	if want := "temporal version " + strings.TrimPrefix(version, "v") + " "; !strings.Contains(string(out), want) {
		t.Errorf("%s --version = %q, want it to contain %q", bin, out, want)
	}
}

func TestBinaryFromEnv(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "temporal")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(BinaryEnv, exe)
	if got, err := Binary(context.Background(), nil); got != exe || err != nil {
		t.Errorf("Binary = %q, %v; want %q", got, err, exe)
	}
	t.Setenv(BinaryEnv, filepath.Join(dir, "missing"))
	if got, err := Binary(context.Background(), nil); err == nil || !strings.Contains(err.Error(), BinaryEnv) {
		t.Errorf("Binary with $%s naming a missing file = %q, %v; want an error naming the variable", BinaryEnv, got, err)
	}
}

// TestEnsureBuiltBuildsOnce has several callers race to build the same file, as parallel test
// packages do: one builds, the others wait and use its result.
func TestEnsureBuiltBuildsOnce(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "bin", "temporal-v0")
	var builds atomic.Int32
	build := func(ctx context.Context, out string) error {
		builds.Add(1)
		time.Sleep(300 * time.Millisecond)
		return os.WriteFile(out, []byte("#!/bin/sh\n"), 0o755)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = ensureBuilt(context.Background(), dest, slog.New(slog.DiscardHandler), build) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := builds.Load(); n != 1 {
		t.Errorf("built %d times, want once", n)
	}
	if !isExecutable(dest) {
		t.Errorf("%s is not an executable after the build", dest)
	}
	entries, _ := os.ReadDir(filepath.Dir(dest))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"temporal-v0", "temporal-v0.lock"}; !slices.Equal(names, want) {
		t.Errorf("files beside the build = %v, want %v (no temporary file left)", names, want)
	}
}

func TestEnsureBuiltFailure(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "temporal-v0")
	boom := errors.New("boom")
	err := ensureBuilt(context.Background(), dest, slog.New(slog.DiscardHandler), func(ctx context.Context, out string) error {
		os.WriteFile(out, []byte("half"), 0o755)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the build's", err)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Errorf("%s exists after a failed build", dest)
	}
	if m, _ := filepath.Glob(dest + ".tmp-*"); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

func TestServerArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"defaults", Options{},
			"server start-dev --ip 127.0.0.1 --port 7300 --namespace default --log-level warn --log-format text --headless"},
		{"everything", Options{
			UIPort: 8300, DBFile: "/d/t.db", SearchAttributes: []string{"A", "B"},
			DynamicConfig: map[string]string{"z.key": "1", "a.key": `"s"`},
		}, "server start-dev --ip 127.0.0.1 --port 7300 --namespace default --log-level warn --log-format text " +
			"--ui-port 8300 --db-filename /d/t.db --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal " +
			`--search-attribute A=Keyword --search-attribute B=Keyword --dynamic-config-value a.key="s" --dynamic-config-value z.key=1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(serverArgs(7300, tc.opts), " "); got != tc.want {
				t.Errorf("serverArgs =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
