package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/workflows"
)

// Reconciler finds deliveries the database says are in flight whose workflow is not: canceled
// or terminated outside bgcheck (the Temporal UI, tctl), or lost with a Temporal database. A
// delivery whose workflow Temporal does not know goes back to the dispatcher to be started
// again; one whose workflow closed without recording an outcome fails, with the reason
// recorded as the attempt that could not run, and can be redelivered. Every API instance runs
// one; an advisory lock lets one at a time work.
type Reconciler struct {
	db       *postgres.DB
	temporal client.Client
	log      *slog.Logger
	// RecheckAfter is how long a delivery found running is left alone before it is looked at
	// again (default 5 min); Batch is how many one round checks (default 200).
	RecheckAfter time.Duration
	Batch        int
}

// NewReconciler returns a reconciler; call Run.
func NewReconciler(db *postgres.DB, c client.Client, log *slog.Logger) *Reconciler {
	return &Reconciler{db: db, temporal: c, log: log, RecheckAfter: 5 * time.Minute, Batch: 200}
}

// Reconciliation counts what one round did.
type Reconciliation struct {
	Skipped      bool // another instance was reconciling
	Checked      int
	Redispatched int
	Failed       int
}

// Run reconciles every interval until ctx ends.
func (r *Reconciler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := r.ReconcileOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("reconcile deliveries with Temporal", "err", err)
		case res.Redispatched > 0 || res.Failed > 0:
			r.log.Warn("reconciled deliveries whose workflow had ended or gone",
				"checked", res.Checked, "redispatched", res.Redispatched, "failed", res.Failed)
		}
	}
}

// ReconcileOnce checks one batch of in-flight deliveries, least recently checked first.
func (r *Reconciler) ReconcileOnce(ctx context.Context) (Reconciliation, error) {
	var res Reconciliation
	ran, err := r.db.WithExclusiveRun(ctx, postgres.ReconcilerLockKey, func(ctx context.Context) error {
		batch, err := r.db.DeliveriesToReconcile(ctx, r.RecheckAfter, r.Batch)
		if err != nil {
			return err
		}
		var running []string
		for _, d := range batch {
			res.Checked++
			outcome, err := r.reconcile(ctx, d)
			if err != nil {
				return err
			}
			switch outcome {
			case "running":
				running = append(running, d.ID)
			case "redispatched":
				res.Redispatched++
			case "failed":
				res.Failed++
			}
		}
		return r.db.MarkReconciled(ctx, running)
	})
	res.Skipped = !ran && err == nil
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, d postgres.InFlightDelivery) (string, error) {
	id := workflows.WorkflowID(d.ID, d.Series)
	desc, err := r.temporal.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		r.log.Warn("delivery workflow missing; dispatching it again", "delivery_id", d.ID, "workflow_id", id)
		return "redispatched", r.db.RedispatchDelivery(ctx, d.ID, d.Series)
	case err != nil:
		return "", err
	}
	status := desc.GetWorkflowExecutionInfo().GetStatus()
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return "running", nil
	}
	reason := fmt.Sprintf("the delivery's workflow %s ended (%s) without recording this attempt; redeliver to try again",
		id, strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_")))
	failed, err := r.db.FailStuckDelivery(ctx, d.ID, d.Series, reason)
	if err != nil || !failed {
		return "", err
	}
	r.log.Warn("delivery workflow ended without an outcome; delivery failed", "delivery_id", d.ID, "workflow_id", id, "status", status.String())
	return "failed", nil
}
