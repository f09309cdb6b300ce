package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

// explain returns the plan of q (its SQL and then its arguments) as text.
func explain(t *testing.T, conn *pgx.Conn, how string, q []any) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), how+" "+q[0].(string), q[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestExplainOverviewOnAMillionDeliveries is a look, not an assertion on time: it fills a database
// with a million deliveries of one account spread over 90 days (plus another account's) and prints
// EXPLAIN (ANALYZE, BUFFERS) of every overview statement. It takes a minute, so it runs only with
// BGCHECK_EXPLAIN=1:
//
//	BGCHECK_EXPLAIN=1 go test -count=1 -run ExplainOverview -v ./postgres/
func TestExplainOverviewOnAMillionDeliveries(t *testing.T) {
	if os.Getenv("BGCHECK_EXPLAIN") != "1" {
		t.Skip("set BGCHECK_EXPLAIN=1 to fill a database with a million deliveries and print the overview's plans")
	}
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, eps := tenantWithEndpoints(t, db, bgcheck.ModeLive, []string{"*"}, []string{"*"})
	other, otherEPs := tenantWithEndpoints(t, db, bgcheck.ModeLive, []string{"*"})
	start := time.Now()
	fillDeliveries(t, db, tn.AccountID, eps, 1_000_000)
	fillDeliveries(t, db, other.AccountID, otherEPs, 100_000)
	t.Logf("filled in %s", time.Since(start).Round(time.Second))

	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	queries := postgres.OverviewQueries(tn.AccountID)
	names := make([]string, 0, len(queries))
	for name := range queries {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Printf("=== %s\n%s\n\n", name, explain(t, conn.Conn(), "EXPLAIN (ANALYZE, BUFFERS)", queries[name]))
	}
	start = time.Now()
	if _, err := db.FindAccountOverview(ctx, tn.AccountID); err != nil {
		t.Fatal(err)
	}
	t.Logf("FindAccountOverview: %s", time.Since(start))
}

// fillDeliveries adds n events of an account, one delivery each to one of its endpoints, created
// evenly over the last 90 days and nearly all finished, then vacuums and analyzes, so the planner
// sees the tables as they are.
func fillDeliveries(t *testing.T, db *postgres.DB, accountID string, endpoints []string, n int) {
	t.Helper()
	ctx := context.Background()
	_, err := db.Pool().Exec(ctx, `
		WITH ev AS (
			INSERT INTO events (id, account_id, mode, type, body, created_at)
			SELECT 'evt_' || replace(bgcheck_uuidv7()::text, '-', ''), $1, 'live', 'report.ready', '\x7b7d',
				now() - (i * interval '90 days' / $3)
			FROM generate_series(1, $3) AS i
			RETURNING id, created_at)
		INSERT INTO deliveries (id, event_id, endpoint_id, account_id, mode, event_type, status, attempt_count,
			created_at, updated_at, dispatched_at)
		SELECT 'dlv_' || replace(bgcheck_uuidv7()::text, '-', ''), ev.id,
			($2::text[])[1 + (random() * (cardinality($2::text[]) - 1))::int], $1, 'live', 'report.ready',
			CASE WHEN random() < 0.001 THEN 'pending' WHEN random() < 0.05 THEN 'failed'
				WHEN random() < 0.01 THEN 'canceled' ELSE 'succeeded' END,
			1, ev.created_at, ev.created_at, ev.created_at
		FROM ev`, accountID, endpoints, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `VACUUM ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `VACUUM ANALYZE deliveries`); err != nil {
		t.Fatal(err)
	}
}
