package dispatcher

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/workflows"
)

// checkBatch is how many check starts, and how many check signals, one round sends.
const checkBatch = 100

// dispatchChecks starts the workflows of new checks and tells started ones what the database
// recorded since: a consent (the authorized signal) or a cancellation. Like deliveries, a check
// is written first and its workflow started after the commit, so a Temporal outage delays a check
// and loses none; a signal or cancel that fails stays recorded and is sent next round.
func (d *Dispatcher) dispatchChecks(ctx context.Context) error {
	batch, err := d.db.ClaimCheckStarts(ctx, checkBatch, Lease)
	if err != nil {
		return err
	}
	var started, failed []string
	var lastErr error
	for _, c := range batch {
		if err := d.startCheck(ctx, c); err != nil {
			failed, lastErr = append(failed, c.ID), err
			continue
		}
		started = append(started, c.ID)
	}
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.db.MarkChecksStarted(recordCtx, started); err != nil {
		return err
	}
	if err := d.db.ReleaseCheckStarts(recordCtx, failed); err != nil {
		return err
	}
	if len(started) == 0 && lastErr != nil {
		return errTemporalRefusedAll{lastErr}
	}
	return d.signalChecks(ctx)
}

func (d *Dispatcher) startCheck(ctx context.Context, c postgres.CheckStart) error {
	run, err := d.db.FindCheckRun(ctx, c.ID)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
	defer cancel()
	_, err = d.temporal.ExecuteWorkflow(ctx, CheckStartOptions(c), workflows.CheckWorkflow, workflows.CheckInput{
		CheckID: c.ID, Screenings: run.Screenings, InvitationExpiresAt: run.InvitationExpiresAt,
	})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}

// CheckStartOptions are the options of a check's workflow: its id derived from the check, its
// own task queue, and the search attributes operators find it by.
func CheckStartOptions(c postgres.CheckStart) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                    workflows.CheckWorkflowID(c.ID),
		TaskQueue:             workflows.CheckTaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.CheckIDKey.ValueSet(c.ID),
			workflows.CandidateIDKey.ValueSet(c.CandidateID),
			workflows.AccountIDKey.ValueSet(c.AccountID),
			workflows.CheckStatusKey.ValueSet(string(bgcheck.CheckInvitationPending)),
		),
	}
}

// signalChecks sends the consents and cancellations the database holds for started checks.
func (d *Dispatcher) signalChecks(ctx context.Context) error {
	pending, err := d.db.CheckSignals(ctx, checkBatch)
	if err != nil {
		return err
	}
	for _, s := range pending {
		id := workflows.CheckWorkflowID(s.ID)
		err := d.tell(ctx, func(ctx context.Context) error {
			if s.Cancel {
				return d.temporal.CancelWorkflow(ctx, id, "")
			}
			if s.Authorized {
				return d.temporal.SignalWorkflow(ctx, id, "", workflows.SignalAuthorized, nil)
			}
			return nil
		})
		if err != nil {
			d.log.Warn("could not signal a check's workflow; retried next round", "check_id", s.ID, "err", err)
			continue
		}
		if err := d.db.CheckSignaled(ctx, s); err != nil {
			return err
		}
	}
	return nil
}
