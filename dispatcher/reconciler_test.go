package dispatcher_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/dispatcher"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/workflows"
)

// dispatchAll starts the workflows of every undispatched delivery (no worker runs them: they
// stay running, as a delivery sleeping through its schedule does).
func dispatchAll(t *testing.T, d *dispatcher.Dispatcher) {
	t.Helper()
	if _, started, err := d.DispatchOnce(context.Background()); err != nil || started == 0 {
		t.Fatalf("dispatch: started %d, %v", started, err)
	}
}

// A delivery whose workflow was terminated outside bgcheck (the Temporal UI) fails with the
// reason recorded as the attempt that could not run; one whose workflow Temporal never had (lost)
// goes back to the outbox; one whose workflow runs is left alone until its next check. While
// another instance reconciles, this one does nothing.
func TestReconcilerSettlesDeliveriesWhoseWorkflowEndedOrIsMissing(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	ids := deliveries(t, db, 3)
	terminated, lost, running := ids[0], ids[1], ids[2]
	temporal := newTemporal(t)
	dispatchAll(t, dispatcher.New(db, temporal, dispatcher.Options{}, slog.New(slog.DiscardHandler)))
	if err := temporal.TerminateWorkflow(ctx, workflows.WorkflowID(terminated, 1), "", "an operator in the Temporal UI"); err != nil {
		t.Fatal(err)
	}
	// A workflow lost with Temporal's database: the delivery names a series Temporal never ran.
	if _, err := db.Pool().Exec(ctx, `UPDATE deliveries SET series = 7 WHERE id = $1`, lost); err != nil {
		t.Fatal(err)
	}

	r := dispatcher.NewReconciler(db, temporal, slog.New(slog.DiscardHandler))
	r.RecheckAfter = 0
	// Another instance holds the lock: nothing happens here.
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.ReconcilerLockKey); err != nil {
		t.Fatal(err)
	}
	if res, err := r.ReconcileOnce(ctx); err != nil || !res.Skipped || res.Checked != 0 {
		t.Fatalf("with the lock held elsewhere: %+v, %v", res, err)
	}
	_, _ = conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, postgres.ReconcilerLockKey)
	conn.Release()

	res, err := r.ReconcileOnce(ctx)
	if err != nil || res.Checked != 3 || res.Failed != 1 || res.Redispatched != 1 {
		t.Fatalf("reconcile: %+v, %v", res, err)
	}
	acct := accountOf(t, db, terminated)
	d, err := db.FindAccountDelivery(ctx, acct, terminated)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != bgcheck.DeliveryFailed || d.LastError == nil || !strings.Contains(*d.LastError, "terminated") {
		t.Fatalf("terminated delivery: %s %v", d.Status, d.LastError)
	}
	d, _ = db.FindDelivery(ctx, bgcheck.Tenant{AccountID: acct, Mode: bgcheck.ModeTest}, terminated)
	if len(d.Attempts) != 1 || d.Attempts[0].Error == nil || !strings.Contains(*d.Attempts[0].Error, "terminated") || d.Attempts[0].StatusCode != nil {
		t.Fatalf("the attempt that could not run: %+v", d.Attempts)
	}
	if done, _, _ := dispatched(t, db, lost); done {
		t.Fatal("the lost delivery was not put back in the outbox")
	}
	if done, _, _ := dispatched(t, db, running); !done {
		t.Fatal("the running delivery was touched")
	}
	// The running one was checked just now; it is not looked at again until RecheckAfter.
	r.RecheckAfter = time.Hour
	if res, err := r.ReconcileOnce(ctx); err != nil || res.Checked != 0 {
		t.Fatalf("second round: %+v, %v", res, err)
	}
}

// Deleting an endpoint records its running workflows to be canceled; the dispatcher cancels them,
// and when Temporal refuses, keeps the record and cancels on a later round.
func TestWorkflowCancelsAreRetriedUntilTemporalConfirms(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	ids := deliveries(t, db, 2)
	temporal := newTemporal(t)
	d := dispatcher.New(db, temporal, dispatcher.Options{PollInterval: 20 * time.Millisecond}, slog.New(slog.DiscardHandler))
	dispatchAll(t, d)
	acct := accountOf(t, db, ids[0])
	var endpointID string
	if err := db.Pool().QueryRow(ctx, `SELECT endpoint_id FROM deliveries WHERE id = $1`, ids[0]).Scan(&endpointID); err != nil {
		t.Fatal(err)
	}
	temporal.mu.Lock()
	temporal.refuseCancels = true
	temporal.mu.Unlock()
	if _, err := db.DeleteEndpoint(ctx, bgcheck.Tenant{AccountID: acct, Mode: bgcheck.ModeTest}, endpointID); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(runCtx) }()
	defer func() { stop(); <-done }()

	waitFor(t, 10*time.Second, "a refused cancel to be tried", func() bool {
		temporal.mu.Lock()
		defer temporal.mu.Unlock()
		return temporal.cancels[workflows.WorkflowID(ids[0], 1)] >= 1
	})
	if pending, _ := db.WorkflowCancels(ctx, 10); len(pending) != 2 {
		t.Fatalf("%d cancels still recorded after Temporal refused, want 2", len(pending))
	}
	temporal.mu.Lock()
	temporal.refuseCancels = false
	temporal.mu.Unlock()
	waitFor(t, 40*time.Second, "the cancels to be confirmed", func() bool {
		pending, err := db.WorkflowCancels(ctx, 10)
		return err == nil && len(pending) == 0
	})
	for _, id := range ids {
		if !cancelRequested(t, temporal, workflows.WorkflowID(id, 1)) {
			t.Errorf("workflow of %s was never asked to cancel", id)
		}
	}
}

func cancelRequested(t *testing.T, temporal *faultyTemporal, workflowID string) bool {
	t.Helper()
	it := temporal.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED {
			return true
		}
	}
	return false
}

func accountOf(t *testing.T, db *postgres.DB, deliveryID string) string {
	t.Helper()
	var acct string
	if err := db.Pool().QueryRow(context.Background(), `SELECT account_id FROM deliveries WHERE id = $1`, deliveryID).Scan(&acct); err != nil {
		t.Fatal(err)
	}
	return acct
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
