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

// exists reports whether a query of one row finds it.
func exists(t *testing.T, db *postgres.DB, sql string, args ...any) bool {
	t.Helper()
	var ok bool
	if err := db.Pool().QueryRow(context.Background(), `SELECT EXISTS (`+sql+`)`, args...).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// Old events go with their deliveries and attempts, in as many batches as it takes; an old event
// whose delivery is pending or was redelivered lately stays, and so does a recent one.
func TestPruneEvents(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	tn, _ := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"})
	type scene struct{ event, delivery string }
	add := func(status, age, updated string, attempts int) scene {
		t.Helper()
		ev, err := db.CreateEvent(ctx, tn, "report.ready", webhook.SampleData("report.ready"))
		if err != nil {
			t.Fatal(err)
		}
		d := deliveryOf(t, db, ev.ID)
		for n := 1; n <= attempts; n++ {
			if err := db.RecordAttempt(ctx, postgres.AttemptRecord{DeliveryID: d, Number: n, StartedAt: time.Now(),
				StatusCode: 500, Error: "the endpoint answered 500", Status: bgcheck.DeliveryStatus(status)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Pool().Exec(ctx, `UPDATE events SET created_at = now() - $2::interval WHERE id = $1;`, ev.ID, age); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool().Exec(ctx, `UPDATE deliveries SET status = $2, created_at = now() - $3::interval,
			updated_at = now() - $4::interval WHERE id = $1`, d, status, age, updated); err != nil {
			t.Fatal(err)
		}
		return scene{ev.ID, d}
	}
	var old []scene
	for range 5 {
		old = append(old, add("failed", "100 days", "99 days", 2))
	}
	pending := add("pending", "100 days", "100 days", 1)
	redelivered := add("succeeded", "100 days", "1 hour", 1)
	recent := add("succeeded", "10 days", "10 days", 1)

	res, err := db.Prune(ctx, postgres.RetentionPolicy{Events: 90 * 24 * time.Hour, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || res.Events != 5 || res.Deliveries != 5 || res.Attempts != 10 {
		t.Errorf("pruned %+v, want 5 events, 5 deliveries, 10 attempts", res)
	}
	for _, s := range old {
		if exists(t, db, `SELECT 1 FROM events WHERE id = $1`, s.event) || exists(t, db, `SELECT 1 FROM deliveries WHERE id = $1`, s.delivery) ||
			exists(t, db, `SELECT 1 FROM delivery_attempts WHERE delivery_id = $1`, s.delivery) {
			t.Errorf("old event %s or its delivery or attempts survived", s.event)
		}
	}
	for name, s := range map[string]scene{"pending": pending, "redelivered lately": redelivered, "recent": recent} {
		if !exists(t, db, `SELECT 1 FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1`, s.delivery) ||
			!exists(t, db, `SELECT 1 FROM delivery_attempts WHERE delivery_id = $1`, s.delivery) {
			t.Errorf("the %s event lost its records", name)
		}
	}

	// Events: 0 keeps events whatever their age.
	old = []scene{add("succeeded", "1000 days", "1000 days", 1)}
	if res, err := db.Prune(ctx, postgres.RetentionPolicy{}); err != nil || res.Events != 0 ||
		!exists(t, db, `SELECT 1 FROM events WHERE id = $1`, old[0].event) {
		t.Errorf("with event retention off: %+v, %v", res, err)
	}
}

// Sign-in records go a day after they stopped working, and not before.
func TestPruneAuth(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	_, admin, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: "a@example.com", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	session := func(id string, created time.Time, tokenExpires ...time.Time) {
		t.Helper()
		if err := db.StartSession(ctx, id, admin.ID, id+"-0", tokenExpires[0]); err != nil {
			t.Fatal(err)
		}
		for i, exp := range tokenExpires[1:] {
			if _, err := db.Pool().Exec(ctx, `INSERT INTO refresh_tokens (jti, session_id, expires_at, used_at) VALUES ($1, $2, $3, now())`,
				id+"-"+string(rune('1'+i)), id, exp); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Pool().Exec(ctx, `UPDATE sessions SET created_at = $2 WHERE id = $1`, id, created); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	session("revoked-long-ago", now.Add(-5*day), now.Add(20*day))
	session("revoked-lately", now.Add(-5*day), now.Add(20*day))
	session("ran-out", now.Add(-40*day), now.Add(-3*day), now.Add(-2*day))
	session("ran-out-lately", now.Add(-40*day), now.Add(-time.Hour))
	session("live", now.Add(-40*day), now.Add(-10*day), now.Add(10*day)) // an old used token, and a live one
	if _, err := db.Pool().Exec(ctx, `UPDATE sessions SET revoked_at = CASE id WHEN 'revoked-long-ago' THEN now() - interval '2 days'
		ELSE now() - interval '1 hour' END WHERE id IN ('revoked-long-ago', 'revoked-lately')`); err != nil {
		t.Fatal(err)
	}
	for i, exp := range []time.Time{now.Add(-2 * day), now.Add(-time.Hour), now.Add(time.Hour)} {
		if err := db.CreateMagicLink(ctx, admin.ID, []byte{byte(i)}, exp); err != nil {
			t.Fatal(err)
		}
	}

	// Idempotency keys: one past its 24 hours and the day's grace, one within them.
	for key, age := range map[string]time.Duration{"old": 50 * time.Hour, "recent": 30 * time.Hour} {
		if _, err := db.Pool().Exec(ctx, `INSERT INTO idempotency_keys (account_id, mode, key, fingerprint, created_at)
			VALUES ($1, 'test', $2, '\x00', $3)`, admin.AccountID, key, now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}

	res, err := db.Prune(ctx, postgres.RetentionPolicy{Events: postgres.DefaultEventRetention})
	if err != nil {
		t.Fatal(err)
	}
	want := postgres.PruneResult{Sessions: 2, RefreshTokens: 1, MagicLinks: 1, IdempotencyKeys: 1}
	if res != want {
		t.Errorf("pruned %+v, want %+v", res, want)
	}
	for id, kept := range map[string]bool{"revoked-long-ago": false, "ran-out": false, "revoked-lately": true, "ran-out-lately": true, "live": true} {
		if got := exists(t, db, `SELECT 1 FROM sessions WHERE id = $1`, id); got != kept {
			t.Errorf("session %s kept: %v, want %v", id, got, kept)
		}
	}
	if exists(t, db, `SELECT 1 FROM refresh_tokens WHERE jti LIKE 'ran-out-_' OR jti = 'live-0'`) ||
		!exists(t, db, `SELECT 1 FROM refresh_tokens WHERE jti = 'live-1'`) {
		t.Error("refresh tokens: want the expired ones gone and the live one kept")
	}
	if n := countRows(t, db, `SELECT count(*) FROM magic_links`); n != 2 {
		t.Errorf("%d magic links left, want the 2 that expired less than a day ago or not yet", n)
	}
}

// While another instance holds the retention lock, Prune deletes nothing and says it skipped.
func TestPruneSkipsWhileAnotherInstanceRuns(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	_, admin, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: "a@example.com", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateMagicLink(ctx, admin.ID, []byte("x"), time.Now().Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	other, err := postgres.Open(ctx, db.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.RetentionLockKey); err != nil {
		t.Fatal(err)
	}
	if res, err := db.Prune(ctx, postgres.RetentionPolicy{}); err != nil || !res.Skipped || res.MagicLinks != 0 ||
		countRows(t, db, `SELECT count(*) FROM magic_links`) != 1 {
		t.Fatalf("while locked elsewhere: %+v, %v", res, err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, postgres.RetentionLockKey); err != nil {
		t.Fatal(err)
	}
	holder.Release()
	if res, err := db.Prune(ctx, postgres.RetentionPolicy{}); err != nil || res.Skipped || res.MagicLinks != 1 {
		t.Fatalf("once free: %+v, %v", res, err)
	}
	// The run let go of the lock: another instance can take it.
	var free bool
	if err := other.Pool().QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, postgres.RetentionLockKey).Scan(&free); err != nil || !free {
		t.Fatalf("the lock after a run: free %v, %v", free, err)
	}
}

func countRows(t *testing.T, db *postgres.DB, sql string) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
