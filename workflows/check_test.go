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
	"github.com/bgcheck/bgcheck/screening"
	"github.com/bgcheck/bgcheck/workflows"
)

// checkScene is a check's workflow in the test suite, with its activities answered by the
// sandbox provider in test time and their calls recorded.
type checkScene struct {
	env      *testsuite.TestWorkflowEnvironment
	start    time.Time
	ssn      string
	finished []activities.FinishInput
	endedAt  time.Duration   // when FinishCheck last ran, since the start
	complete []time.Duration // when CompleteCheck ran, since the start
	asked    map[string]int
}

func newCheckScene(t *testing.T, ssn string) *checkScene {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.CheckWorkflow)
	env.RegisterActivity(&activities.Checks{})
	s := &checkScene{env: env, start: env.Now(), ssn: ssn, asked: map[string]int{}}
	sandbox := screening.NewSandbox(1) // real delays, in skipped time
	env.OnActivity("SendInvitation", mock.Anything, mock.Anything).Return(nil)
	env.OnActivity("SuspendCheck", mock.Anything, mock.Anything).Return(nil)
	env.OnActivity("RunScreening", mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ScreeningInput) (activities.ScreeningResult, error) {
			s.asked[in.Type]++
			out, err := sandbox.Screen(ctx, screening.Request{ScreeningType: screening.Type(in.Type),
				Candidate: screening.Subject{SSN: s.ssn}, SubmittedAt: in.SubmittedAt, Now: in.Now})
			return activities.ScreeningResult{Status: out.Status, Result: out.Result, RetryAfter: out.RetryAfter, Reason: out.Reason}, err
		})
	env.OnActivity("CompleteCheck", mock.Anything, mock.Anything).Return(func(context.Context, string) error {
		s.complete = append(s.complete, env.Now().Sub(s.start))
		return nil
	})
	env.OnActivity("FinishCheck", mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.FinishInput) error {
		s.finished = append(s.finished, in)
		s.endedAt = env.Now().Sub(s.start)
		return nil
	})
	return s
}

func (s *checkScene) run(pkg string, consentAfter time.Duration) workflows.CheckResult {
	p, _ := screening.FindPackage(pkg)
	var types []string
	for _, t := range p.Screenings {
		types = append(types, string(t))
	}
	if consentAfter >= 0 {
		s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(workflows.SignalAuthorized, nil) }, consentAfter)
	}
	s.env.ExecuteWorkflow(workflows.CheckWorkflow, workflows.CheckInput{
		CheckID: "chk_0123456789abcdef0123456789abcdef", Screenings: types, InvitationExpiresAt: s.start.Add(7 * 24 * time.Hour),
	})
	var res workflows.CheckResult
	if s.env.IsWorkflowCompleted() && s.env.GetWorkflowError() == nil {
		_ = s.env.GetWorkflowResult(&res)
	}
	return res
}

// Consent, then every screening at its sandbox delay, one after the other: the county search
// alone takes three days of (skipped) time, and the check completes after all of them.
func TestCheckRunsScreeningsAfterConsent(t *testing.T) {
	s := newCheckScene(t, screening.SandboxSSNClear)
	res := s.run("standard", time.Hour)
	if res.Status != bgcheck.CheckComplete || len(s.complete) != 1 || len(s.finished) != 0 {
		t.Fatalf("result %+v, completed %v, finished %+v", res, s.complete, s.finished)
	}
	// ssn_trace 1 min + national 1 h + county 3 days + sex offender 30 min, after the hour of consent.
	want := time.Hour + time.Minute + time.Hour + 72*time.Hour + 30*time.Minute
	if got := s.complete[0]; got < want || got > want+time.Minute {
		t.Fatalf("completed after %s, want about %s", got, want)
	}
	if s.asked["county_criminal"] < 2 {
		t.Fatalf("the county search was asked %d times: it should have said pending first", s.asked["county_criminal"])
	}
}

// Without consent the invitation expires after exactly seven days: the check ends canceled with
// reason invitation_expired, and no screening runs.
func TestCheckInvitationExpiresAfterSevenDays(t *testing.T) {
	s := newCheckScene(t, screening.SandboxSSNClear)
	res := s.run("basic", -1)
	if res.Status != bgcheck.CheckCanceled || len(s.finished) != 1 || s.finished[0].Reason != bgcheck.ReasonInvitationExpired {
		t.Fatalf("result %+v, finished %+v", res, s.finished)
	}
	if s.endedAt != 7*24*time.Hour {
		t.Fatalf("expired after %s, want exactly 7 days", s.endedAt)
	}
	if len(s.asked) != 0 {
		t.Fatalf("screenings ran without consent: %v", s.asked)
	}
}

// A screening the provider could not complete fails the check (check.failed, through
// FinishCheck), and the screenings after it never run.
func TestCheckFailedScreeningFailsTheCheck(t *testing.T) {
	s := newCheckScene(t, screening.SandboxSSNFailed)
	res := s.run("standard", time.Minute)
	if res.Status != bgcheck.CheckFailed || len(s.finished) != 1 || s.finished[0].Status != bgcheck.CheckFailed || s.finished[0].Reason == "" {
		t.Fatalf("result %+v, finished %+v", res, s.finished)
	}
	if len(s.complete) != 0 || s.asked["national_criminal"] != 0 {
		t.Fatalf("went on after the failure: completed %v asked %v", s.complete, s.asked)
	}
}

// Cancelling the workflow mid-way (the county search pending for days) stops it: no report, the
// check is recorded canceled, and the remaining screenings never run.
func TestCheckCanceledMidway(t *testing.T) {
	s := newCheckScene(t, screening.SandboxSSNClear)
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, 24*time.Hour)
	s.run("standard", time.Minute)
	if !s.env.IsWorkflowCompleted() {
		t.Fatal("the workflow still runs")
	}
	if len(s.complete) != 0 || len(s.finished) != 1 || s.finished[0].Status != bgcheck.CheckCanceled {
		t.Fatalf("completed %v finished %+v", s.complete, s.finished)
	}
	if s.asked["sex_offender"] != 0 {
		t.Fatalf("a screening after the cancel ran: %v", s.asked)
	}
}

// A suspended screening waits for the candidate to authorize again, then runs again and the
// check completes.
func TestCheckSuspendedResumesOnAuthorization(t *testing.T) {
	s := newCheckScene(t, screening.SandboxSSNSuspended)
	s.env.RegisterDelayedCallback(func() {
		s.ssn = screening.SandboxSSNClear // the candidate corrects their SSN
		s.env.SignalWorkflow(workflows.SignalAuthorized, nil)
	}, 2*time.Hour)
	res := s.run("basic", time.Minute)
	if res.Status != bgcheck.CheckComplete || len(s.complete) != 1 {
		t.Fatalf("result %+v completed %v finished %+v", res, s.complete, s.finished)
	}
	if s.asked["ssn_trace"] < 2 {
		t.Fatalf("the suspended search was not asked again: %v", s.asked)
	}
}
