package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the embedded SQL migrations, for tools that want to list or hash them.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Migrate applies every pending migration and returns the versions it applied. A PostgreSQL
// session advisory lock serializes concurrent callers (several API instances starting at once,
// or `bgcheckctl migrate` beside them): the first applies, the others wait and find nothing to do.
func (db *DB) Migrate(ctx context.Context) ([]int64, error) {
	// Migrations run on connections of their own without the pool's statement_timeout: building
	// an index CONCURRENTLY on a big table takes as long as it takes.
	connConfig := db.pool.Config().ConnConfig.Copy()
	connConfig.RuntimeParams["statement_timeout"] = "0"
	sqlDB := stdlib.OpenDB(*connConfig)
	defer sqlDB.Close()
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 600))
	if err != nil {
		return nil, err
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, Migrations(), goose.WithSessionLocker(locker))
	if err != nil {
		return nil, fmt.Errorf("postgres: load migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// SchemaVersions returns the newest migration applied to the database (0 for none) and the
// newest this binary embeds, for a process that leaves migrating to `bgcheckctl migrate` and
// must not run against a schema older than its code. It takes no lock, so it neither waits for
// nor holds up a migration in progress; on a database never migrated it creates goose's empty
// version table, as any migration would first.
func (db *DB) SchemaVersions(ctx context.Context) (current, want int64, err error) {
	sqlDB := stdlib.OpenDBFromPool(db.pool)
	defer sqlDB.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, Migrations())
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: load migrations: %w", err)
	}
	current, want, err = provider.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: read the schema version: %w", err)
	}
	return current, want, nil
}
