// Package temporaltest starts the Temporal dev server for a test. It is apart from devtemporal so
// that binaries which run the dev server (bgcheck-dev) do not link the testing package.
package temporaltest

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
)

// Start starts a dev server for t and stops it when t and its subtests are done. It never
// skips: when the CLI cannot be found or built, or the server does not start, t fails with the
// reason. Unless opts say otherwise, the server's log goes to a file in t.TempDir() and Binary's
// messages to t's output; when t has failed, the end of the log is shown before the server stops.
//
// With $BGCHECK_TEST_TEMPORAL=postgres (StoreEnv) it starts a Temporal cluster on the tests'
// PostgreSQL instead, in fresh databases, unless opts name a Postgres, a database file or SQLite.
func Start(t testing.TB, opts devtemporal.Options) *devtemporal.Server {
	t.Helper()
	if OnPostgres() && opts.Postgres == nil && !opts.SQLite && opts.DBFile == "" {
		opts.Postgres = NewPostgres(t)
	}
	if opts.LogFile == "" {
		opts.LogFile = filepath.Join(t.TempDir(), "temporal.log")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	s, err := devtemporal.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the Temporal dev server (set $%s to a temporal CLI to skip building one): %v", devtemporal.BinaryEnv, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("end of the Temporal dev server's log %s:\n%s", s.LogFile, s.LogTail())
		}
		s.Stop()
	})
	return s
}
