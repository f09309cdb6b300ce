package activities

import (
	"context"
	"errors"
	"strings"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/postgres"
)

// DisputeWarner mails the warning before a dispute's deadline (package mail's senders).
type DisputeWarner interface {
	SendDisputeWarning(ctx context.Context, w mail.DisputeWarning) error
}

// Disputes holds what a dispute's activities need.
type Disputes struct {
	DB        *postgres.DB
	Mailer    DisputeWarner
	PortalURL string
}

// WarnDisputeDue warns the account's admins, once, that the dispute is due in five days. It
// reports whether the dispute is still open: a resolved one needs no warning and no deadline.
func (d *Disputes) WarnDisputeDue(ctx context.Context, id string) (bool, error) {
	r, err := d.DB.FindDisputeRun(ctx, id)
	if errors.Is(err, bgcheck.ErrNotFound) {
		return false, nil // the check or its candidate was deleted, and the dispute with it
	}
	if err != nil || r.Status != bgcheck.DisputeOpen || r.WarningSent {
		return err == nil && r.Status == bgcheck.DisputeOpen, err
	}
	if len(r.AdminEmails) > 0 {
		err := d.Mailer.SendDisputeWarning(ctx, mail.DisputeWarning{
			To: r.AdminEmails, DisputeID: r.ID, CheckID: r.CheckID, Screening: r.Screening, DueAt: r.DueAt,
			Link: strings.TrimRight(d.PortalURL, "/") + "/dashboard/#/disputes/" + r.ID,
		})
		if err != nil {
			return false, err
		}
	}
	return true, d.DB.MarkDisputeWarningSent(ctx, id)
}

// ResolveOverdueDispute resolves a dispute left open past its due date as the FCRA requires: the
// disputed item, not verified in time, is deleted from the report. One resolved meanwhile is left
// as it is.
func (d *Disputes) ResolveOverdueDispute(ctx context.Context, id string) error {
	_, err := d.DB.ResolveDispute(ctx, "", id, postgres.DisputeResolution{
		Resolution: bgcheck.ResolutionDeleted,
		Note:       "not verified within 30 days of the dispute",
		By:         bgcheck.ResolvedByDeadline,
	}, false)
	if errors.Is(err, bgcheck.ErrNotFound) {
		return nil
	}
	return err
}
