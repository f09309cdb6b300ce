package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/workflows"
)

// attemptLog records, in workflow (test-clock) time, each attempt the workflow asked for.
type attemptLog struct {
	env    *testsuite.TestWorkflowEnvironment
	start  time.Time
	at     []time.Duration
	inputs []activities.AttemptInput
}

// newEnv returns a test environment with time skipping in which attempts are answered by answer.
func newEnv(t *testing.T, answer func(n int, in activities.AttemptInput) (activities.AttemptResult, error)) (*testsuite.TestWorkflowEnvironment, *attemptLog) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.DeliveryWorkflow)
	env.RegisterActivity(&activities.Activities{})
	log := &attemptLog{env: env, start: env.Now()}
	env.OnActivity("DeliverWebhook", mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.AttemptInput) (activities.AttemptResult, error) {
			log.at = append(log.at, env.Now().Sub(log.start))
			log.inputs = append(log.inputs, in)
			return answer(len(log.inputs), in)
		})
	return env, log
}

var failing = func(_ int, in activities.AttemptInput) (activities.AttemptResult, error) {
	if in.Final {
		return activities.AttemptResult{Status: bgcheck.DeliveryFailed, StatusCode: 500}, nil
	}
	return activities.AttemptResult{Status: bgcheck.DeliveryPending, StatusCode: 500}, nil
}

func input() workflows.DeliveryInput {
	return workflows.DeliveryInput{DeliveryID: "dlv_1", FirstAttempt: 1, Schedule: workflows.DefaultRetrySchedule, Behaviour: workflows.BehaviourCurrent}
}

func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) workflows.DeliveryResult {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res workflows.DeliveryResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// Attempt 1 at once; after each failure exactly 1 min, 5 min, 30 min, 2 h and 24 h before
// attempts 2 to 6; when attempt 6 fails the delivery has failed.
func TestAttemptsFollowTheScheduleExactly(t *testing.T) {
	env, log := newEnv(t, failing)
	var upserted []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		v, _ := args.Get(0).(temporal.SearchAttributes).GetKeyword(workflows.DeliveryStatusKey)
		upserted = append(upserted, v)
	}).Return(nil)
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, input())

	res := result(t, env)
	if res.Status != bgcheck.DeliveryFailed || res.Attempts != 6 {
		t.Fatalf("result %+v, want failed after 6 attempts", res)
	}
	want := []time.Duration{0, time.Minute, 6 * time.Minute, 36 * time.Minute, 2*time.Hour + 36*time.Minute, 26*time.Hour + 36*time.Minute}
	if fmt.Sprint(log.at) != fmt.Sprint(want) {
		t.Fatalf("attempts at %v\nwant          %v", log.at, want)
	}
	for i, in := range log.inputs {
		wantFinal := i == 5
		if in.Number != i+1 || in.DeliveryID != "dlv_1" || in.Final != wantFinal {
			t.Errorf("attempt %d input %+v", i+1, in)
		}
		if !wantFinal && in.RetryAfter != workflows.DefaultRetrySchedule[i] {
			t.Errorf("attempt %d: RetryAfter %v, want %v", i+1, in.RetryAfter, workflows.DefaultRetrySchedule[i])
		}
	}
	if fmt.Sprint(upserted) != "[failed]" {
		t.Fatalf("DeliveryStatus upserts %v, want [failed]", upserted)
	}
}

func TestSuccessStopsFurtherAttempts(t *testing.T) {
	for k := 1; k <= 6; k++ {
		t.Run(fmt.Sprintf("success at attempt %d", k), func(t *testing.T) {
			env, log := newEnv(t, func(n int, in activities.AttemptInput) (activities.AttemptResult, error) {
				if n == k {
					return activities.AttemptResult{Status: bgcheck.DeliverySucceeded, StatusCode: 200}, nil
				}
				return failing(n, in)
			})
			env.ExecuteWorkflow(workflows.DeliveryWorkflow, input())
			res := result(t, env)
			if res.Status != bgcheck.DeliverySucceeded || res.Attempts != k || len(log.inputs) != k {
				t.Fatalf("result %+v after %d attempts, want succeeded at %d", res, len(log.inputs), k)
			}
		})
	}
}

// The endpoint is deleted while the workflow sleeps: the next attempt finds it gone and the
// delivery ends canceled, with no attempt after that.
func TestDeletedEndpointCancelsMidSchedule(t *testing.T) {
	deleted := false
	env, log := newEnv(t, func(n int, in activities.AttemptInput) (activities.AttemptResult, error) {
		if deleted {
			return activities.AttemptResult{Status: bgcheck.DeliveryCanceled}, nil
		}
		return failing(n, in)
	})
	// Delete during the 30-minute sleep after attempt 3.
	env.RegisterDelayedCallback(func() { deleted = true }, 6*time.Minute+10*time.Minute)
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, input())
	res := result(t, env)
	if res.Status != bgcheck.DeliveryCanceled || len(log.inputs) != 4 {
		t.Fatalf("result %+v after %d attempts, want canceled at attempt 4", res, len(log.inputs))
	}
	if log.at[3] != 36*time.Minute {
		t.Fatalf("the canceling attempt ran at %v, want 36m", log.at[3])
	}
}

// An attempt that cannot run (the database down) is tried again with the same number; it does not
// spend a place in the schedule.
func TestInfrastructureFailureRetriesTheSameAttempt(t *testing.T) {
	calls := 0
	env, log := newEnv(t, func(n int, in activities.AttemptInput) (activities.AttemptResult, error) {
		calls++
		if calls <= 3 {
			return activities.AttemptResult{}, errors.New("database unreachable")
		}
		return activities.AttemptResult{Status: bgcheck.DeliverySucceeded, StatusCode: 204}, nil
	})
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, input())
	res := result(t, env)
	if res.Status != bgcheck.DeliverySucceeded || res.Attempts != 1 {
		t.Fatalf("result %+v", res)
	}
	for _, in := range log.inputs {
		if in.Number != 1 {
			t.Fatalf("attempt numbers %v: a failure to run advanced the schedule", log.inputs)
		}
	}
}

// A redelivery's series numbers its attempts on from the delivery's earlier ones, and a short
// schedule (as tests and local runs configure) is followed as given.
func TestRedeliverySeriesNumbersOnAndUsesTheGivenSchedule(t *testing.T) {
	env, log := newEnv(t, failing)
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, workflows.DeliveryInput{
		DeliveryID: "dlv_1", FirstAttempt: 7, Schedule: []time.Duration{time.Second, 2 * time.Second},
	})
	res := result(t, env)
	if res.Status != bgcheck.DeliveryFailed || len(log.inputs) != 3 {
		t.Fatalf("result %+v after %d attempts", res, len(log.inputs))
	}
	if got := fmt.Sprint(log.inputs[0].Number, log.inputs[1].Number, log.inputs[2].Number); got != "7 8 9" {
		t.Fatalf("numbers %s, want 7 8 9", got)
	}
	if fmt.Sprint(log.at) != fmt.Sprint([]time.Duration{0, time.Second, 3 * time.Second}) {
		t.Fatalf("attempts at %v", log.at)
	}
}

func TestWorkflowIDIsDerivedFromTheDelivery(t *testing.T) {
	if workflows.WorkflowID("dlv_1", 1) != "dlv_1" || workflows.WorkflowID("dlv_1", 3) != "dlv_1-r3" {
		t.Fatal("workflow ids")
	}
}

// Canceling the workflow (the API does when the endpoint is deleted) ends the sleep at once, and
// the workflow records the canceled status for operators before it stops.
func TestCancelDuringSleepEndsTheWorkflow(t *testing.T) {
	env, log := newEnv(t, failing)
	var upserted []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		v, _ := args.Get(0).(temporal.SearchAttributes).GetKeyword(workflows.DeliveryStatusKey)
		upserted = append(upserted, v)
	}).Return(nil)
	env.RegisterDelayedCallback(env.CancelWorkflow, 3*time.Hour)
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, input())
	if !env.IsWorkflowCompleted() || !temporal.IsCanceledError(env.GetWorkflowError()) {
		t.Fatalf("workflow error %v, want canceled", env.GetWorkflowError())
	}
	if len(log.inputs) != 5 || fmt.Sprint(upserted) != "[canceled]" {
		t.Fatalf("%d attempts, upserts %v; want 5 attempts and [canceled]", len(log.inputs), upserted)
	}
}

// An attempt that cannot run (the database gone for good) is retried for a day, not for ever:
// then the workflow fails with ErrAttemptCouldNotRun, which the reconciler turns into a failed
// delivery with the reason recorded.
func TestInfrastructureRetriesEndAfterADay(t *testing.T) {
	env, log := newEnv(t, func(int, activities.AttemptInput) (activities.AttemptResult, error) {
		return activities.AttemptResult{}, errors.New("database unreachable")
	})
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, input())
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow still runs")
	}
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != workflows.ErrAttemptCouldNotRun {
		t.Fatalf("workflow error %v", err)
	}
	last := log.at[len(log.at)-1]
	if last < 24*time.Hour || last > 25*time.Hour {
		t.Fatalf("gave up after %s", last)
	}
	for _, in := range log.inputs {
		if in.Number != 1 {
			t.Fatalf("a failure to run advanced the schedule: %+v", in)
		}
	}
}

// An attempt deferred because its endpoint has its fill of attempts in flight waits durably
// (2 s, 4 s, 8 s …) and asks again, without advancing the schedule; the workflow marks its
// attempts as deferrable.
func TestDeferredAttemptWaitsAndAsksAgain(t *testing.T) {
	calls := 0
	env, log := newEnv(t, func(n int, in activities.AttemptInput) (activities.AttemptResult, error) {
		calls++
		if !in.MayDefer {
			t.Error("a new workflow's attempt is not deferrable")
		}
		if calls <= 3 {
			return activities.AttemptResult{Deferred: true}, nil
		}
		return activities.AttemptResult{Status: bgcheck.DeliverySucceeded, StatusCode: 204}, nil
	})
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, input())
	res := result(t, env)
	if res.Status != bgcheck.DeliverySucceeded || res.Attempts != 1 {
		t.Fatalf("result %+v", res)
	}
	want := []time.Duration{0, 2 * time.Second, 6 * time.Second, 14 * time.Second}
	if fmt.Sprint(log.at) != fmt.Sprint(want) {
		t.Fatalf("asked at %v, want %v", log.at, want)
	}
	for _, in := range log.inputs {
		if in.Number != 1 {
			t.Fatalf("a deferral advanced the schedule: %+v", in)
		}
	}
}

// A paused endpoint holds the attempt without counting it: the workflow waits for the resume
// signal (here at 90 s) and asks again at once; without a signal it asks again every 5 minutes.
func TestPausedEndpointHoldsTheAttemptUntilResumed(t *testing.T) {
	paused := true
	env, log := newEnv(t, func(n int, in activities.AttemptInput) (activities.AttemptResult, error) {
		if paused {
			return activities.AttemptResult{Paused: true, Deferred: true}, nil
		}
		return activities.AttemptResult{Status: bgcheck.DeliverySucceeded, StatusCode: 204}, nil
	})
	env.RegisterDelayedCallback(func() {
		paused = false
		env.SignalWorkflow(workflows.SignalEndpointResumed, nil)
	}, 6*time.Minute)
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, input())
	res := result(t, env)
	if res.Status != bgcheck.DeliverySucceeded || res.Attempts != 1 {
		t.Fatalf("result %+v", res)
	}
	want := []time.Duration{0, 5 * time.Minute, 6 * time.Minute}
	if fmt.Sprint(log.at) != fmt.Sprint(want) {
		t.Fatalf("asked at %v, want %v (at once, the 5-minute recheck, the resume)", log.at, want)
	}
	for _, in := range log.inputs {
		if in.Number != 1 {
			t.Fatalf("a paused attempt advanced the schedule: %+v", in)
		}
	}
}

// A pause that outlasts 500 rechecks (about three weeks) goes on in a new run, from the same
// attempt, so the history stays small.
func TestLongPauseContinuesAsNew(t *testing.T) {
	env, _ := newEnv(t, func(n int, in activities.AttemptInput) (activities.AttemptResult, error) {
		return activities.AttemptResult{Paused: true, Deferred: true}, nil
	})
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, input())
	var cont *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &cont) {
		t.Fatalf("after a long pause: %v, want continue-as-new", err)
	}
}

// A workflow started before the current behaviour (Behaviour 0, as the first release started
// them) replays as it ran: its attempts are never deferrable, so never deferred or held.
func TestFirstBehaviourIsNeverDeferred(t *testing.T) {
	env, log := newEnv(t, func(n int, in activities.AttemptInput) (activities.AttemptResult, error) {
		return activities.AttemptResult{Status: bgcheck.DeliverySucceeded, StatusCode: 204}, nil
	})
	env.ExecuteWorkflow(workflows.DeliveryWorkflow, workflows.DeliveryInput{DeliveryID: "dlv_1", FirstAttempt: 1, Schedule: workflows.DefaultRetrySchedule})
	if res := result(t, env); res.Status != bgcheck.DeliverySucceeded || len(log.inputs) != 1 || log.inputs[0].MayDefer {
		t.Fatalf("result %+v, inputs %+v", res, log.inputs)
	}
}
