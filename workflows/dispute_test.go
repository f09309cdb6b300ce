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

type disputeRun struct {
	env      *testsuite.TestWorkflowEnvironment
	warned   []time.Duration // when WarnDisputeDue ran, from the start
	resolved []time.Duration // when ResolveOverdueDispute ran
	open     bool            // what WarnDisputeDue answers
}

func newDisputeEnv(start time.Time) *disputeRun {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	d := &disputeRun{env: suite.NewTestWorkflowEnvironment(), open: true}
	d.env.SetStartTime(start)
	d.env.RegisterWorkflow(workflows.DisputeWorkflow)
	d.env.RegisterActivity(&activities.Disputes{})
	d.env.OnActivity("WarnDisputeDue", mock.Anything, mock.Anything).Return(func(context.Context, string) (bool, error) {
		d.warned = append(d.warned, d.env.Now().Sub(start))
		return d.open, nil
	})
	d.env.OnActivity("ResolveOverdueDispute", mock.Anything, mock.Anything).Return(func(context.Context, string) error {
		d.resolved = append(d.resolved, d.env.Now().Sub(start))
		return nil
	})
	return d
}

func (d *disputeRun) run(t *testing.T, start time.Time) {
	t.Helper()
	d.env.ExecuteWorkflow(workflows.DisputeWorkflow, workflows.DisputeInput{ID: "dsp_1", DueAt: start.Add(bgcheck.DisputePeriod)})
	var status bgcheck.DisputeStatus
	if err := d.env.GetWorkflowResult(&status); err != nil || status != bgcheck.DisputeResolved {
		t.Fatalf("status %q, %v", status, err)
	}
}

// Left open, a dispute warns the admins on day 25 and is resolved as deleted on day 30, exactly.
func TestDisputeLeftOpenIsResolvedAtItsDueDate(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	d := newDisputeEnv(start)
	d.run(t, start)
	if len(d.warned) != 1 || d.warned[0] != 25*24*time.Hour || len(d.resolved) != 1 || d.resolved[0] != 30*24*time.Hour {
		t.Fatalf("warned at %v, resolved at %v; want day 25 and day 30", d.warned, d.resolved)
	}
}

// Resolved on day 10, a dispute's workflow ends at once: no warning, no deadline.
func TestDisputeResolvedEndsItsDeadline(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	d := newDisputeEnv(start)
	d.env.RegisterDelayedCallback(func() { d.env.SignalWorkflow(workflows.SignalDisputeResolved, nil) }, 10*24*time.Hour)
	d.run(t, start)
	if len(d.warned) != 0 || len(d.resolved) != 0 || d.env.Now().Sub(start) != 10*24*time.Hour {
		t.Fatalf("warned %v, resolved %v, ended after %v", d.warned, d.resolved, d.env.Now().Sub(start))
	}
}

// A resolution whose signal was lost is found at the warning: the workflow ends there.
func TestDisputeResolvedWithoutASignalEndsAtTheWarning(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	d := newDisputeEnv(start)
	d.open = false
	d.run(t, start)
	if len(d.warned) != 1 || len(d.resolved) != 0 {
		t.Fatalf("warned %v, resolved %v", d.warned, d.resolved)
	}
}
