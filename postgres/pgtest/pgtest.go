// Package pgtest gives each test its own freshly migrated PostgreSQL database. The migrations run
// once per migration set into a template database; every test then gets a cheap copy of it
// (CREATE DATABASE … TEMPLATE) that is dropped when the test ends.
//
// The server is BGCHECK_TEST_DATABASE_URL, by default the local PostgreSQL of the development
// machines (postgres@127.0.0.1:5432). `make test` points it at a throwaway server when none runs.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/internal/dev/testserver"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/secretbox"
)

// DefaultURL is the server used when BGCHECK_TEST_DATABASE_URL is unset.
const DefaultURL = testserver.DefaultURL

// ServerURL returns the URL of the maintenance database of the test server.
func ServerURL() string { return testserver.URL() }

// NewURL creates a fresh, migrated database and returns its URL; the database is dropped when
// the test ends. Use it when the code under test opens its own connections.
func NewURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbURL, name, drop, err := Create(ctx, "bgcheck_t_")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return dbURL
}

// Create creates a fresh, migrated database named prefix and a random suffix on the test server,
// for programs that are not tests (the benchmarks), and returns its URL, its name and the
// function that drops it.
func Create(ctx context.Context, prefix string) (dbURL, name string, drop func() error, err error) {
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return "", "", nil, fmt.Errorf("cannot reach the test PostgreSQL at %s (set BGCHECK_TEST_DATABASE_URL or run `make test`): %w", ServerURL(), err)
	}
	defer admin.Close(ctx)

	template, err := ensureTemplate(ctx, admin)
	if err != nil {
		return "", "", nil, err
	}
	name = prefix + randomSuffix()
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, pgx.Identifier{name}.Sanitize(), template)); err != nil {
		return "", "", nil, fmt.Errorf("create database: %w", err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, ServerURL())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, pgx.Identifier{name}.Sanitize()))
		return err
	}
	return withDatabase(ServerURL(), name), name, drop, nil
}

// NewDB returns an open handle on a fresh, migrated database, closed when the test ends.
func NewDB(t testing.TB) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), NewURL(t), postgres.WithSecrets(SecretBox(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// SecretBox returns the keyring the binaries use in development, as tests' handles need it to
// store and read endpoint secrets that a worker or API started with a development config shares.
func SecretBox(t testing.TB) *secretbox.Keyring {
	t.Helper()
	box, err := secretbox.Parse(config.DevelopmentSecretsKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// ensureTemplate returns the name of a template database holding the current migrations,
// creating it if needed. An advisory lock on the server serializes test processes (go test runs
// packages in parallel); the template is built under a temporary name and renamed only when
// complete, so a crashed build is never used.
func ensureTemplate(ctx context.Context, admin *pgx.Conn) (string, error) {
	name := "bgcheck_tmpl_" + migrationsHash()
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('bgcheck pgtest template', 0))`); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtextextended('bgcheck pgtest template', 0))`)

	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := admin.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
		return "", err
	}
	db, err := postgres.Open(ctx, withDatabase(ServerURL(), building))
	if err != nil {
		return "", err
	}
	_, err = db.Migrate(ctx)
	db.Close()
	if err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, name)); err != nil {
		return "", err
	}
	return name, nil
}

// migrationsHash names the template after the migration files, so a changed migration gets a
// new template instead of a stale one.
func migrationsHash() string {
	h := sha256.New()
	_ = fs.WalkDir(postgres.Migrations(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(postgres.Migrations(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func withDatabase(serverURL, name string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		panic(fmt.Sprintf("pgtest: bad server URL %q: %v", serverURL, err))
	}
	u.Path = "/" + name
	return u.String()
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
