// Package postgres stores bgcheck's records in PostgreSQL through pgx. Every method that serves an
// integration takes a bgcheck.Tenant and filters on its account and mode; driver errors are
// translated here (no rows → bgcheck.ErrNotFound) so callers see only domain errors.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bgcheck/bgcheck"
)

// DefaultStatementTimeout is the pool's statement_timeout unless DATABASE_URL sets one.
const DefaultStatementTimeout = 30 * time.Second

// DB is the service's handle on PostgreSQL: one pool per process.
type DB struct {
	pool      *pgxpool.Pool
	secrets   SecretBox // seals endpoint signing secrets; nil when the process stores none
	announcer *announcer
	events    *eventWriter
	closeOnce sync.Once
}

// Open connects to the database at url and checks that it answers.
func Open(ctx context.Context, url string, opts ...Option) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse DATABASE_URL: %w", err)
	}
	// pgxpool's default of max(4, cores) connections queues a busy API behind four queries; the
	// URL's pool_max_conns still wins when given.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = max(16, int32(4*runtime.NumCPU()))
	}
	// No statement runs unbounded, whatever its caller's context: a lock held elsewhere or a
	// runaway plan ends at DefaultStatementTimeout. The URL's own statement_timeout (or
	// options=-c statement_timeout=…) wins; migrations lift it for themselves.
	if _, ok := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !ok && !strings.Contains(url, "statement_timeout") {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.Itoa(int(DefaultStatementTimeout.Milliseconds()))
	}
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		// Times leave the database in UTC, whatever the server's or the process's zone is, so
		// every timestamp the API writes is an RFC 3339 UTC string.
		conn.TypeMap().RegisterType(&pgtype.Type{
			Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
		})
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	db := &DB{pool: pool, announcer: startAnnouncer(pool)}
	db.events = startEventWriter(pool, func() { db.announcer.announce(true) })
	for _, o := range opts {
		o(db)
	}
	return db, nil
}

// Close releases every connection. Calling it again does nothing.
func (db *DB) Close() {
	db.closeOnce.Do(func() {
		db.events.close()
		db.announcer.close()
		db.pool.Close()
	})
}

// Ping reports whether the database answers; /readyz uses it.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Pool exposes the pool to code that needs a raw connection (migrations, tests).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// inTx runs fn in one transaction: committed when fn returns nil, rolled back otherwise.
// A transaction that calls announceOutbox is announced to the dispatchers after it commits.
func (db *DB) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var otx *outboxTx
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		otx = &outboxTx{Tx: tx}
		return fn(otx)
	})
	if err == nil && otx.announce {
		db.announcer.announce(!otx.others)
	}
	return err
}

// notFound maps pgx.ErrNoRows to bgcheck.ErrNotFound and leaves other errors as they are.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return bgcheck.ErrNotFound
	}
	return err
}

// collectOne scans the single row of a query into T, or returns bgcheck.ErrNotFound.
func collectOne[T any](rows pgx.Rows, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByNameLax[T])
	return v, notFound(err)
}

// DefaultPageLimit and MaxPageLimit bound ?limit= on every list (API.md §4).
const (
	DefaultPageLimit = 20
	MaxPageLimit     = 100
)

// page runs a newest-first list query whose last two parameters are the cursor (an id; "" for the
// first page) and the row limit, fetching one extra row to learn whether another page follows.
func page[T any](ctx context.Context, db *DB, p bgcheck.ListParams, idOf func(*T) string, sql string, args ...any) (bgcheck.Page[*T], error) {
	limit := p.Limit
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	rows, err := db.pool.Query(ctx, sql, append(args, p.Cursor, limit+1)...)
	if err != nil {
		return bgcheck.Page[*T]{}, err
	}
	items, err := pgx.CollectRows(rows, pgx.RowToAddrOfStructByNameLax[T])
	if err != nil {
		return bgcheck.Page[*T]{}, err
	}
	out := bgcheck.Page[*T]{Data: items}
	if len(items) > limit {
		out.Data, out.HasMore = items[:limit], true
		next := idOf(items[limit-1])
		out.NextCursor = &next
	}
	if out.Data == nil {
		out.Data = []*T{}
	}
	return out, nil
}
