package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/webhook"
)

// Redeliver keeps to the tenant's mode, RedeliverInAccount to the account alone; neither lets an
// empty mode or account widen what it may touch.
func TestRedeliverScopes(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	live, eps := tenantWithEndpoints(t, db, bgcheck.ModeLive, []string{"*"})
	ev, err := db.CreateEvent(ctx, live, "report.ready", webhook.SampleData("report.ready"))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM deliveries WHERE event_id = $1 AND endpoint_id = $2`, ev.ID, eps[0]).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RedeliverInAccount(ctx, live.AccountID, id); bgcheck.ErrorCode(err) != bgcheck.CodeDeliveryInProgress {
		t.Fatalf("pending delivery: %v", err)
	}
	if err := db.RecordAttempt(ctx, postgres.AttemptRecord{DeliveryID: id, Number: 1, StartedAt: time.Now(), StatusCode: 500,
		Error: "the endpoint answered 500", Status: bgcheck.DeliveryFailed}); err != nil {
		t.Fatal(err)
	}
	other, _ := tenantWithEndpoints(t, db, bgcheck.ModeLive)
	for name, redeliver := range map[string]func() (*bgcheck.Delivery, error){
		"the other mode": func() (*bgcheck.Delivery, error) {
			return db.Redeliver(ctx, bgcheck.Tenant{AccountID: live.AccountID, Mode: bgcheck.ModeTest}, id)
		},
		"no mode": func() (*bgcheck.Delivery, error) {
			return db.Redeliver(ctx, bgcheck.Tenant{AccountID: live.AccountID}, id)
		},
		"another account":         func() (*bgcheck.Delivery, error) { return db.Redeliver(ctx, other, id) },
		"another account's admin": func() (*bgcheck.Delivery, error) { return db.RedeliverInAccount(ctx, other.AccountID, id) },
		"no account":              func() (*bgcheck.Delivery, error) { return db.RedeliverInAccount(ctx, "", id) },
	} {
		if _, err := redeliver(); err != bgcheck.ErrNotFound {
			t.Errorf("%s: %v, want not found", name, err)
		}
	}
	d, err := db.RedeliverInAccount(ctx, live.AccountID, id)
	if err != nil || d.Status != bgcheck.DeliveryPending || d.Series != 2 || d.Mode != bgcheck.ModeLive {
		t.Fatalf("admin redelivery: %+v, %v", d, err)
	}
	if _, err := db.Redeliver(ctx, live, id); bgcheck.ErrorCode(err) != bgcheck.CodeDeliveryInProgress {
		t.Fatalf("redelivering it again at once: %v", err)
	}
}
