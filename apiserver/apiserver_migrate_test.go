package apiserver_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/apiserver"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

// With BGCHECK_AUTO_MIGRATE=false the API migrates nothing: on a schema behind its migrations it
// refuses to start and says what to run; once `bgcheckctl migrate` (db.Migrate) has run, it serves.
func TestServeWithoutAutoMigrate(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, newest, err := db.SchemaVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The database as it was before the newest migration.
	if _, err := db.Pool().Exec(ctx, `DELETE FROM goose_db_version WHERE version_id = $1`, newest); err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{DatabaseURL: url, TemporalAddress: "127.0.0.1:1", TemporalNamespace: "default", SkipMigrations: true}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = apiserver.Serve(ctx, ln, cfg, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "run bgcheckctl migrate") || !strings.Contains(err.Error(), "needs") {
		t.Fatalf("Serve on a schema behind: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener was left open")
	}
	if current, _, err := db.SchemaVersions(ctx); err != nil || current == newest {
		t.Fatalf("Serve migrated though told not to: at %d, %v", current, err)
	}

	// The separate step brings the schema to the binary's version (here: the migration's work
	// is still there, so recording it as applied is what bgcheckctl migrate would leave).
	if _, err := db.Pool().Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, newest); err != nil {
		t.Fatal(err)
	}
	if current, _, err := db.SchemaVersions(ctx); err != nil || current != newest {
		t.Fatalf("schema at %d, %v", current, err)
	}
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- apiserver.Serve(runCtx, ln, cfg, slog.New(slog.DiscardHandler)) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz on a current schema: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}
