package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
)

// infrastructureRetryDelay is how long the workflow waits before trying an attempt again when
// the activity itself could not run (the database unreachable, the worker gone): such a failure
// is not a failed delivery attempt and does not advance the schedule.
const infrastructureRetryDelay = time.Minute

// maxInfrastructureRetryTime bounds how long one attempt is retried when it cannot run. Past it
// the workflow fails with ErrAttemptCouldNotRun instead of looping for ever; the reconciler
// (package dispatcher) then fails the delivery with that reason and records the attempt that
// could not run, and the delivery can be redelivered.
const maxInfrastructureRetryTime = 24 * time.Hour

// ErrAttemptCouldNotRun is the error type of a workflow whose attempt could not run for
// maxInfrastructureRetryTime.
const ErrAttemptCouldNotRun = "AttemptCouldNotRun"

// deferBackoff is how long a deferred attempt waits before asking again: 2 s, doubling, at
// most maxDeferBackoff. A timer in Temporal, not a slot held in a worker.
func deferBackoff(deferrals int) time.Duration {
	d := 2 * time.Second
	for i := 1; i < deferrals && d < maxDeferBackoff; i++ {
		d *= 2
	}
	return min(d, maxDeferBackoff)
}

const maxDeferBackoff = time.Minute

// DeliveryWorkflow runs one attempt series of a delivery: attempt 1 at once, and after each failed
// attempt a durable sleep from the schedule before the next; it ends when an attempt succeeds,
// when the endpoint is found deleted or disabled (canceled), or after the last attempt fails.
//
// Each attempt is one local activity (sign, POST, record): no activity task round trip through
// the server and one marker in the history, which keeps a delivery to a handful of history
// events. If the worker dies mid-attempt, the workflow task times out and another worker replays
// the history and runs the attempt again: the receiver may see an attempt twice, never zero times.
func DeliveryWorkflow(ctx workflow.Context, in DeliveryInput) (DeliveryResult, error) {
	var acts *activities.Activities
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		// The POST gets activities.AttemptTimeout; the rest is reading and recording.
		StartToCloseTimeout:    activities.AttemptTimeout + 15*time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
		},
	})
	log := workflow.GetLogger(ctx)
	bounded, mayDefer := in.Behaviour >= 1, in.Behaviour >= 1
	pausedWaits := 0

	attempts := len(in.Schedule) + 1
	for i := range attempts {
		req := activities.AttemptInput{DeliveryID: in.DeliveryID, Number: in.FirstAttempt + i, MayDefer: mayDefer}
		if i < len(in.Schedule) {
			req.RetryAfter = in.Schedule[i]
		} else {
			req.Final = true
		}
		var res activities.AttemptResult
		var firstFailure time.Time
		deferrals := 0
		for {
			err := workflow.ExecuteLocalActivity(ctx, acts.DeliverWebhook, req).Get(ctx, &res)
			if err == nil && res.Paused {
				// The endpoint is paused: wait for its resume, durably; nothing was attempted,
				// so the schedule does not advance, and earlier infrastructure trouble is over.
				firstFailure = time.Time{}
				pausedWaits++
				if pausedWaits > maxPausedWaitsPerRun {
					// A long pause: keep the history small by going on in a new run, from the
					// same attempt and the rest of the schedule.
					return DeliveryResult{}, workflow.NewContinueAsNewError(ctx, DeliveryWorkflow, DeliveryInput{
						DeliveryID: in.DeliveryID, FirstAttempt: req.Number, Schedule: in.Schedule[i:], Behaviour: in.Behaviour})
				}
				if err := waitForResume(ctx, pausedRecheck(pausedWaits)); err != nil {
					return canceled(ctx, err)
				}
				continue
			}
			if err == nil && res.Deferred {
				// The endpoint or account has its fill of attempts in flight: wait without
				// holding a worker slot, then ask again. The schedule does not advance.
				deferrals++
				if err := workflow.Sleep(ctx, deferBackoff(deferrals)); err != nil {
					return canceled(ctx, err)
				}
				continue
			}
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return canceled(ctx, err)
			}
			if firstFailure.IsZero() {
				firstFailure = workflow.Now(ctx)
			}
			if bounded && workflow.Now(ctx).Sub(firstFailure) >= maxInfrastructureRetryTime {
				return DeliveryResult{}, temporal.NewNonRetryableApplicationError(
					"the attempt could not run for 24 hours: "+err.Error(), ErrAttemptCouldNotRun, err)
			}
			log.Warn("delivery attempt could not run; trying again", "delivery_id", in.DeliveryID, "attempt", req.Number, "error", err)
			if err := workflow.Sleep(ctx, infrastructureRetryDelay); err != nil {
				return canceled(ctx, err)
			}
		}
		if res.Status != bgcheck.DeliveryPending {
			if err := setStatus(ctx, res.Status); err != nil {
				return DeliveryResult{}, err
			}
			return DeliveryResult{Status: res.Status, Attempts: i + 1}, nil
		}
		if err := workflow.Sleep(ctx, in.Schedule[i]); err != nil {
			return canceled(ctx, err)
		}
	}
	// Unreachable: the final attempt reports succeeded, failed or canceled.
	return DeliveryResult{Status: bgcheck.DeliveryFailed, Attempts: attempts}, nil
}

// SignalEndpointResumed tells a delivery's workflow held by a paused endpoint that it was resumed.
const SignalEndpointResumed = "endpoint-resumed"

// pausedRecheck is how long a held delivery waits for the resume signal before asking again: 5
// minutes, doubling, at most an hour (a signal lost in an outage delays it by that much at most,
// and a week's pause costs a few hundred history events).
func pausedRecheck(waits int) time.Duration {
	d := 5 * time.Minute
	for i := 1; i < waits && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

// maxPausedWaitsPerRun bounds the waits of one run (some three weeks of pause) before the
// workflow continues as new.
const maxPausedWaitsPerRun = 500

// waitForResume waits for SignalEndpointResumed, or d.
func waitForResume(ctx workflow.Context, d time.Duration) error {
	var err error
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, d), func(f workflow.Future) { err = f.Get(ctx, nil) })
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalEndpointResumed), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	sel.Select(ctx)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return err
}

// canceled ends a workflow whose context was canceled (its endpoint deleted, or an operator's
// request). The database already says canceled; the search attribute is brought in line on a
// disconnected context, since the canceled one can no longer issue commands.
func canceled(ctx workflow.Context, cause error) (DeliveryResult, error) {
	if !temporal.IsCanceledError(cause) {
		return DeliveryResult{}, cause
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := setStatus(dctx, bgcheck.DeliveryCanceled); err != nil {
		return DeliveryResult{}, err
	}
	return DeliveryResult{}, cause
}

func setStatus(ctx workflow.Context, s bgcheck.DeliveryStatus) error {
	return workflow.UpsertTypedSearchAttributes(ctx, DeliveryStatusKey.ValueSet(string(s)))
}
