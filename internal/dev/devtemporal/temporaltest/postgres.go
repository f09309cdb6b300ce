package temporaltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/internal/dev/testserver"
)

// StoreEnv, set to "postgres", makes Start run a Temporal cluster on the tests' PostgreSQL
// (BGCHECK_TEST_DATABASE_URL), in databases of its own, instead of the dev server: CI runs the
// end-to-end tests once each way.
const StoreEnv = "BGCHECK_TEST_TEMPORAL"

// OnPostgres reports whether StoreEnv asks for a cluster on PostgreSQL.
func OnPostgres() bool { return os.Getenv(StoreEnv) == "postgres" }

// NewPostgres names a fresh pair of databases on the tests' PostgreSQL server for a cluster
// (Start creates them), dropped when t ends, after the cluster has stopped.
func NewPostgres(t testing.TB) *devtemporal.Postgres {
	t.Helper()
	server, err := url.Parse(testserver.URL())
	if err != nil {
		t.Fatalf("temporaltest: the tests' PostgreSQL URL: %v", err)
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	pg := &devtemporal.Postgres{Address: server.Host, User: server.User.Username(),
		Database: "temporal_test_" + hex.EncodeToString(suffix[:])}
	pg.Password, _ = server.User.Password()
	// Registered before Start registers the cluster's stop, so it runs after it.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testserver.URL())
		if err != nil {
			t.Logf("temporaltest: dropping %s: %v", pg.Database, err)
			return
		}
		defer conn.Close(ctx)
		for _, db := range []string{pg.Database, pg.VisibilityDatabase()} {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Logf("temporaltest: dropping %s: %v", db, err)
			}
		}
	})
	return pg
}
