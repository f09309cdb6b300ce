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

func newAdverseEnv(t *testing.T, start time.Time) (*testsuite.TestWorkflowEnvironment, *[]time.Duration, *int) {
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
	env.OnActivity("FinalizeAdverseAction", mock.Anything, mock.Anything).Return(func(context.Context, string) error {
		finalized = append(finalized, env.Now().Sub(start))
		return nil
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

// A dispute filed on day 2 of the waiting period and resolved on day 6 pauses the wait for
// those 4 days: the final notice goes 7 + 4 days after a Friday start, and the new end is
// recorded. A repeated hold signal changes nothing; a cancel while held ends it with no notice.
func TestAdverseActionHeldByADispute(t *testing.T) {
	friday := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	env, finalized, _ := newAdverseEnv(t, friday)
	var rescheduled []time.Time
	env.OnActivity("RescheduleAdverseAction", mock.Anything, mock.Anything).Return(func(_ context.Context, r activities.AdverseReschedule) error {
		rescheduled = append(rescheduled, r.FinalizeAt)
		return nil
	})
	hold := func(on bool) func() {
		return func() { env.SignalWorkflow(workflows.SignalDisputeHold, on) }
	}
	env.RegisterDelayedCallback(hold(true), 2*24*time.Hour)
	env.RegisterDelayedCallback(hold(true), 3*24*time.Hour)
	env.RegisterDelayedCallback(hold(false), 6*24*time.Hour)
	end := bgcheck.AddBusinessDays(friday, bgcheck.MinWaitingDays)
	env.ExecuteWorkflow(workflows.AdverseActionWorkflow, workflows.AdverseActionInput{ID: "aa_1", FinalizeAt: end})
	var status bgcheck.AdverseActionStatus
	if err := env.GetWorkflowResult(&status); err != nil || status != bgcheck.AdverseActionFinalized {
		t.Fatalf("status %q, %v", status, err)
	}
	if len(*finalized) != 1 || (*finalized)[0] != 11*24*time.Hour {
		t.Fatalf("finalized after %v, want exactly 11 days (7 + 4 held)", *finalized)
	}
	if want := end.Add(4 * 24 * time.Hour); len(rescheduled) != 1 || !rescheduled[0].Equal(want) {
		t.Fatalf("rescheduled to %v, want [%v]", rescheduled, want)
	}
}

// An adverse action whose workflow starts while a dispute is open waits for the release, however
// long past the original end that comes; canceled while held, it sends no final notice.
func TestAdverseActionStartedOnHold(t *testing.T) {
	monday := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	env, finalized, notices := newAdverseEnv(t, monday)
	env.RegisterDelayedCallback(env.CancelWorkflow, 20*24*time.Hour)
	env.ExecuteWorkflow(workflows.AdverseActionWorkflow, workflows.AdverseActionInput{
		ID: "aa_1", FinalizeAt: bgcheck.AddBusinessDays(monday, bgcheck.MinWaitingDays), OnHold: true})
	var status bgcheck.AdverseActionStatus
	if err := env.GetWorkflowResult(&status); err != nil || status != bgcheck.AdverseActionCanceled {
		t.Fatalf("status %q, %v", status, err)
	}
	if *notices != 1 || len(*finalized) != 0 {
		t.Fatalf("notices %d, finalized %v: want the pre-adverse notice only", *notices, *finalized)
	}
}
