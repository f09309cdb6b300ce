package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/webhook"
)

// The overview counts finished deliveries of the window only, but every pending one however old;
// the hourly series counts the deliveries of its 24 hours and nothing older.
func TestOverviewCountsABoundedWindow(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, _ := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"})
	// Five deliveries: recent succeeded, recent pending, old succeeded, old failed, old pending.
	var ids []string
	for range 5 {
		ev, err := db.CreateEvent(ctx, tn, "report.ready", webhook.SampleData("report.ready"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, deliveryOf(t, db, ev.ID))
	}
	set := func(id, status, age string) {
		t.Helper()
		if _, err := db.Pool().Exec(ctx, `UPDATE deliveries SET status = $2, created_at = now() - $3::interval WHERE id = $1`,
			id, status, age); err != nil {
			t.Fatal(err)
		}
	}
	set(ids[0], "succeeded", "1 minute")
	set(ids[1], "pending", "1 minute")
	set(ids[2], "succeeded", "25 hours")
	set(ids[3], "failed", "40 days")
	set(ids[4], "pending", "3 days")

	o, err := db.FindAccountOverview(ctx, tn.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	want := postgres.DeliveryCounts{Pending: 2, Succeeded: 1}
	if o.Deliveries != want {
		t.Errorf("counts %+v, want %+v: finished deliveries of the last day and every pending one", o.Deliveries, want)
	}
	// The old failure is still listed: the list is the newest failures, whatever their age.
	if len(o.FailedDeliveries) != 1 || o.FailedDeliveries[0].ID != ids[3] {
		t.Errorf("failed deliveries %v, want %s", o.FailedDeliveries, ids[3])
	}
	total := 0
	for _, h := range o.Hourly {
		total += h.Pending + h.Succeeded + h.Failed + h.Canceled
	}
	if len(o.Hourly) != 24 || total != 2 {
		t.Errorf("%d hours counting %d deliveries, want 24 counting the 2 recent ones", len(o.Hourly), total)
	}
}

// On an account with 90 days of deliveries, the planner serves every overview statement from
// the index made for it rather than reading the account's history. (explain_test.go shows the
// plans on a million deliveries.)
func TestOverviewQueriesUseIndexes(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, eps := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"}, []string{"*"})
	fillDeliveries(t, db, tn.AccountID, eps, 20_000)
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	wantIndex := map[string]string{
		"counts":          "deliveries_account_created_idx",
		"hourly":          "deliveries_account_created_idx",
		"endpoint health": "deliveries_endpoint_created_idx",
		"failed":          "deliveries_account_status_idx",
	}
	for name, q := range postgres.OverviewQueries(tn.AccountID) {
		plan := explain(t, conn.Conn(), "EXPLAIN", q)
		for _, table := range []string{"deliveries", "events"} {
			if strings.Contains(plan, "Seq Scan on "+table) {
				t.Errorf("%s reads %s whole:\n%s", name, table, plan)
			}
		}
		if !strings.Contains(plan, wantIndex[name]) {
			t.Errorf("%s does not use %s:\n%s", name, wantIndex[name], plan)
		}
	}
}

func deliveryOf(t *testing.T, db *postgres.DB, eventID string) string {
	t.Helper()
	var id string
	if err := db.Pool().QueryRow(context.Background(), `SELECT id FROM deliveries WHERE event_id = $1`, eventID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}
