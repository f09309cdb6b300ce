package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/workflows"
)

// flakyRecoveries fails a page's first redelivery after it committed, as a worker dying before
// it reports would: the retry must redeliver nothing twice.
type flakyRecoveries struct {
	*activities.Recoveries
	mu      sync.Mutex
	retried map[string]bool
}

func (f *flakyRecoveries) RedeliverPage(ctx context.Context, in activities.RedeliverInput) error {
	if err := f.Recoveries.RedeliverPage(ctx, in); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.retried[in.DeliveryIDs[0]] {
		f.retried[in.DeliveryIDs[0]] = true
		return errors.New("the worker died before reporting")
	}
	return nil
}

// A recovery of 1,000 failed deliveries (and none of the succeeded ones, nor those before since)
// redelivers each exactly once, though every page's redelivery is retried after it committed;
// asking for the same recovery again makes no second one.
func TestRecoveryRedeliversEachFailedDeliveryExactlyOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: "admin@acme.test", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := bgcheck.Tenant{AccountID: acct.ID, Mode: bgcheck.ModeTest}
	ep, err := db.CreateEndpoint(ctx, tn, bgcheck.WebhookEndpoint{URL: "https://example.com/hooks", Events: []string{"*"}, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Hour)
	// 1,000 failed deliveries since, 50 succeeded since, 30 failed before since.
	if _, err := db.Pool().Exec(ctx, `
		WITH ev AS (
			INSERT INTO events (id, account_id, mode, type, body, created_at)
			SELECT 'evt_' || lpad(to_hex(n), 32, '0'), $1, 'test', 'check.completed', '{}', now() - CASE WHEN n > 1050 THEN interval '2 hours' ELSE interval '1 minute' END
			FROM generate_series(1, 1080) n RETURNING id, created_at
		)
		INSERT INTO deliveries (id, event_id, endpoint_id, account_id, mode, event_type, status, attempt_count, dispatched_at, created_at)
		SELECT 'dlv_' || substr(ev.id, 5), ev.id, $2, $1, 'test', 'check.completed',
			CASE WHEN substr(ev.id, 5)::text > lpad(to_hex(1000), 32, '0') AND ev.created_at > now() - interval '1 hour' THEN 'succeeded' ELSE 'failed' END,
			6, now(), ev.created_at FROM ev`, acct.ID, ep.ID); err != nil {
		t.Fatal(err)
	}
	rec, created, err := db.StartRecovery(ctx, tn, ep.ID, since)
	if err != nil || !created || rec.Total != 1000 {
		t.Fatalf("recovery %+v, created %v, %v", rec, created, err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.RecoveryWorkflow)
	env.RegisterActivity(&flakyRecoveries{Recoveries: &activities.Recoveries{DB: db}, retried: map[string]bool{}})
	env.ExecuteWorkflow(workflows.RecoveryWorkflow, workflows.RecoveryInput{RecoveryID: rec.ID})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var redelivered, twice, untouched int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE series = 2 AND status = 'pending'), count(*) FILTER (WHERE series > 2),
		count(*) FILTER (WHERE series = 1) FROM deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&redelivered, &twice, &untouched); err != nil {
		t.Fatal(err)
	}
	if redelivered != 1000 || twice != 0 || untouched != 80 {
		t.Fatalf("redelivered once %d, more %d, untouched %d; want 1000, 0, 80", redelivered, twice, untouched)
	}
	again, created, err := db.StartRecovery(ctx, tn, ep.ID, since)
	if err != nil || created || again.ID != rec.ID || again.Status != "completed" || again.Redelivered != 1000 {
		t.Fatalf("the same recovery again: %+v, created %v, %v", again, created, err)
	}
}
