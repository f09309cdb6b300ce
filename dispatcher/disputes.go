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

// dispatchDisputes starts the workflows of new disputes and tells those of resolved ones, as for
// adverse actions: the database first, Temporal after, retried until it answers.
func (d *Dispatcher) dispatchDisputes(ctx context.Context) error {
	return errors.Join(d.startDisputes(ctx), d.signalResolvedDisputes(ctx))
}

func (d *Dispatcher) startDisputes(ctx context.Context) error {
	batch, err := d.db.ClaimDisputeStarts(ctx, checkBatch, Lease)
	if err != nil {
		return err
	}
	started, failed, startErr := startEach(ctx, d, batch, func(s postgres.DisputeStart) string { return s.ID },
		func(ctx context.Context, s postgres.DisputeStart) (client.WorkflowRun, error) {
			return d.temporal.ExecuteWorkflow(ctx, DisputeStartOptions(s), workflows.DisputeWorkflow,
				workflows.DisputeInput{ID: s.ID, DueAt: s.DueAt})
		})
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.db.MarkDisputesStarted(recordCtx, started, failed); err != nil {
		return err
	}
	return startErr
}

func (d *Dispatcher) signalResolvedDisputes(ctx context.Context) error {
	ids, err := d.db.DisputeSignals(ctx, checkBatch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := d.tell(ctx, func(ctx context.Context) error {
			return d.temporal.SignalWorkflow(ctx, workflows.DisputeWorkflowID(id), "", workflows.SignalDisputeResolved, nil)
		}); err != nil {
			return err
		}
		if err := d.db.DisputeSignaled(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// DisputeStartOptions are the options of a dispute's workflow.
func DisputeStartOptions(s postgres.DisputeStart) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                    workflows.DisputeWorkflowID(s.ID),
		TaskQueue:             workflows.CheckTaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.CheckIDKey.ValueSet(s.CheckID),
			workflows.CandidateIDKey.ValueSet(s.CandidateID),
			workflows.AccountIDKey.ValueSet(s.AccountID),
			workflows.DisputeStatusKey.ValueSet(string(bgcheck.DisputeOpen)),
		),
	}
}
