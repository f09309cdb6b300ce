package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/bgcheck/bgcheck/activities"
)

// EndpointHealthWorkflowID is the id of the workflow that watches an endpoint while it fails.
func EndpointHealthWorkflowID(endpointID string) string { return "endpoint-health-" + endpointID }

// SignalEndpointFailing tells a running health workflow that its endpoint (again) failed: it
// reads the endpoint afresh before it ends.
const SignalEndpointFailing = "endpoint-failing"

// EndpointHealthInput starts an endpoint's health workflow.
type EndpointHealthInput struct {
	EndpointID string
	Window     time.Duration // how long every attempt must have failed before the endpoint is disabled
}

// EndpointHealthWorkflow watches an endpoint that started failing: it sleeps until its failing
// streak is Window long, and, if no attempt has succeeded since, disables the endpoint, records
// it and mails the admins. A success ends the streak; the workflow ends when the endpoint is
// healthy (a new failure starts it again, through the dispatcher) or disabled.
func EndpointHealthWorkflow(ctx workflow.Context, in EndpointHealthInput) error {
	var acts *activities.EndpointHealth
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute},
	})
	failing := workflow.GetSignalChannel(ctx, SignalEndpointFailing)
	for {
		var w activities.EndpointWatch
		if err := workflow.ExecuteActivity(ctx, acts.ReadEndpointHealth, in.EndpointID).Get(ctx, &w); err != nil {
			return err
		}
		if w.FailingSince == nil || !w.Watched {
			// Healthy, disabled or gone. A failure signaled meanwhile is read before ending: the
			// server refuses to complete a workflow with a signal it has not seen.
			if failing.ReceiveAsync(nil) {
				continue
			}
			return nil
		}
		if deadline := w.FailingSince.Add(in.Window); workflow.Now(ctx).Before(deadline) {
			if err := workflow.Sleep(ctx, deadline.Sub(workflow.Now(ctx))); err != nil {
				return err
			}
			drain(failing) // the endpoint is read next: signals received meanwhile say nothing more
			continue
		}
		// Disabled if the streak held; if it broke and a new one began, the next read finds it.
		var disabled bool
		if err := workflow.ExecuteActivity(ctx, acts.DisableFailingEndpoint, activities.DisableInput{
			EndpointID: in.EndpointID, FailingSince: *w.FailingSince, Window: in.Window,
		}).Get(ctx, &disabled); err != nil {
			return err
		}
		if !disabled {
			// Not disabled though the streak looked long enough here: the database's clock may
			// be behind the worker's. Do not spin: read again in a minute.
			if err := workflow.Sleep(ctx, time.Minute); err != nil {
				return err
			}
		}
	}
}

// drain empties a signal channel without blocking.
func drain(c workflow.ReceiveChannel) {
	for c.ReceiveAsync(nil) {
	}
}
