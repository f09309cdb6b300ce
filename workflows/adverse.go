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

// SignalDisputeHold tells an adverse action's workflow whether a dispute of its check holds it
// (true) or no longer does (false). The value is the state, not a toggle: a repeated signal
// changes nothing.
const SignalDisputeHold = "dispute-hold"

// AdverseActionInput starts an adverse action's workflow.
type AdverseActionInput struct {
	ID         string
	FinalizeAt time.Time // the end of the waiting period, in business days
	OnHold     bool      // a dispute of the check was open when the workflow started
}

// AdverseActionWorkflow carries out an adverse action as the FCRA requires: the pre-adverse
// notice at once, a durable wait until the waiting period's end (business days, computed when the
// action was created), then the final notice and adverse_action.finalized. Cancelling the
// workflow (the action was withdrawn) ends it without a final notice.
//
// While a dispute of the check is open (SignalDisputeHold) the wait is paused: when the dispute is
// resolved the candidate has the rest of the waiting period they had when it was filed, and the
// new end is recorded on the adverse action.
func AdverseActionWorkflow(ctx workflow.Context, in AdverseActionInput) (bgcheck.AdverseActionStatus, error) {
	var acts *activities.AdverseActions
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute},
	})
	holds := workflow.GetSignalChannel(ctx, SignalDisputeHold)
	if err := workflow.ExecuteActivity(ctx, acts.SendPreAdverseNotice, in.ID).Get(ctx, nil); err != nil {
		return adverseEnd(ctx, err)
	}
	w := waitingPeriod{end: in.FinalizeAt}
	if in.OnHold {
		w.hold(workflow.Now(ctx))
	}
	for {
		ended, err := w.wait(ctx, holds)
		if err != nil {
			return adverseEnd(ctx, err)
		}
		if ended {
			break
		}
		if !w.held { // released: the end moved out by the time held
			err := workflow.ExecuteActivity(ctx, acts.RescheduleAdverseAction, activities.AdverseReschedule{ID: in.ID, FinalizeAt: w.end}).Get(ctx, nil)
			if err != nil {
				return adverseEnd(ctx, err)
			}
		}
	}
	if err := workflow.ExecuteActivity(ctx, acts.FinalizeAdverseAction, in.ID).Get(ctx, nil); err != nil {
		return adverseEnd(ctx, err)
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, AdverseActionStatusKey.ValueSet(string(bgcheck.AdverseActionFinalized)))
	return bgcheck.AdverseActionFinalized, nil
}

// waitingPeriod is an adverse action's wait, which a dispute pauses.
type waitingPeriod struct {
	end    time.Time
	held   bool
	heldAt time.Time
}

func (w *waitingPeriod) hold(now time.Time) { w.held, w.heldAt = true, now }

// wait blocks until the period ends (true) or its hold changes (false): a timer to the end while
// not held, the next signal while held. A hold released moves the end out by its length.
func (w *waitingPeriod) wait(ctx workflow.Context, holds workflow.ReceiveChannel) (bool, error) {
	for {
		var onHold, ended, canceled bool
		var err error
		sel := workflow.NewSelector(ctx)
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		if !w.held {
			sel.AddFuture(workflow.NewTimer(timerCtx, max(w.end.Sub(workflow.Now(ctx)), 0)), func(f workflow.Future) {
				ended, err = true, f.Get(ctx, nil)
			})
		} else {
			sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { canceled = true })
		}
		sel.AddReceive(holds, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &onHold) })
		sel.Select(ctx)
		switch {
		case ended:
			return err == nil, err
		case canceled:
			return false, temporal.NewCanceledError()
		case onHold == w.held: // nothing changed: keep waiting (the timer is started afresh)
			cancelTimer()
		case onHold:
			cancelTimer()
			w.hold(workflow.Now(ctx))
			return false, nil
		default:
			w.held = false
			w.end = w.end.Add(workflow.Now(ctx).Sub(w.heldAt))
			return false, nil
		}
	}
}

func adverseEnd(ctx workflow.Context, err error) (bgcheck.AdverseActionStatus, error) {
	if temporal.IsCanceledError(err) || ctx.Err() != nil {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		_ = workflow.UpsertTypedSearchAttributes(dctx, AdverseActionStatusKey.ValueSet(string(bgcheck.AdverseActionCanceled)))
		return bgcheck.AdverseActionCanceled, nil
	}
	return "", err
}
