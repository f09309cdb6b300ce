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
