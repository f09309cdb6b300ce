package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/bgcheck/bgcheck/activities"
)

// RecoveryWorkflowID is the id of a recovery's workflow.
func RecoveryWorkflowID(id string) string { return "recovery-" + id }

// Recovery pages: this many deliveries a page, this many pages redelivering at once, and this
// many pages before the workflow continues as new (its history stays small).
const (
	recoveryPageSize      = 100
	recoveryParallelPages = 4
	recoveryPagesPerRun   = 200
)

// RecoveryInput starts (or continues) a recovery's workflow.
type RecoveryInput struct {
	RecoveryID string
	After      string // the last delivery id of the pages already handed out
}

// RecoveryWorkflow redelivers every failed delivery of a recovery: it lists them a page at a time
// in id order and redelivers up to recoveryParallelPages pages at once; each delivery is
// redelivered exactly once (the database keeps which), however often a page is retried.
func RecoveryWorkflow(ctx workflow.Context, in RecoveryInput) error {
	var acts *activities.Recoveries
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	after := in.After
	var inFlight []workflow.Future
	for pages := 0; ; pages++ {
		if pages == recoveryPagesPerRun {
			for _, f := range inFlight {
				if err := f.Get(ctx, nil); err != nil {
					return err
				}
			}
			return workflow.NewContinueAsNewError(ctx, RecoveryWorkflow, RecoveryInput{RecoveryID: in.RecoveryID, After: after})
		}
		var ids []string
		if err := workflow.ExecuteActivity(ctx, acts.ListRecoveryPage, activities.RecoveryPageInput{
			RecoveryID: in.RecoveryID, After: after, Limit: recoveryPageSize}).Get(ctx, &ids); err != nil {
			return err
		}
		if len(ids) == 0 {
			break
		}
		after = ids[len(ids)-1]
		inFlight = append(inFlight, workflow.ExecuteActivity(ctx, acts.RedeliverPage, activities.RedeliverInput{RecoveryID: in.RecoveryID, DeliveryIDs: ids}))
		if len(inFlight) == recoveryParallelPages {
			if err := inFlight[0].Get(ctx, nil); err != nil {
				return err
			}
			inFlight = inFlight[1:]
		}
	}
	for _, f := range inFlight {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return workflow.ExecuteActivity(ctx, acts.CompleteRecovery, in.RecoveryID).Get(ctx, nil)
}
