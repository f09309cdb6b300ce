package workflows_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/workflows"
)

// healthRun fakes the endpoint: reads answer the streak of the moment; disables are recorded.
type healthRun struct {
	env      *testsuite.TestWorkflowEnvironment
	streak   func(now time.Time) *time.Time // since when every attempt has failed, nil when healthy
	disabled []time.Duration
	start    time.Time
}

func newHealthRun(start time.Time, streak func(now time.Time) *time.Time) *healthRun {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	h := &healthRun{env: suite.NewTestWorkflowEnvironment(), streak: streak, start: start}
	h.env.SetStartTime(start)
	h.env.RegisterWorkflow(workflows.EndpointHealthWorkflow)
	h.env.RegisterActivity(&activities.EndpointHealth{})
	h.env.OnActivity("ReadEndpointHealth", mock.Anything, mock.Anything).Return(func(context.Context, string) (activities.EndpointWatch, error) {
		return activities.EndpointWatch{FailingSince: h.streak(h.env.Now()), Watched: len(h.disabled) == 0}, nil
	})
	h.env.OnActivity("DisableFailingEndpoint", mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DisableInput) (bool, error) {
		if s := h.streak(h.env.Now()); s != nil && s.Equal(in.FailingSince) && !h.env.Now().Before(s.Add(in.Window)) {
			h.disabled = append(h.disabled, h.env.Now().Sub(h.start))
			return true, nil
		}
		return false, nil
	})
	return h
}

func (h *healthRun) run(t *testing.T) {
	t.Helper()
	h.env.ExecuteWorkflow(workflows.EndpointHealthWorkflow, workflows.EndpointHealthInput{EndpointID: "we_1", Window: 5 * 24 * time.Hour})
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
}

// Failing since the start and never recovering: disabled exactly 5 days later.
func TestEndpointFailingFiveDaysIsDisabled(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	h := newHealthRun(start, func(time.Time) *time.Time { return &start })
	h.run(t)
	if len(h.disabled) != 1 || h.disabled[0] != 5*24*time.Hour {
		t.Fatalf("disabled at %v, want once, at exactly 5 days", h.disabled)
	}
}

// A success on day 3 ends the streak: the workflow ends without disabling.
func TestEndpointThatRecoversStaysEnabled(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	h := newHealthRun(start, func(now time.Time) *time.Time {
		if now.Sub(start) < 3*24*time.Hour {
			return &start
		}
		return nil
	})
	// The workflow sleeps to day 5 and finds it healthy.
	h.run(t)
	if len(h.disabled) != 0 {
		t.Fatalf("disabled at %v", h.disabled)
	}
}

// Recovered on day 2, failing again from day 4: the new streak is the one that counts, so the
// endpoint is disabled on day 9.
func TestEndpointFailingAgainCountsTheNewStreak(t *testing.T) {
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	again := start.Add(4 * 24 * time.Hour)
	h := newHealthRun(start, func(now time.Time) *time.Time {
		switch d := now.Sub(start); {
		case d < 2*24*time.Hour:
			return &start
		case d < 4*24*time.Hour:
			return nil
		}
		return &again
	})
	h.run(t)
	if len(h.disabled) != 1 || h.disabled[0] != 9*24*time.Hour {
		t.Fatalf("disabled at %v, want once, at day 9", h.disabled)
	}
}
