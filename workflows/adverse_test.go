package workflows_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/workflows"
)

// newAdverseEnv runs the workflow with its activities faked: the finalization answers held while
// *heldInDB says so (as the database would), else records when it finalized.
func newAdverseEnv(t *testing.T, start time.Time) (*testsuite.TestWorkflowEnvironment, *[]time.Duration, *int) {
	return newAdverseEnvHeld(t, start, new(bool))
}

func newAdverseEnvHeld(t *testing.T, start time.Time, heldInDB *bool) (*testsuite.TestWorkflowEnvironment, *[]time.Duration, *int) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterWorkflow(workflows.AdverseActionWorkflow)
	env.RegisterActivity(&activities.AdverseActions{})
	var finalized []time.Duration
	notices := 0
	env.OnActivity("SendPreAdverseNotice", mock.Anything, mock.Anything).Return(func(context.Context, string) error {
		notices++
		return nil
	})
	env.OnActivity("FinalizeAdverseAction", mock.Anything, mock.Anything).Return(func(context.Context, string) (activities.FinalizeResult, error) {
		if *heldInDB {
			return activities.FinalizeResult{Held: true}, nil
		}
		finalized = append(finalized, env.Now().Sub(start))
		return activities.FinalizeResult{}, nil
	})
	return env, &finalized, &notices
}

// The pre-adverse notice goes out at once; the final notice exactly five business days later.
// From a Friday that is the next Friday: seven days, across a weekend.
func TestAdverseActionFinalizesAfterFiveBusinessDays(t *testing.T) {
	friday := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	env, finalized, notices := newAdverseEnv(t, friday)
	env.ExecuteWorkflow(workflows.AdverseActionWorkflow, workflows.AdverseActionInput{
		ID: "aa_1", FinalizeAt: bgcheck.AddBusinessDays(friday, bgcheck.MinWaitingDays)})
	var status bgcheck.AdverseActionStatus
	if err := env.GetWorkflowResult(&status); err != nil || status != bgcheck.AdverseActionFinalized {
		t.Fatalf("status %q, %v", status, err)
	}
	if *notices != 1 || len(*finalized) != 1 || (*finalized)[0] != 7*24*time.Hour {
		t.Fatalf("notices %d, finalized after %v; want one notice and exactly 7 days", *notices, *finalized)
	}
}

// Withdrawn in its waiting period, an adverse action sends no final notice.
func TestAdverseActionCanceledSendsNoFinalNotice(t *testing.T) {
	monday := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	env, finalized, _ := newAdverseEnv(t, monday)
	env.RegisterDelayedCallback(env.CancelWorkflow, 48*time.Hour)
	env.ExecuteWorkflow(workflows.AdverseActionWorkflow, workflows.AdverseActionInput{
		ID: "aa_1", FinalizeAt: bgcheck.AddBusinessDays(monday, bgcheck.MinWaitingDays)})
	var status bgcheck.AdverseActionStatus
	if err := env.GetWorkflowResult(&status); err != nil || status != bgcheck.AdverseActionCanceled || len(*finalized) != 0 {
		t.Fatalf("status %q, %v, finalized %v", status, err, *finalized)
	}
}

// A dispute filed on day 2 of the waiting period and resolved on day 6 pauses the wait: the
// release brings the end moved out by the 4 days held, and the final notice goes 7 + 4 days after
// a Friday start. A signal of a version already seen changes nothing, even if it comes late.
func TestAdverseActionHeldByADispute(t *testing.T) {
	friday := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	env, finalized, _ := newAdverseEnv(t, friday)
	end := bgcheck.AddBusinessDays(friday, bgcheck.MinWaitingDays)
	hold := func(h workflows.DisputeHold) func() {
		return func() { env.SignalWorkflow(workflows.SignalDisputeHold, h) }
	}
	env.RegisterDelayedCallback(hold(workflows.DisputeHold{OnHold: true, FinalizeAt: end, Version: 1}), 2*24*time.Hour)
	env.RegisterDelayedCallback(hold(workflows.DisputeHold{OnHold: false, FinalizeAt: end.Add(4 * 24 * time.Hour), Version: 2}), 6*24*time.Hour)
	env.RegisterDelayedCallback(hold(workflows.DisputeHold{OnHold: true, FinalizeAt: end, Version: 1}), 7*24*time.Hour) // stale
	env.ExecuteWorkflow(workflows.AdverseActionWorkflow, workflows.AdverseActionInput{ID: "aa_1", FinalizeAt: end})
	var status bgcheck.AdverseActionStatus
	if err := env.GetWorkflowResult(&status); err != nil || status != bgcheck.AdverseActionFinalized {
		t.Fatalf("status %q, %v", status, err)
	}
	if len(*finalized) != 1 || (*finalized)[0] != 11*24*time.Hour {
		t.Fatalf("finalized after %v, want exactly 11 days (7 + 4 held)", *finalized)
	}
}

// A dispute filed just before the end, whose signal has not arrived when the timer fires: the
// database says held, so nothing is sent, and the workflow waits for the release.
func TestAdverseActionHeldInTheDatabaseBeforeTheSignal(t *testing.T) {
	monday := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	heldInDB := true
	env, finalized, _ := newAdverseEnvHeld(t, monday, &heldInDB)
	end := bgcheck.AddBusinessDays(monday, bgcheck.MinWaitingDays)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalDisputeHold, workflows.DisputeHold{OnHold: true, FinalizeAt: end, Version: 1})
	}, 7*24*time.Hour+time.Hour)
	env.RegisterDelayedCallback(func() {
		heldInDB = false
		env.SignalWorkflow(workflows.SignalDisputeHold, workflows.DisputeHold{OnHold: false, FinalizeAt: end.Add(3 * 24 * time.Hour), Version: 2})
	}, 9*24*time.Hour)
	env.ExecuteWorkflow(workflows.AdverseActionWorkflow, workflows.AdverseActionInput{ID: "aa_1", FinalizeAt: end})
	var status bgcheck.AdverseActionStatus
	if err := env.GetWorkflowResult(&status); err != nil || status != bgcheck.AdverseActionFinalized {
		t.Fatalf("status %q, %v", status, err)
	}
	if len(*finalized) != 1 || (*finalized)[0] != 10*24*time.Hour {
		t.Fatalf("finalized after %v, want once, at the released end (day 10)", *finalized)
	}
}

// An adverse action whose workflow starts while a dispute is open waits for the release, however
// long past the original end that comes; canceled while held, it sends no final notice.
func TestAdverseActionStartedOnHold(t *testing.T) {
	monday := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	env, finalized, notices := newAdverseEnv(t, monday)
	env.RegisterDelayedCallback(env.CancelWorkflow, 20*24*time.Hour)
	env.ExecuteWorkflow(workflows.AdverseActionWorkflow, workflows.AdverseActionInput{
		ID: "aa_1", FinalizeAt: bgcheck.AddBusinessDays(monday, bgcheck.MinWaitingDays), OnHold: true, HoldVersion: 1})
	var status bgcheck.AdverseActionStatus
	if err := env.GetWorkflowResult(&status); err != nil || status != bgcheck.AdverseActionCanceled {
		t.Fatalf("status %q, %v", status, err)
	}
	if *notices != 1 || len(*finalized) != 0 {
		t.Fatalf("notices %d, finalized %v: want the pre-adverse notice only", *notices, *finalized)
	}
}
