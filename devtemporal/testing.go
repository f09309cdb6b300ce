package devtemporal

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
)

// StartForTest starts a dev server for t and stops it when t and its subtests are done. It never
// skips: when the CLI cannot be found or built, or the server does not start, t fails with the
// reason. Unless opts say otherwise, the server's log goes to a file in t.TempDir() and Binary's
// messages to t's output; when t has failed, the end of the log is shown before the server stops.
func StartForTest(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.LogFile == "" {
		opts.LogFile = filepath.Join(t.TempDir(), "temporal.log")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the Temporal dev server (set $%s to a temporal CLI to skip building one): %v", BinaryEnv, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("end of the Temporal dev server's log %s:\n%s", s.LogFile, s.logTail())
		}
		s.Stop()
	})
	return s
}
