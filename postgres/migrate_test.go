package postgres_test

import (
	"context"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

// The template is already migrated, so a second run applies nothing; several concurrent runs on
// an empty database must apply each migration exactly once between them.
func TestMigrateTwiceAndConcurrently(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	applied, err := db.Migrate(ctx)
	if err != nil || len(applied) != 0 {
		t.Fatalf("migrating a migrated database: applied %v, err %v", applied, err)
	}

	url := pgtest.NewURL(t)
	empty, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if _, err := empty.Pool().Exec(ctx, `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}

	const processes = 4
	var wg sync.WaitGroup
	results := make([][]int64, processes)
	errs := make([]error, processes)
	for i := range processes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each "process" has its own pool, as separate API instances would.
			db, err := postgres.Open(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			results[i], errs[i] = db.Migrate(ctx)
		}()
	}
	wg.Wait()
	total := 0
	for i := range processes {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		total += len(results[i])
	}
	want := countMigrations(t)
	if total != want {
		t.Fatalf("concurrent migrators applied %d migrations in all, want %d (each exactly once): %v", total, want, results)
	}
	var tables int
	if err := empty.Pool().QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name = 'webhook_endpoints'`).Scan(&tables); err != nil || tables != 1 {
		t.Fatalf("schema not in place after concurrent migrate: %d tables, %v", tables, err)
	}
}

func countMigrations(t *testing.T) int {
	entries, err := fs.ReadDir(postgres.Migrations(), ".")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// Every statement of the pool is bounded; migrations are not.
func TestPoolHasAStatementTimeout(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	var got string
	if err := db.Pool().QueryRow(ctx, `SHOW statement_timeout`).Scan(&got); err != nil || got != "30s" {
		t.Fatalf("statement_timeout %q, %v", got, err)
	}
	short, err := postgres.Open(ctx, pgtest.NewURL(t)+"&statement_timeout=100")
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	if _, err := short.Pool().Exec(ctx, `SELECT pg_sleep(1)`); err == nil || !strings.Contains(err.Error(), "statement timeout") {
		t.Fatalf("a statement past the URL's timeout: %v", err)
	}
	if _, err := short.Migrate(ctx); err != nil {
		t.Fatalf("migrate under a short pool timeout: %v", err)
	}
}
