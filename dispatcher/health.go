package dispatcher

import (
	"context"

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
