// Package devenv finds or starts the PostgreSQL that local development (cmd/bgcheck-dev) and the
// test suite (`make test`) need, so a fresh machine without Docker needs nothing but the
// PostgreSQL server binaries. It is a development tool: the service itself never imports it.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultServerURL is the PostgreSQL that runs on the project's machines (NOTES.md), on its
// maintenance database.
const DefaultServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Postgres is a reachable PostgreSQL server, found or started.
type Postgres struct {
	// URL connects to the server as a superuser: to the maintenance database "postgres" for a
	// server devenv started, or as found otherwise. EnsureDatabase derives other databases' URLs.
	URL string
	// Started reports whether this process started the server; only then does Stop stop it.
	Started bool

	stop func(context.Context) error
}

// Stop stops the server if this process started it, and does nothing otherwise; a second call
// does nothing either.
func (p *Postgres) Stop(ctx context.Context) error {
	if p == nil || p.stop == nil {
		return nil
	}
	stop := p.stop
	p.stop = nil
	return stop(ctx)
}

// FindOrStartPostgres returns the first PostgreSQL that answers among DATABASE_URL (when set) and
// DefaultServerURL; when neither does, it starts a throwaway cluster in dataDir (see
// StartPostgres). The error, when even that is impossible, says what to install.
func FindOrStartPostgres(ctx context.Context, dataDir string, log *slog.Logger) (*Postgres, error) {
	var candidates []string
	if u := os.Getenv("DATABASE_URL"); u != "" {
		candidates = append(candidates, u)
	}
	candidates = append(candidates, DefaultServerURL)
	return FindOrStart(ctx, candidates, StartOptions{DataDir: dataDir}, log)
}

// FindOrStart returns the first of candidates that answers, or else a server started with opts.
// A candidate whose server answers but whose database does not exist yet counts as found, with
// URL pointing at the maintenance database "postgres" instead.
func FindOrStart(ctx context.Context, candidates []string, opts StartOptions, log *slog.Logger) (*Postgres, error) {
	var tried []string
	for _, c := range candidates {
		u, err := reachable(ctx, c)
		if err == nil {
			log.Info("using the PostgreSQL that answers", "url", redact(u))
			return &Postgres{URL: u}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Info("no PostgreSQL answers", "url", redact(c), "err", err)
		tried = append(tried, fmt.Sprintf("%s (%v)", redact(c), err))
	}
	p, err := StartPostgres(ctx, opts, log)
	if errors.Is(err, ErrNoServerBinaries) && len(tried) > 0 {
		return nil, fmt.Errorf("no PostgreSQL answers at %s, and %w", strings.Join(tried, " or "), err)
	}
	return p, err
}

// EnsureDatabase creates the database name on the server at serverURL unless it exists, and
// returns the URL of that database (serverURL with its path replaced).
func EnsureDatabase(ctx context.Context, serverURL, name string) (string, error) {
	dbURL, err := withDatabase(serverURL, name)
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", fmt.Errorf("devenv: connect to %s: %w", redact(serverURL), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("devenv: look for database %s: %w", name, err)
	}
	if exists {
		return dbURL, nil
	}
	_, err = conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	if err != nil && pgCode(err) != "42P04" { // duplicate_database: another process was quicker
		return "", fmt.Errorf("devenv: create database %s: %w", name, err)
	}
	return dbURL, nil
}

// reachable connects to rawURL and returns the URL that worked: rawURL itself, or, when the
// server answers that the database does not exist (3D000), rawURL on the database "postgres".
func reachable(ctx context.Context, rawURL string) (string, error) {
	err := ping(ctx, rawURL)
	if pgCode(err) != "3D000" {
		return rawURL, err
	}
	maint, werr := withDatabase(rawURL, "postgres")
	if werr != nil {
		return "", werr
	}
	return maint, ping(ctx, maint)
}

// ping connects once and closes; a server that does not answer within five seconds is taken
// as absent.
func ping(ctx context.Context, rawURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// pgCode is the SQLSTATE of a PostgreSQL error, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func withDatabase(rawURL, name string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("devenv: %q is not a PostgreSQL URL: %w", redact(rawURL), err)
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String(), nil
}

// redact hides a password in a URL before it is logged.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
