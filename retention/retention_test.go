package retention_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/retention"
)

// syncBuffer is a log sink the runner's goroutine and the test can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The runner prunes shortly after start and again at every interval, logs what it deleted, and
// stops with its context.
func TestRunnerPrunesOnSchedule(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	_, admin, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: "a@example.com", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	expired := func(token string) {
		t.Helper()
		if err := db.CreateMagicLink(ctx, admin.ID, []byte(token), time.Now().Add(-48*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	waitGone := func(token string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			var n int
			if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM magic_links WHERE token_hash = $1`, []byte(token)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				return
			}
		}
		t.Fatalf("expired magic link %q still there", token)
	}

	var logs syncBuffer
	r := retention.New(db, postgres.RetentionPolicy{Events: postgres.DefaultEventRetention}, slog.New(slog.NewTextHandler(&logs, nil)))
	r.FirstRun = 10 * time.Millisecond
	expired("first")
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(runCtx, 100*time.Millisecond) }()

	waitGone("first")
	expired("second") // deleted by a later run, not the first
	waitGone("second")
	stop()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if !strings.Contains(logs.String(), "retention: pruned") || !strings.Contains(logs.String(), "magic_links=1") {
		t.Errorf("logs do not say what was pruned:\n%s", logs.String())
	}
}
