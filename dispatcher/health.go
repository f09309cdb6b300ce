package dispatcher

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck/workflows"
)

// dispatchHealthChecks has an EndpointHealthWorkflow watch each endpoint that started failing:
// started if none runs, signaled if one does (so it reads the endpoint again before it ends).
func (d *Dispatcher) dispatchHealthChecks(ctx context.Context) error {
	ids, err := d.db.HealthChecks(ctx, checkBatch)
	if err != nil {
		return err
	}
	for _, id := range ids {
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
		if err := d.db.HealthCheckStarted(ctx, id); err != nil {
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
		sctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
		err := d.temporal.SignalWorkflow(sctx, workflows.WorkflowID(h.DeliveryID, h.Series), "", workflows.SignalEndpointResumed, nil)
		cancel()
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			return err
		}
		if err := d.db.ResumeSignaled(ctx, h.DeliveryID); err != nil {
			return err
		}
	}
	return nil
}
