package temporaltest

import (
	"context"
	"os"
	"testing"
	"time"

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
	pg, err := devtemporal.PostgresOn(testserver.URL(), "temporal_test_")
	if err != nil {
		t.Fatalf("temporaltest: %v", err)
	}
	// Registered before Start registers the cluster's stop, so it runs after it.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pg.DropOn(ctx, testserver.URL()); err != nil {
			t.Logf("temporaltest: %v", err)
		}
	})
	return pg
}
