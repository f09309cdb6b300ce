package activities

import (
	"context"
	"errors"
	"strings"

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

// FinalizeResult is how a finalization went: Held when a dispute holds the adverse action (the
// database said so, whatever signal the workflow has seen), and nothing was sent.
type FinalizeResult struct {
	Held bool
}

// FinalizeAdverseAction marks the adverse action finalized, writing adverse_action.finalized,
// then sends the final notice (once: a retry after the send only records it). The decision is
// recorded before the notice goes, so a dispute filed in between cannot leave a notice without a
// finalized action. One held by a dispute is left alone and reported held; one canceled meanwhile
// is left alone: no notice goes out.
func (a *AdverseActions) FinalizeAdverseAction(ctx context.Context, id string) (FinalizeResult, error) {
	held, err := a.DB.FinalizeAdverseAction(ctx, id)
	if errors.Is(err, bgcheck.ErrNotFound) {
		return FinalizeResult{}, temporal.NewNonRetryableApplicationError("the adverse action no longer exists", ErrCheckGone, err)
	}
	if err != nil || held {
		return FinalizeResult{Held: held}, err
	}
	r, err := a.run(ctx, id)
	if err != nil || r.Status != bgcheck.AdverseActionFinalized || r.FinalSent {
		return FinalizeResult{}, err
	}
	if err := a.Mailer.SendAdverseNotice(ctx, a.notice(r, true)); err != nil {
		return FinalizeResult{}, err
	}
	return FinalizeResult{}, a.DB.MarkFinalNoticeSent(ctx, id)
}
