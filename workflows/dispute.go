package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
)

// DisputeWorkflowID is the id of a dispute's workflow.
func DisputeWorkflowID(id string) string { return "dispute-" + id }

// DisputeStatusKey is the search attribute of a dispute's workflow that says whether it is open
// (with CheckIDKey, CandidateIDKey and AccountIDKey).
var DisputeStatusKey = temporal.NewSearchAttributeKeyKeyword("DisputeStatus")

// SignalDisputeResolved tells a dispute's workflow that the dispute was resolved (by the API, an
// admin or the operator): its deadline no longer runs.
const SignalDisputeResolved = "dispute-resolved"

// DisputeInput starts a dispute's workflow.
type DisputeInput struct {
	ID    string
	DueAt time.Time // filed + 30 days
}

// DisputeWorkflow keeps a dispute's FCRA deadline: five days before it the account's admins are
// warned; at it, a dispute still open is resolved as deleted. Resolution by anyone else
// (SignalDisputeResolved) ends the workflow. The activities read the dispute's status, so a signal
// that never arrives only keeps the workflow waiting to find the dispute already resolved.
func DisputeWorkflow(ctx workflow.Context, in DisputeInput) (bgcheck.DisputeStatus, error) {
	var acts *activities.Disputes
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute},
	})
	resolved := workflow.GetSignalChannel(ctx, SignalDisputeResolved)
	if waitUnlessResolved(ctx, in.DueAt.Add(-bgcheck.DisputeWarningBefore), resolved) {
		return disputeResolved(ctx)
	}
	var open bool
	if err := workflow.ExecuteActivity(ctx, acts.WarnDisputeDue, in.ID).Get(ctx, &open); err != nil {
		return "", err
	}
	if !open || waitUnlessResolved(ctx, in.DueAt, resolved) {
		return disputeResolved(ctx)
	}
	if err := workflow.ExecuteActivity(ctx, acts.ResolveOverdueDispute, in.ID).Get(ctx, nil); err != nil {
		return "", err
	}
	return disputeResolved(ctx)
}

// waitUnlessResolved sleeps until t and reports whether the dispute was resolved first.
func waitUnlessResolved(ctx workflow.Context, t time.Time, resolved workflow.ReceiveChannel) bool {
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	signaled := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, max(t.Sub(workflow.Now(ctx)), 0)), func(workflow.Future) {})
	sel.AddReceive(resolved, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); signaled = true })
	sel.Select(ctx)
	return signaled
}

func disputeResolved(ctx workflow.Context) (bgcheck.DisputeStatus, error) {
	_ = workflow.UpsertTypedSearchAttributes(ctx, DisputeStatusKey.ValueSet(string(bgcheck.DisputeResolved)))
	return bgcheck.DisputeResolved, nil
}
