package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
)

// AdverseActionWorkflowID is the id of an adverse action's workflow.
func AdverseActionWorkflowID(id string) string { return "adverse-" + id }

// Search attributes of an adverse action's workflow (with CheckIDKey, CandidateIDKey and
// AccountIDKey).
var AdverseActionStatusKey = temporal.NewSearchAttributeKeyKeyword("AdverseActionStatus")

// AdverseActionInput starts an adverse action's workflow.
type AdverseActionInput struct {
	ID         string
	FinalizeAt time.Time // the end of the waiting period, in business days
}

// AdverseActionWorkflow carries out an adverse action as the FCRA requires: the pre-adverse
// notice at once, a durable wait until the waiting period's end (business days, computed when the
// action was created), then the final notice and adverse_action.finalized. Cancelling the
// workflow (the action was withdrawn) ends it without a final notice.
func AdverseActionWorkflow(ctx workflow.Context, in AdverseActionInput) (bgcheck.AdverseActionStatus, error) {
	var acts *activities.AdverseActions
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute},
	})
	if err := workflow.ExecuteActivity(ctx, acts.SendPreAdverseNotice, in.ID).Get(ctx, nil); err != nil {
		return adverseEnd(ctx, err)
	}
	if err := workflow.Sleep(ctx, max(in.FinalizeAt.Sub(workflow.Now(ctx)), 0)); err != nil {
		return adverseEnd(ctx, err)
	}
	if err := workflow.ExecuteActivity(ctx, acts.FinalizeAdverseAction, in.ID).Get(ctx, nil); err != nil {
		return adverseEnd(ctx, err)
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, AdverseActionStatusKey.ValueSet(string(bgcheck.AdverseActionFinalized)))
	return bgcheck.AdverseActionFinalized, nil
}

func adverseEnd(ctx workflow.Context, err error) (bgcheck.AdverseActionStatus, error) {
	if temporal.IsCanceledError(err) || ctx.Err() != nil {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		_ = workflow.UpsertTypedSearchAttributes(dctx, AdverseActionStatusKey.ValueSet(string(bgcheck.AdverseActionCanceled)))
		return bgcheck.AdverseActionCanceled, nil
	}
	return "", err
}
