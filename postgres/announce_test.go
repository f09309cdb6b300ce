package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/webhook"
)

// listen opens a connection of its own that listens on the dispatchers' channel, as a
// dispatcher does.
func listen(t *testing.T, db *postgres.DB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.ConnectConfig(context.Background(), db.Pool().Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(context.Background(), "LISTEN "+postgres.DeliveriesChannel); err != nil {
		t.Fatal(err)
	}
	return conn
}

// notified reports whether a notification arrives within d.
func notified(conn *pgx.Conn, d time.Duration) bool {
	_, ok := notification(conn, d)
	return ok
}

// notification is the payload of the notification that arrives within d, if one does.
func notification(conn *pgx.Conn, d time.Duration) (payload string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		return "", false
	}
	return n.Payload, true
}

// An event with deliveries wakes the dispatchers once its transaction has committed (the
// announcement is sent from outside the transaction, so that event inserts do not serialize on
// PostgreSQL's notify lock), saying that it wrote only new deliveries; an event no endpoint
// subscribes to wakes nobody; and a write to another outbox (here: the cancels of a deleted
// endpoint's deliveries) is announced without that payload, so the dispatchers read every
// outbox.
func TestCommittedDeliveriesAreAnnounced(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, endpoints := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"check.completed"})
	conn := listen(t, db)

	if _, err := db.CreateEvent(ctx, tn, "report.ready", webhook.SampleData("report.ready")); err != nil {
		t.Fatal(err)
	}
	if notified(conn, 300*time.Millisecond) {
		t.Fatal("an event without deliveries was announced")
	}
	for range 3 {
		if _, err := db.CreateEvent(ctx, tn, "check.completed", webhook.SampleData("check.completed")); err != nil {
			t.Fatal(err)
		}
		payload, ok := notification(conn, 5*time.Second)
		if !ok {
			t.Fatal("an event with a delivery was not announced within 5 s")
		}
		if payload != postgres.NewDeliveriesOnly {
			t.Fatalf("an event's announcement has payload %q, want %q", payload, postgres.NewDeliveriesOnly)
		}
	}

	canceled, err := db.DeleteEndpoint(ctx, tn, endpoints[0])
	if err != nil || len(canceled) != 3 {
		t.Fatalf("DeleteEndpoint: %d canceled, %v; want the 3 pending deliveries", len(canceled), err)
	}
	payload, ok := notification(conn, 5*time.Second)
	if !ok || payload != "" {
		t.Fatalf("the deleted endpoint's cancels: notified %v with payload %q, want an empty payload", ok, payload)
	}
}

// CreateEvent writes the event and its deliveries outside a transaction block, in one statement
// that is its own transaction: a delivery that cannot be written leaves no event behind either.
func TestCreateEventIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, _ := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"})
	if _, err := db.Pool().Exec(ctx, `
		CREATE FUNCTION refuse_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'no deliveries today'; END $$;
		CREATE TRIGGER refuse_delivery BEFORE INSERT ON deliveries FOR EACH ROW EXECUTE FUNCTION refuse_delivery();`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateEvent(ctx, tn, "check.completed", webhook.SampleData("check.completed")); err == nil {
		t.Fatal("CreateEvent succeeded although its delivery could not be written")
	}
	var events int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE account_id = $1`, tn.AccountID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 0 {
		t.Fatalf("%d events stored without their deliveries", events)
	}
}

// Events created at the same moment share the event writer's statements: each still gets its
// own deliveries, counted right, whichever tenant it belongs to. A caller that has gone before
// its event is written gets an error, and the event is not written.
func TestConcurrentEventsShareStatementsAndKeepTheirOwnDeliveries(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	one, _ := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"})
	three, _ := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"}, []string{"check.completed"}, []string{"report.ready", "check.completed"})
	const each = 40
	type created struct {
		tenant bgcheck.Tenant
		ev     *bgcheck.Event
		err    error
	}
	results := make(chan created, 2*each)
	var wg sync.WaitGroup
	for i := range 2 * each {
		tn := one
		if i%2 == 1 {
			tn = three
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev, err := db.CreateEvent(ctx, tn, "check.completed", webhook.SampleData("check.completed"))
			results <- created{tn, ev, err}
		}()
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		want := map[string]int{one.AccountID: 1, three.AccountID: 3}[r.tenant.AccountID]
		if r.ev.Deliveries != want || len(deliveriesOf(t, db, r.ev.ID)) != want {
			t.Fatalf("event %s of %s: %d deliveries reported, %d stored, want %d",
				r.ev.ID, r.tenant.AccountID, r.ev.Deliveries, len(deliveriesOf(t, db, r.ev.ID)), want)
		}
	}

	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := db.CreateEvent(gone, one, "check.completed", webhook.SampleData("check.completed")); err == nil {
		t.Fatal("an event was created for a caller that had gone")
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE account_id = $1`, one.AccountID).Scan(&n); err != nil || n != each {
		t.Fatalf("%d events of the first tenant (%v), want %d", n, err, each)
	}
}

// Closing a handle twice is harmless, as closing its pool twice always was.
func TestCloseTwice(t *testing.T) {
	db, err := postgres.Open(context.Background(), pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { db.Close(); db.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a second Close did not return")
	}
}
