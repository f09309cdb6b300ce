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
// and when its waiting period ends, as a DisputeHold. The value is the state, not a toggle: a
// signal of a version the workflow has already seen changes nothing.
const SignalDisputeHold = "dispute-hold"

// DisputeHold is the state of an adverse action's hold, as the database has it.
type DisputeHold struct {
	OnHold     bool
	FinalizeAt time.Time // the end of the waiting period, moved out by the time held on release
	Version    int       // rises with every change
}

// AdverseActionInput starts an adverse action's workflow.
type AdverseActionInput struct {
	ID          string
	FinalizeAt  time.Time // the end of the waiting period, in business days
	OnHold      bool      // a dispute of the check was open when the workflow started
	HoldVersion int
}

// AdverseActionWorkflow carries out an adverse action as the FCRA requires: the pre-adverse
// notice at once, a durable wait until the waiting period's end (business days, computed when the
// action was created), then the final notice and adverse_action.finalized. Cancelling the
// workflow (the action was withdrawn) ends it without a final notice.
//
// While a dispute of the check is open the wait is paused (SignalDisputeHold); when the dispute
// is resolved the signal brings the new end, moved out by the time held. The database has the
// last word: a finalization it finds held waits for the release like a signaled hold.
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
	w := waitingPeriod{DisputeHold{OnHold: in.OnHold, FinalizeAt: in.FinalizeAt, Version: in.HoldVersion}}
	for {
		if err := w.wait(ctx, holds); err != nil {
			return adverseEnd(ctx, err)
		}
		var res activities.FinalizeResult
		if err := workflow.ExecuteActivity(ctx, acts.FinalizeAdverseAction, in.ID).Get(ctx, &res); err != nil {
			return adverseEnd(ctx, err)
		}
		if !res.Held {
			break
		}
		w.state.OnHold = true // the release signal is on its way
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, AdverseActionStatusKey.ValueSet(string(bgcheck.AdverseActionFinalized)))
	return bgcheck.AdverseActionFinalized, nil
}

// waitingPeriod is an adverse action's wait, which a dispute pauses.
type waitingPeriod struct {
	state DisputeHold
}

// wait blocks until the waiting period ends: a timer to its end while not held, and signals of
// newer versions of the hold, which may hold, release or move the end.
func (w *waitingPeriod) wait(ctx workflow.Context, holds workflow.ReceiveChannel) error {
	for {
		var sig DisputeHold
		var ended, canceled bool
		var err error
		sel := workflow.NewSelector(ctx)
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		if !w.state.OnHold {
			sel.AddFuture(workflow.NewTimer(timerCtx, max(w.state.FinalizeAt.Sub(workflow.Now(ctx)), 0)), func(f workflow.Future) {
				ended, err = true, f.Get(ctx, nil)
			})
		} else {
			sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { canceled = true })
		}
		sel.AddReceive(holds, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &sig) })
		sel.Select(ctx)
		cancelTimer()
		switch {
		case ended:
			return err
		case canceled:
			return temporal.NewCanceledError()
		case sig.Version > w.state.Version:
			w.state = sig
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
