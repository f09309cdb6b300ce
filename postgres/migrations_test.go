package postgres_test

import (
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck/postgres"
)

// bigTables grow with traffic: an index built on them without CONCURRENTLY blocks every write
// for as long as the build takes.
var bigTables = []string{"events", "deliveries", "delivery_attempts"}

// lastUnguardedMigration is the newest migration written before the rule. Those already ran
// wherever bgcheck is deployed, so rewriting them would change nothing there.
const lastUnguardedMigration = 4

var createIndex = regexp.MustCompile(`(?is)create\s+(?:unique\s+)?index\s+(concurrently\s+)?(?:if\s+not\s+exists\s+)?[a-z0-9_]*\s*on\s+(?:only\s+)?([a-z0-9_]+)`)

// blockingIndexes returns the tables of a migration's Up section whose indexes are built without
// CONCURRENTLY, leaving out tables the migration itself creates (empty, so nothing to block), and
// whether the file runs outside a transaction, which CONCURRENTLY needs.
func blockingIndexes(sql string) (tables []string, noTx bool) {
	up, _, _ := strings.Cut(sql, "-- +goose Down")
	lower := strings.ToLower(up)
	for _, m := range createIndex.FindAllStringSubmatch(lower, -1) {
		table := m[2]
		if m[1] != "" || !isBig(table) || strings.Contains(lower, "create table "+table+" ") {
			continue
		}
		tables = append(tables, table)
	}
	return tables, strings.Contains(sql, "-- +goose NO TRANSACTION")
}

func isBig(table string) bool {
	for _, t := range bigTables {
		if t == table {
			return true
		}
	}
	return false
}

// The rule catches what it should: a plain index on a big table, but not a concurrent one, one on
// a small table, or one on a table the same migration creates.
func TestBlockingIndexesRule(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want int
	}{
		{"-- +goose Up\nCREATE INDEX deliveries_x ON deliveries (status);", 1},
		{"-- +goose Up\ncreate unique index if not exists events_x on events (type);", 1},
		{"-- +goose Up\nCREATE INDEX CONCURRENTLY deliveries_x ON deliveries (status);", 0},
		{"-- +goose Up\nCREATE INDEX sessions_x ON sessions (user_id);", 0},
		{"-- +goose Up\nCREATE TABLE delivery_attempts (a int);\nCREATE INDEX delivery_attempts_a ON delivery_attempts (a);", 0},
		{"-- +goose Up\nSELECT 1;\n-- +goose Down\nCREATE INDEX events_x ON events (type);", 0},
	} {
		if got, _ := blockingIndexes(tc.sql); len(got) != tc.want {
			t.Errorf("%q: blocking %v, want %d", tc.sql, got, tc.want)
		}
	}
}

// Every migration after the rule builds its indexes on the big tables CONCURRENTLY, and so runs
// outside a transaction.
func TestMigrationsIndexBigTablesConcurrently(t *testing.T) {
	entries, err := fs.ReadDir(postgres.Migrations(), ".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range entries {
		version, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			t.Fatalf("%s: no version number: %v", e.Name(), err)
		}
		if version <= lastUnguardedMigration {
			continue
		}
		b, err := fs.ReadFile(postgres.Migrations(), e.Name())
		if err != nil {
			t.Fatal(err)
		}
		sql := string(b)
		blocking, noTx := blockingIndexes(sql)
		if len(blocking) > 0 {
			t.Errorf("%s builds indexes on %v without CONCURRENTLY: writes to them would wait for the build", e.Name(), blocking)
		}
		if strings.Contains(strings.ToUpper(sql), "CONCURRENTLY") && !noTx {
			t.Errorf("%s uses CONCURRENTLY but lacks -- +goose NO TRANSACTION", e.Name())
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no migration after the rule to check")
	}
}
