package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// buildScript builds the image's binaries; the Dockerfile runs it and so does TestStaticBuild.
const buildScript = "deploy/build-static.sh"

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, …
	args string
}

// stage is a FROM and the instructions after it.
type stage struct {
	image, name string
	steps       []instruction
}

// parseDockerfile reads the Dockerfile's stages. It knows just enough of the syntax for this
// repository's file: comments, backslash continuations, FROM [--platform=…] IMAGE [AS NAME].
func parseDockerfile(t *testing.T) []stage {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []stage
	var pending string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if pending == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasPrefix(line, "#") { // a comment inside a continued instruction
			continue
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			pending += cont + " "
			continue
		}
		line, pending = pending+line, ""
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			fields := slices.DeleteFunc(strings.Fields(in.args), func(s string) bool { return strings.HasPrefix(s, "--") })
			st := stage{image: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				st.name = fields[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd == "ARG" {
				continue
			}
			t.Fatalf("Dockerfile: %s before the first FROM", in.cmd)
		}
		stages[len(stages)-1].steps = append(stages[len(stages)-1].steps, in)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a final one", len(stages))
	}
	return stages
}

// goVersion returns go.mod's go directive.
func goVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("go.mod has no go directive")
	return ""
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	build, final := stages[0], stages[len(stages)-1]

	// The build stage is the Go of go.mod: golang:<version>-<variant>.
	if want := "golang:" + goVersion(t) + "-"; !strings.HasPrefix(build.image, want) {
		t.Errorf("the build stage is %s, want %s… (go.mod's Go version)", build.image, want)
	}

	// Modules are downloaded in a layer of their own, before the code is copied in.
	order := map[string]int{}
	outDir := ""
	for i, in := range build.steps {
		switch {
		case in.cmd == "COPY" && in.args == "go.mod go.sum ./":
			order["copy go.mod"] = i + 1
		case in.cmd == "RUN" && strings.Contains(in.args, "go mod download"):
			order["download"] = i + 1
		case in.cmd == "COPY" && in.args == ". .":
			order["copy all"] = i + 1
		case in.cmd == "RUN" && strings.Contains(in.args, buildScript):
			order["build"] = i + 1
			fields := strings.Fields(in.args[strings.Index(in.args, buildScript):])
			if len(fields) > 1 {
				outDir = fields[1]
			}
		}
	}
	if !(order["copy go.mod"] > 0 && order["copy go.mod"] < order["download"] &&
		order["download"] < order["copy all"] && order["copy all"] < order["build"]) {
		t.Errorf("the build stage should COPY go.mod go.sum ./, RUN go mod download, COPY . ., then RUN %s; got steps %v", buildScript, order)
	}
	if outDir == "" {
		t.Fatalf("the build stage does not run %s OUTDIR", buildScript)
	}
	// The script is the only build: nothing else in the Dockerfile calls go build.
	for _, st := range stages {
		for _, in := range st.steps {
			if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
				t.Errorf("the Dockerfile runs go build itself (%q): build with %s, which the tests run", in.args, buildScript)
			}
		}
	}

	// The final stage is small, runs as a user other than root, and starts the API by default.
	if strings.HasPrefix(final.image, "golang:") {
		t.Errorf("the final stage is %s: the image would ship the Go toolchain", final.image)
	}
	var copied, user, cmd string
	var exposed []string
	for _, in := range final.steps {
		switch in.cmd {
		case "COPY":
			if strings.HasPrefix(in.args, "--from="+build.name+" ") {
				copied = in.args
			}
		case "USER":
			user = in.args
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "CMD":
			cmd = in.args
		}
	}
	if build.name == "" || !strings.Contains(copied, " "+strings.TrimSuffix(outDir, "/")+"/ ") {
		t.Errorf("the final stage does not copy %s/ from the build stage %q (COPY %s)", outDir, build.name, copied)
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "root" || u == "0" {
		t.Errorf("the final stage runs as %q, want a user other than root", user)
	}
	if !slices.Contains(exposed, "8080") {
		t.Errorf("the final stage exposes %v, want 8080", exposed)
	}
	var argv []string
	if err := json.Unmarshal([]byte(cmd), &argv); err != nil || len(argv) == 0 || argv[0] != "bgcheck-api" {
		t.Errorf(`CMD %s, want the exec form ["bgcheck-api"] (the image has no shell)`, cmd)
	}
}

// TestDockerignore checks that the build context holds every file the build reads, and none of
// the heavy or unreadable files a working copy has.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	patterns, err := ignorefile.ReadAll(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	ignored := func(path string) bool {
		t.Helper()
		ok, err := pm.MatchesOrParentMatches(filepath.ToSlash(path))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, path := range []string{".git/HEAD", ".data/postgres/PG_VERSION", ".data/bin/temporal-v1.5.1", "bin/bgcheck-api", "loadapi", "api/api.test", ".env"} {
		if !ignored(path) {
			t.Errorf(".dockerignore lets %s into the build context", path)
		}
	}
	for _, path := range append([]string{"go.mod", "go.sum", buildScript}, buildFiles(t)...) {
		if ignored(path) {
			t.Errorf(".dockerignore keeps %s, which the build reads, out of the build context", path)
		}
	}
}

// buildFiles lists, relative to the root, the files of this module that building the three
// binaries reads: each package's Go files and embedded files.
func buildFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=Dir,GoFiles,EmbedFiles,Module",
		"./cmd/bgcheck-api", "./cmd/bgcheck-worker", "./cmd/bgcheckctl")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	abs := mustAbs(t, root)
	var files []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var pkg struct {
			Dir                 string
			GoFiles, EmbedFiles []string
			Module              *struct{ Main bool }
		}
		if err := dec.Decode(&pkg); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if pkg.Module == nil || !pkg.Module.Main {
			continue
		}
		rel, err := filepath.Rel(abs, pkg.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range slices.Concat(pkg.GoFiles, pkg.EmbedFiles) {
			files = append(files, filepath.Join(rel, f))
		}
	}
	if len(files) < 10 {
		t.Fatalf("go list found only %v", files)
	}
	return files
}

// TestStaticBuild runs the Dockerfile's build (deploy/build-static.sh) and checks that the
// binaries are what the distroless image needs: static, stripped, built without cgo and with
// -trimpath, and runnable.
func TestStaticBuild(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", filepath.Join(root, buildScript), out)
	// Linux, as in the image, for this machine's architecture (the Dockerfile sets GOARCH for
	// the image's platform).
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOOS=") || strings.HasPrefix(kv, "GOARCH=")
	}), "GOOS=linux")
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", buildScript, err, b)
	}
	t.Logf("%s took %s", buildScript, time.Since(start).Round(time.Millisecond))

	compose := loadProject(t)
	var commands []string
	for _, name := range []string{svcAPI, svcWorker, svcMigrate} {
		if c := service(t, compose, name).Command; len(c) > 0 {
			commands = append(commands, c[0])
		}
	}
	for _, name := range []string{"bgcheck-api", "bgcheck-worker", "bgcheckctl"} {
		path := filepath.Join(out, name)
		checkStatic(t, path)
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		// (With -trimpath, Go records no -ldflags: checkStatic looks for their effect instead.)
		if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
			t.Errorf("%s was built with CGO_ENABLED=%q -trimpath=%q, want 0 and true",
				name, settings["CGO_ENABLED"], settings["-trimpath"])
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	for _, e := range entries {
		built = append(built, e.Name())
	}
	for _, c := range commands {
		if !slices.Contains(built, c) {
			t.Errorf("docker-compose.yml runs %s, which the image does not have (built: %v)", c, built)
		}
	}

	if runtime.GOOS != "linux" {
		return // the binaries are Linux's: nothing more to run here
	}
	help := exec.CommandContext(ctx, filepath.Join(out, "bgcheckctl"), "help")
	help.Env = []string{} // as in the image: nothing set
	b, err := help.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "usage: bgcheckctl") {
		t.Errorf("bgcheckctl help: %v\n%s", err, b)
	}
}

// checkStatic fails unless path is an ELF executable that needs no dynamic loader or library,
// and has neither a symbol table (-s) nor DWARF (-w).
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %s program header: it is dynamically linked", filepath.Base(path), p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs %v", filepath.Base(path), libs)
	}
	for _, sec := range f.Sections {
		switch {
		case sec.Name == ".symtab":
			t.Errorf("%s has a symbol table: not built with -ldflags=-s", filepath.Base(path))
		case strings.HasPrefix(sec.Name, ".debug_") || strings.HasPrefix(sec.Name, ".zdebug_"):
			t.Errorf("%s has DWARF (%s): not built with -ldflags=-w", filepath.Base(path), sec.Name)
		}
	}
}
