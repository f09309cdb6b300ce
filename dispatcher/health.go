package dispatcher

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/bgcheck/bgcheck/workflows"
)

// dispatchHealthChecks has an EndpointHealthWorkflow watch each endpoint that started failing:
// started if none runs, signaled if one does (so it reads the endpoint again before it ends).
func (d *Dispatcher) dispatchHealthChecks(ctx context.Context) error {
	checks, err := d.db.HealthChecks(ctx, checkBatch)
	if err != nil {
		return err
	}
	for _, h := range checks {
		id := h.EndpointID
		if d.opts.EndpointDisableAfter > 0 {
			sctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
			_, err := d.temporal.SignalWithStartWorkflow(sctx, workflows.EndpointHealthWorkflowID(id), workflows.SignalEndpointFailing, nil,
				client.StartWorkflowOptions{ID: workflows.EndpointHealthWorkflowID(id), TaskQueue: workflows.CheckTaskQueue},
				workflows.EndpointHealthWorkflow, workflows.EndpointHealthInput{EndpointID: id, Window: d.opts.EndpointDisableAfter})
			cancel()
			if err != nil {
				return err
			}
		}
		if err := d.db.HealthCheckStarted(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// signalResumes tells the workflows of deliveries held by a paused endpoint that it was resumed.
// A workflow that has ended needs telling nothing; one not told waits pausedRecheck at most.
func (d *Dispatcher) signalResumes(ctx context.Context) error {
	held, err := d.db.ResumeSignals(ctx, checkBatch)
	if err != nil {
		return err
	}
	for _, h := range held {
		if err := d.tell(ctx, func(ctx context.Context) error {
			return d.temporal.SignalWorkflow(ctx, workflows.WorkflowID(h.DeliveryID, h.Series), "", workflows.SignalEndpointResumed, nil)
		}); err != nil {
			return err
		}
		if err := d.db.ResumeSignaled(ctx, h.DeliveryID); err != nil {
			return err
		}
	}
	return nil
}

// startRecoveries starts the workflows of new recoveries.
func (d *Dispatcher) startRecoveries(ctx context.Context) error {
	batch, err := d.db.ClaimRecoveryStarts(ctx, checkBatch, Lease)
	if err != nil {
		return err
	}
	for _, r := range batch {
		sctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
		_, err := d.temporal.ExecuteWorkflow(sctx, client.StartWorkflowOptions{
			ID: workflows.RecoveryWorkflowID(r.ID), TaskQueue: workflows.CheckTaskQueue,
			TypedSearchAttributes: temporal.NewSearchAttributes(workflows.EndpointIDKey.ValueSet(r.EndpointID), workflows.AccountIDKey.ValueSet(r.AccountID)),
		}, workflows.RecoveryWorkflow, workflows.RecoveryInput{RecoveryID: r.ID})
		cancel()
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		started := err == nil || errors.As(err, &already)
		if err := d.db.MarkRecoveryStarted(context.WithoutCancel(ctx), r.ID, started); err != nil {
			return err
		}
		if !started {
			return err
		}
	}
	return nil
}
