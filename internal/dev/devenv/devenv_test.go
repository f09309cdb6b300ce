package devenv

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

const unreachableURL = "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable"

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

// On the project's machines a server runs at 127.0.0.1:5432, and discovery must use it rather
// than start one.
func TestFindOrStartPostgresPicksLocalServer(t *testing.T) {
	ctx := context.Background()
	if err := ping(ctx, DefaultServerURL); err != nil {
		t.Skipf("no PostgreSQL at %s on this machine (%v); the throwaway path is tested by TestStartPostgres", DefaultServerURL, err)
	}
	t.Setenv("DATABASE_URL", "")
	dataDir := filepath.Join(t.TempDir(), "postgres")
	p, err := FindOrStartPostgres(ctx, dataDir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if p.URL != DefaultServerURL || p.Started {
		t.Fatalf("got URL %s, started %v; want the local server, not started", p.URL, p.Started)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("discovery touched the data directory: %v", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ping(ctx, DefaultServerURL); err != nil {
		t.Fatalf("Stop stopped a server it did not start: %v", err)
	}
}

// Candidates are tried in order; a server whose database is missing counts, on "postgres".
func TestFindOrStartTriesCandidatesInOrder(t *testing.T) {
	ctx := context.Background()
	server := pgtest.ServerURL()
	missingDB, err := withDatabase(server, "devenv_no_such_database")
	if err != nil {
		t.Fatal(err)
	}
	onPostgres, _ := withDatabase(server, "postgres")
	for _, tc := range []struct {
		name       string
		candidates []string
		want       string
	}{
		{"first answers", []string{server, unreachableURL}, server},
		{"first unreachable", []string{unreachableURL, server}, server},
		{"database missing", []string{missingDB}, onPostgres},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A data directory that cannot be created: starting a server here would fail loudly.
			opts := StartOptions{DataDir: "/dev/null/postgres"}
			p, err := FindOrStart(ctx, tc.candidates, opts, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			if p.URL != tc.want || p.Started {
				t.Fatalf("got %s (started %v), want %s", p.URL, p.Started, tc.want)
			}
		})
	}
}

// Without a server and without binaries the error must tell a newcomer what to install.
func TestFindOrStartWithoutBinariesSaysWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := binDirGlob
	binDirGlob = filepath.Join(t.TempDir(), "*", "bin")
	t.Cleanup(func() { binDirGlob = saved })

	dataDir := filepath.Join(t.TempDir(), "postgres")
	_, err := FindOrStart(context.Background(), []string{unreachableURL}, StartOptions{DataDir: dataDir}, testLogger(t))
	if !errors.Is(err, ErrNoServerBinaries) {
		t.Fatalf("got %v, want ErrNoServerBinaries", err)
	}
	for _, want := range []string{"127.0.0.1:1", "initdb", "pg_ctl", "apt-get install postgresql"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// A throwaway cluster: created, started, answering, found running by a second start, stopped,
// and started again from the same directory without a new initdb.
func TestStartPostgres(t *testing.T) {
	if _, err := findServerBinaries(); err != nil {
		t.Skipf("cannot test starting PostgreSQL: %v", err)
	}
	ctx := context.Background()
	log := testLogger(t)
	dataDir := t.TempDir()
	if os.Geteuid() == 0 {
		// t.TempDir's parent is private to root; the unprivileged server account must pass it.
		if err := os.Chmod(filepath.Dir(dataDir), 0o711); err != nil {
			t.Fatal(err)
		}
	}
	opts := StartOptions{DataDir: dataDir, Ephemeral: true}
	// With DefaultPort taken, the server goes elsewhere.
	if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", DefaultPort)); err == nil {
		t.Cleanup(func() { ln.Close() })
	}

	p, err := StartPostgres(ctx, opts, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	if !p.Started {
		t.Fatal("Started is false for a server StartPostgres started")
	}
	if mustParse(t, p.URL).Port() == strconv.Itoa(DefaultPort) {
		t.Fatalf("server at %s, on the port held by someone else", p.URL)
	}
	if got := queryString(t, p.URL, `SELECT current_setting('data_directory')`); got != dataDir {
		t.Fatalf("server at %s serves %s, want %s", p.URL, got, dataDir)
	}
	if _, err := EnsureDatabase(ctx, p.URL, "kept_across_restarts"); err != nil {
		t.Fatal(err)
	}

	again, err := StartPostgres(ctx, opts, log)
	if err != nil {
		t.Fatal(err)
	}
	if again.Started || again.URL != p.URL {
		t.Fatalf("second start: URL %s started %v; want the running server %s, not started", again.URL, again.Started, p.URL)
	}
	if err := again.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ping(ctx, p.URL); err != nil {
		t.Fatalf("stopping the reused server stopped the one another caller started: %v", err)
	}

	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ping(ctx, p.URL); err == nil {
		t.Fatalf("%s still answers after Stop", p.URL)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "postmaster.pid")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("postmaster.pid after Stop: %v", err)
	}

	restarted, err := StartPostgres(ctx, opts, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restarted.Stop(context.Background()) })
	if got := queryString(t, restarted.URL, `SELECT string_agg(datname, ',') FROM pg_database WHERE datname = 'kept_across_restarts'`); got != "kept_across_restarts" {
		t.Fatalf("restarted cluster lost the database made before (got %q): it was created anew", got)
	}
	if err := restarted.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureDatabase(t *testing.T) {
	ctx := context.Background()
	name := "devenv_t_" + strings.ToLower(rand.Text()[:10])
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), pgtest.ServerURL())
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		_, _ = conn.Exec(context.Background(), fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
	})
	var urls []string
	for range 2 { // the second call finds it
		u, err := EnsureDatabase(ctx, pgtest.ServerURL(), name)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
	if urls[0] != urls[1] {
		t.Fatalf("URLs differ: %v", urls)
	}
	if got := queryString(t, urls[0], `SELECT current_database()`); got != name {
		t.Fatalf("connected to %q, want %q", got, name)
	}
	u, _ := url.Parse(urls[0])
	if u.RawQuery != mustParse(t, pgtest.ServerURL()).RawQuery {
		t.Fatalf("URL %s lost the server URL's parameters", urls[0])
	}
}

func queryString(t *testing.T, dbURL, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func mustParse(t *testing.T, raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
