package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/screening"
)

// CheckTaskQueue is the queue of check workflows and their activities: apart from deliveries', so
// check workers and delivery workers scale apart.
const CheckTaskQueue = "bgcheck-checks"

// SignalAuthorized tells a check's workflow that the candidate has consented (or, for a
// suspended check, corrected their details). The dispatcher sends it.
const SignalAuthorized = "authorized"

// suspendedWait bounds how long a suspended check waits for the candidate before it fails.
const suspendedWait = 30 * 24 * time.Hour

// CheckWorkflowID is the id of a check's workflow: one per check, derived from its id.
func CheckWorkflowID(checkID string) string { return "check-" + checkID }

// CheckInput starts a check's workflow.
type CheckInput struct {
	CheckID string
	// Screenings are the package's screenings, run in this order.
	Screenings []string
	// InvitationExpiresAt is when the invitation lapses without consent (7 days after creation).
	InvitationExpiresAt time.Time
}

// CheckResult is how a check ended.
type CheckResult struct {
	Status bgcheck.CheckStatus
}

// CheckWorkflow runs one check: it mails the invitation, waits for the candidate's consent (the
// authorized signal) or the invitation's expiry, then runs each screening against the provider,
// sleeping durably while the provider says "pending, ask again in N" (a county search takes
// days), and completes the check (assessment, report, events) or ends it failed. A suspended
// screening waits for the candidate to authorize again. Cancelling the workflow stops it wherever
// it is; the database already says canceled when the API did it, and says so now when an
// operator did.
func CheckWorkflow(ctx workflow.Context, in CheckInput) (CheckResult, error) {
	var acts *activities.Checks
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		},
	})
	authorized := workflow.GetSignalChannel(ctx, SignalAuthorized)

	if err := workflow.ExecuteActivity(ctx, acts.SendInvitation, in.CheckID).Get(ctx, nil); err != nil {
		return endCheck(ctx, in.CheckID, err)
	}
	consented, err := waitForConsent(ctx, authorized, in.InvitationExpiresAt.Sub(workflow.Now(ctx)))
	if err != nil {
		return endCheck(ctx, in.CheckID, err)
	}
	if !consented {
		return finish(ctx, in.CheckID, bgcheck.CheckCanceled, bgcheck.ReasonInvitationExpired)
	}
	_ = setCheckStatus(ctx, bgcheck.CheckPending)

	for _, typ := range in.Screenings {
		outcome, err := runScreening(ctx, acts, authorized, in.CheckID, typ)
		if err != nil {
			return endCheck(ctx, in.CheckID, err)
		}
		switch outcome.Status {
		case screening.StatusFailed:
			return finish(ctx, in.CheckID, bgcheck.CheckFailed, outcome.Reason)
		case screening.StatusCanceled: // the check was canceled meanwhile
			return CheckResult{Status: bgcheck.CheckCanceled}, nil
		}
	}
	if err := workflow.ExecuteActivity(ctx, acts.CompleteCheck, in.CheckID).Get(ctx, nil); err != nil {
		return endCheck(ctx, in.CheckID, err)
	}
	_ = setCheckStatus(ctx, bgcheck.CheckComplete)
	return CheckResult{Status: bgcheck.CheckComplete}, nil
}

// waitForConsent waits for the authorized signal for at most wait; it reports whether it came.
func waitForConsent(ctx workflow.Context, authorized workflow.ReceiveChannel, wait time.Duration) (bool, error) {
	timerCtx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	timer := workflow.NewTimer(timerCtx, max(wait, 0))
	consented := false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(authorized, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); consented = true })
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.Select(ctx)
	return consented, ctx.Err()
}

// runScreening asks about one screening until it is final: complete, failed, or canceled. While
// pending it sleeps as long as the provider says; while suspended it waits for the candidate.
func runScreening(ctx workflow.Context, acts *activities.Checks, authorized workflow.ReceiveChannel, checkID, typ string) (activities.ScreeningResult, error) {
	submitted := workflow.Now(ctx)
	for {
		var res activities.ScreeningResult
		in := activities.ScreeningInput{CheckID: checkID, Type: typ, SubmittedAt: submitted, Now: workflow.Now(ctx)}
		if err := workflow.ExecuteActivity(ctx, acts.RunScreening, in).Get(ctx, &res); err != nil {
			return res, err
		}
		switch res.Status {
		case screening.StatusPending:
			if err := workflow.Sleep(ctx, max(res.RetryAfter, time.Second)); err != nil {
				return res, err
			}
		case screening.StatusSuspended:
			if err := workflow.ExecuteActivity(ctx, acts.SuspendCheck, activities.SuspendInput{CheckID: checkID, Reason: res.Reason}).Get(ctx, nil); err != nil {
				return res, err
			}
			_ = setCheckStatus(ctx, bgcheck.CheckSuspended)
			resumed, err := waitForConsent(ctx, authorized, suspendedWait)
			if err != nil {
				return res, err
			}
			if !resumed {
				return activities.ScreeningResult{Status: screening.StatusFailed, Reason: "the candidate did not correct their details in 30 days"}, nil
			}
			_ = setCheckStatus(ctx, bgcheck.CheckPending)
			submitted = workflow.Now(ctx) // a corrected search starts over
		default:
			return res, nil
		}
	}
}

// finish ends the check short of completion through the FinishCheck activity.
func finish(ctx workflow.Context, checkID string, status bgcheck.CheckStatus, reason string) (CheckResult, error) {
	var acts *activities.Checks
	in := activities.FinishInput{CheckID: checkID, Status: status, Reason: reason}
	if err := workflow.ExecuteActivity(ctx, acts.FinishCheck, in).Get(ctx, nil); err != nil {
		return CheckResult{}, err
	}
	_ = setCheckStatus(ctx, status)
	return CheckResult{Status: status}, nil
}

// endCheck ends the workflow on an error. A cancellation (through the API, or by an operator in
// the Temporal UI) is recorded as such on a disconnected context, since the canceled one can
// issue no more commands; any other error fails the check with its message.
func endCheck(ctx workflow.Context, checkID string, err error) (CheckResult, error) {
	if temporal.IsCanceledError(err) || ctx.Err() != nil {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		res, ferr := finish(dctx, checkID, bgcheck.CheckCanceled, "canceled_by_operator")
		if ferr != nil {
			return res, ferr
		}
		return res, err
	}
	return finish(ctx, checkID, bgcheck.CheckFailed, err.Error())
}

func setCheckStatus(ctx workflow.Context, s bgcheck.CheckStatus) error {
	return workflow.UpsertTypedSearchAttributes(ctx, CheckStatusKey.ValueSet(string(s)))
}
