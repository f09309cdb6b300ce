package postgres_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/webhook"
)

func tenantWithEndpoints(t *testing.T, db *postgres.DB, mode bgcheck.Mode, subscriptions ...[]string) (bgcheck.Tenant, []string) {
	t.Helper()
	ctx := context.Background()
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := bgcheck.Tenant{AccountID: acct.ID, Mode: mode}
	var ids []string
	for i, events := range subscriptions {
		ep, err := db.CreateEndpoint(ctx, tn, bgcheck.WebhookEndpoint{
			URL: fmt.Sprintf("https://example.com/%d", i), Events: events, Enabled: true, Secret: webhook.NewSecret(),
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ep.ID)
	}
	return tn, ids
}

func deliveriesOf(t *testing.T, db *postgres.DB, eventID string) map[string]string {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), `SELECT endpoint_id, status FROM deliveries WHERE event_id = $1`, eventID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var ep, st string
		if err := rows.Scan(&ep, &st); err != nil {
			t.Fatal(err)
		}
		out[ep] = st
	}
	return out
}

// An event gets one pending delivery per enabled, undeleted endpoint of its own account and mode
// that subscribes to its type or to "*", written with the event.
func TestEventFanOut(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, eps := tenantWithEndpoints(t, db, bgcheck.ModeTest,
		[]string{"*"}, []string{"check.completed"}, []string{"report.ready"}, []string{"check.completed", "report.ready"},
		[]string{"*"}, []string{"*"})
	disabled := false
	if _, err := db.UpdateEndpoint(ctx, tn, eps[4], postgres.EndpointPatch{Enabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteEndpoint(ctx, tn, eps[5]); err != nil {
		t.Fatal(err)
	}
	otherMode, _ := tenantWithEndpoints(t, db, bgcheck.ModeLive, []string{"*"})
	_ = otherMode

	ev, err := db.CreateEvent(ctx, tn, "check.completed", webhook.SampleData("check.completed"))
	if err != nil {
		t.Fatal(err)
	}
	got := deliveriesOf(t, db, ev.ID)
	want := map[string]string{eps[0]: "pending", eps[1]: "pending", eps[3]: "pending"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("deliveries %v, want %v", got, want)
	}
	stored, err := db.FindEvent(ctx, tn, ev.ID)
	if err != nil || string(stored.Body) != string(ev.Body) {
		t.Fatalf("stored body differs: %v", err)
	}
	if _, err := db.FindEvent(ctx, bgcheck.Tenant{AccountID: tn.AccountID, Mode: bgcheck.ModeLive}, ev.ID); err != bgcheck.ErrNotFound {
		t.Fatalf("event visible in the other mode: %v", err)
	}
}

func TestRedeliverOnlyFinishedDeliveries(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, _ := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"})
	ev, err := db.CreateEvent(ctx, tn, "report.ready", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM deliveries WHERE event_id = $1`, ev.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Redeliver(ctx, tn, id); bgcheck.ErrorCode(err) != bgcheck.CodeDeliveryInProgress {
		t.Fatalf("redelivering a pending delivery: %v", err)
	}
	for _, status := range []string{"failed", "succeeded", "canceled"} {
		if _, err := db.Pool().Exec(ctx, `UPDATE deliveries SET status = $2, dispatched_at = now(), attempt_count = 6 WHERE id = $1`, id, status); err != nil {
			t.Fatal(err)
		}
		d, err := db.Redeliver(ctx, tn, id)
		if err != nil {
			t.Fatalf("redeliver a %s delivery: %v", status, err)
		}
		if d.Status != bgcheck.DeliveryPending || d.EventID != ev.ID || d.AttemptCount != 6 {
			t.Fatalf("after redeliver: %+v", d)
		}
	}
	var series int
	var dispatched *time.Time
	if err := db.Pool().QueryRow(ctx, `SELECT series, dispatched_at FROM deliveries WHERE id = $1`, id).Scan(&series, &dispatched); err != nil {
		t.Fatal(err)
	}
	if series != 4 || dispatched != nil {
		t.Fatalf("series %d, dispatched_at %v: want series 4 and back in the outbox", series, dispatched)
	}
	if _, err := db.Redeliver(ctx, bgcheck.Tenant{AccountID: tn.AccountID, Mode: bgcheck.ModeLive}, id); err != bgcheck.ErrNotFound {
		t.Fatalf("redeliver from the other mode: %v", err)
	}
}

// Two dispatchers (two API instances) claim disjoint batches; a delivery whose lease was
// released (its start failed because Temporal was down) is claimed again in a later round.
func TestClaimDispatchesClaimsEachDeliveryOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, _ := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"}, []string{"*"})
	for range 50 {
		if _, err := db.CreateEvent(ctx, tn, "check.created", map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	refusedOnce := map[string]bool{}
	round := func() (int, error) {
		batch, err := db.ClaimDispatches(ctx, 7, time.Minute)
		if err != nil || len(batch) == 0 {
			return 0, err
		}
		time.Sleep(20 * time.Millisecond) // hold the lease while the other instance claims
		var ok, refused []string
		mu.Lock()
		for _, d := range batch {
			seen[d.DeliveryID]++
			if d.Series != 1 || d.AttemptCount != 0 || d.EventType != "check.created" || d.AccountID != tn.AccountID {
				t.Errorf("dispatch item %+v", d)
			}
			if len(refusedOnce) < 5 && !refusedOnce[d.DeliveryID] { // Temporal "down" for five
				refusedOnce[d.DeliveryID] = true
				refused = append(refused, d.DeliveryID)
				continue
			}
			ok = append(ok, d.DeliveryID)
		}
		mu.Unlock()
		if err := db.MarkDispatched(ctx, ok); err != nil {
			return 0, err
		}
		return len(batch), db.ReleaseDispatches(ctx, refused)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := round()
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if n, _ := db.CountUndispatched(ctx); n != 0 {
		t.Fatalf("%d deliveries left undispatched", n)
	}
	var counts []int
	for id, n := range seen {
		want := 1
		if refusedOnce[id] {
			want = 2
		}
		if n != want {
			counts = append(counts, n)
		}
	}
	sort.Ints(counts)
	if len(seen) != 100 || len(counts) != 0 {
		t.Fatalf("%d deliveries seen; claimed the wrong number of times: %v", len(seen), counts)
	}
}

// A lease left by a dispatcher that died comes back when it expires; a delivery deferred after a
// failed start is not claimed again until its backoff has passed, and says why it waits.
func TestDispatchLeaseExpiresAndDeferredRowsBackOff(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, _ := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"})
	for range 2 {
		if _, err := db.CreateEvent(ctx, tn, "check.created", map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := db.ClaimDispatches(ctx, 10, 300*time.Millisecond) // then "crash"
	if err != nil || len(batch) != 2 {
		t.Fatalf("claimed %d, %v", len(batch), err)
	}
	if again, _ := db.ClaimDispatches(ctx, 10, time.Minute); len(again) != 0 {
		t.Fatalf("claimed %d leased rows", len(again))
	}
	time.Sleep(400 * time.Millisecond)
	batch, err = db.ClaimDispatches(ctx, 10, time.Minute)
	if err != nil || len(batch) != 2 {
		t.Fatalf("after the lease expired: claimed %d, %v", len(batch), err)
	}
	bad := batch[0].DeliveryID
	if err := db.DeferDispatch(ctx, bad, "workflow type unknown"); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkDispatched(ctx, []string{batch[1].DeliveryID}); err != nil {
		t.Fatal(err)
	}
	if again, _ := db.ClaimDispatches(ctx, 10, time.Minute); len(again) != 0 {
		t.Fatalf("a deferred row was claimed at once")
	}
	var failures int
	var reason string
	var wait time.Duration
	if err := db.Pool().QueryRow(ctx, `SELECT dispatch_failures, dispatch_error, dispatch_after - now() FROM deliveries WHERE id = $1`, bad).
		Scan(&failures, &reason, &wait); err != nil {
		t.Fatal(err)
	}
	if failures != 1 || reason != "workflow type unknown" || wait <= 0 || wait > 2*time.Second {
		t.Fatalf("failures %d reason %q backoff %s", failures, reason, wait)
	}
	time.Sleep(wait + 100*time.Millisecond)
	again, err := db.ClaimDispatches(ctx, 10, time.Minute)
	if err != nil || len(again) != 1 || again[0].DeliveryID != bad || again[0].Failures != 1 {
		t.Fatalf("after the backoff: %+v, %v", again, err)
	}
}

// Recording the same attempt twice (an activity run again after a crash) keeps one record, and a
// delivery canceled meanwhile stays canceled.
func TestRecordAttemptIsIdempotent(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, _ := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"})
	ev, _ := db.CreateEvent(ctx, tn, "check.created", map[string]any{})
	var id string
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM deliveries WHERE event_id = $1`, ev.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	next := time.Now().Add(time.Minute)
	for _, code := range []int{500, 502} {
		if err := db.RecordAttempt(ctx, postgres.AttemptRecord{DeliveryID: id, Number: 1, StartedAt: time.Now(), Duration: 12 * time.Millisecond,
			StatusCode: code, Error: "boom", Status: bgcheck.DeliveryPending, NextAttemptAt: &next}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := db.FindDelivery(ctx, tn, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Attempts) != 1 || *d.Attempts[0].StatusCode != 502 || d.AttemptCount != 1 || *d.LastStatusCode != 502 || d.NextAttemptAt == nil {
		t.Fatalf("delivery %+v attempts %+v", d, d.Attempts)
	}
	if err := db.CancelDelivery(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordAttempt(ctx, postgres.AttemptRecord{DeliveryID: id, Number: 2, StartedAt: time.Now(),
		StatusCode: 200, Status: bgcheck.DeliverySucceeded}); err != nil {
		t.Fatal(err)
	}
	if d, _ := db.FindDelivery(ctx, tn, id); d.Status != bgcheck.DeliveryCanceled || d.AttemptCount != 2 {
		t.Fatalf("a canceled delivery became %s", d.Status)
	}
}
