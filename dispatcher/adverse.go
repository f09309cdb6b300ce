package dispatcher

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/workflows"
)

// dispatchAdverseActions starts the workflows of new adverse actions, tells started ones of
// disputes' holds, and cancels those of withdrawn ones, as for checks: the database first,
// Temporal after, retried until it answers. Each step runs whatever the others met.
func (d *Dispatcher) dispatchAdverseActions(ctx context.Context) error {
	return errors.Join(d.startAdverseActions(ctx), d.signalAdverseHolds(ctx), d.cancelAdverseActions(ctx))
}

func (d *Dispatcher) startAdverseActions(ctx context.Context) error {
	batch, err := d.db.ClaimAdverseStarts(ctx, checkBatch, Lease)
	if err != nil {
		return err
	}
	started, failed, startErr := startEach(ctx, d, batch, func(a postgres.AdverseStart) string { return a.ID },
		func(ctx context.Context, a postgres.AdverseStart) (client.WorkflowRun, error) {
			return d.temporal.ExecuteWorkflow(ctx, AdverseActionStartOptions(a), workflows.AdverseActionWorkflow,
				workflows.AdverseActionInput{ID: a.ID, FinalizeAt: a.FinalizeAt, OnHold: a.OnHold, HoldVersion: a.HoldVersion})
		})
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.db.MarkAdverseStarted(recordCtx, started, failed); err != nil {
		return err
	}
	return startErr
}

func (d *Dispatcher) cancelAdverseActions(ctx context.Context) error {
	ids, err := d.db.AdverseCancels(ctx, checkBatch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := d.tell(ctx, func(ctx context.Context) error {
			return d.temporal.CancelWorkflow(ctx, workflows.AdverseActionWorkflowID(id), "")
		}); err != nil {
			return err
		}
		if err := d.db.AdverseCanceled(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// signalAdverseHolds tells started adverse-action workflows that a dispute holds or released
// them. A workflow that has ended needs telling nothing.
func (d *Dispatcher) signalAdverseHolds(ctx context.Context) error {
	holds, err := d.db.AdverseHoldSignals(ctx, checkBatch)
	if err != nil {
		return err
	}
	for _, h := range holds {
		if err := d.tell(ctx, func(ctx context.Context) error {
			return d.temporal.SignalWorkflow(ctx, workflows.AdverseActionWorkflowID(h.ID), "", workflows.SignalDisputeHold,
				workflows.DisputeHold{OnHold: h.OnHold, FinalizeAt: h.FinalizeAt, Version: h.Version})
		}); err != nil {
			return err
		}
		if err := d.db.AdverseHoldSignaled(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// AdverseActionStartOptions are the options of an adverse action's workflow.
func AdverseActionStartOptions(a postgres.AdverseStart) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                    workflows.AdverseActionWorkflowID(a.ID),
		TaskQueue:             workflows.CheckTaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.CheckIDKey.ValueSet(a.CheckID),
			workflows.CandidateIDKey.ValueSet(a.CandidateID),
			workflows.AccountIDKey.ValueSet(a.AccountID),
			workflows.AdverseActionStatusKey.ValueSet(string(bgcheck.AdverseActionPending)),
		),
	}
}
