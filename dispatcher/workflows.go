package dispatcher

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck/workflows"
)

// cancelBatch is how many pending workflow cancels one round sends.
const cancelBatch = 100

// cancelWorkflows asks Temporal to cancel the workflows of deliveries the database has canceled
// (their endpoint was deleted), and records each one Temporal confirms, or never had. A cancel
// that fails stays recorded as pending and is tried again next round, so an endpoint delete
// during a Temporal outage still stops its workflows once Temporal is back.
func (d *Dispatcher) cancelWorkflows(ctx context.Context) error {
	pending, err := d.db.WorkflowCancels(ctx, cancelBatch)
	if err != nil || len(pending) == 0 {
		return err
	}
	var done []string
	var failed error
	for _, p := range pending {
		cctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
		err := d.temporal.CancelWorkflow(cctx, workflows.WorkflowID(p.ID, p.Series), "")
		cancel()
		var notFound *serviceerror.NotFound
		if err == nil || errors.As(err, &notFound) {
			done = append(done, p.ID)
			continue
		}
		failed = err
	}
	if err := d.db.WorkflowsCanceled(ctx, done); err != nil {
		return err
	}
	switch {
	case failed != nil && len(done) == 0:
		return errTemporalRefusedAll{failed} // Temporal is down: starts would fail too
	case failed != nil:
		d.log.Warn("could not cancel some delivery workflows; retried next round", "canceled", len(done), "err", failed)
	}
	return nil
}

// WorkflowRunning reports whether the workflow of a delivery's series is running. A workflow that
// closed (completed, failed, canceled or terminated, perhaps in the Temporal UI) or that Temporal
// does not know is not.
func WorkflowRunning(ctx context.Context, c client.Client, deliveryID string, series int) (bool, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, workflows.WorkflowID(deliveryID, series), "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// WorkflowRunning is the package function on the dispatcher's client: the API asks it before
// redelivering a delivery that is still pending.
func (d *Dispatcher) WorkflowRunning(ctx context.Context, deliveryID string, series int) (bool, error) {
	return WorkflowRunning(ctx, d.temporal, deliveryID, series)
}
