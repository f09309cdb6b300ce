package activities

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/postgres"
)

// NoticeSender mails adverse-action notices (package mail's senders).
type NoticeSender interface {
	SendAdverseNotice(ctx context.Context, n mail.AdverseNotice) error
}

// AdverseActions holds what an adverse action's activities need.
type AdverseActions struct {
	DB        *postgres.DB
	Mailer    NoticeSender
	PortalURL string
}

func (a *AdverseActions) run(ctx context.Context, id string) (*postgres.AdverseRun, error) {
	r, err := a.DB.FindAdverseRun(ctx, id)
	if errors.Is(err, bgcheck.ErrNotFound) {
		return nil, temporal.NewNonRetryableApplicationError("the adverse action no longer exists", ErrCheckGone, err)
	}
	return r, err
}

func (a *AdverseActions) notice(r *postgres.AdverseRun, final bool) mail.AdverseNotice {
	return mail.AdverseNotice{To: r.Email, Name: r.Name, Final: final, Reasons: r.Reasons, FinalizeAt: r.FinalizeAt,
		ReportLink: strings.TrimRight(a.PortalURL, "/") + "/reports/" + r.CheckID}
}

// SendPreAdverseNotice mails the candidate the pre-adverse notice, once: it is recorded as sent
// and a retry sends nothing more. A canceled adverse action sends none.
func (a *AdverseActions) SendPreAdverseNotice(ctx context.Context, id string) error {
	r, err := a.run(ctx, id)
	if err != nil || r.NoticeSent || r.Status != bgcheck.AdverseActionPending {
		return err
	}
	if err := a.Mailer.SendAdverseNotice(ctx, a.notice(r, false)); err != nil {
		return err
	}
	return a.DB.MarkPreAdverseNoticeSent(ctx, id)
}

// FinalizeAdverseAction sends the final notice (once) and marks the adverse action finalized,
// writing adverse_action.finalized. One canceled meanwhile is left alone: no notice goes out.
func (a *AdverseActions) FinalizeAdverseAction(ctx context.Context, id string) error {
	r, err := a.run(ctx, id)
	if err != nil || r.Status != bgcheck.AdverseActionPending {
		return err
	}
	if !r.FinalSent {
		if err := a.Mailer.SendAdverseNotice(ctx, a.notice(r, true)); err != nil {
			return err
		}
		if err := a.DB.MarkFinalNoticeSent(ctx, id); err != nil {
			return err
		}
	}
	return a.DB.FinalizeAdverseAction(ctx, id)
}

// AdverseReschedule is the new end of an adverse action's waiting period after a dispute held it.
type AdverseReschedule struct {
	ID         string
	FinalizeAt time.Time
}

// RescheduleAdverseAction records the end of the waiting period that a dispute's hold moved out,
// so the API shows when the final notice will go.
func (a *AdverseActions) RescheduleAdverseAction(ctx context.Context, r AdverseReschedule) error {
	return a.DB.RescheduleAdverseAction(ctx, r.ID, r.FinalizeAt)
}
