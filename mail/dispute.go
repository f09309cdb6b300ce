package mail

import (
	"context"
	"fmt"
	"time"
)

// DisputeWarning tells an account's admins that a dispute's reinvestigation is due soon: one not
// resolved by DueAt is resolved as deleted, and the disputed item leaves the report.
type DisputeWarning struct {
	To        []string
	DisputeID string
	CheckID   string
	Screening string
	DueAt     time.Time
	Link      string // the dispute in the dashboard
}

func disputeWarningText(w DisputeWarning) (subject, body string) {
	return "A dispute is due on " + w.DueAt.UTC().Format("2 January 2006"), fmt.Sprintf(`Hello,

the candidate's dispute %s of the %s screening of check %s has not been resolved. The FCRA gives
30 days to reinvestigate: if it is not resolved by %s, it is resolved
automatically as deleted, and the disputed records are removed from the report.

The dispute: %s
`, w.DisputeID, w.Screening, w.CheckID, w.DueAt.UTC().Format("2 January 2006, 15:04 MST"), w.Link)
}

// SendDisputeWarning mails the warning to the admins.
func (s *SMTPSender) SendDisputeWarning(ctx context.Context, w DisputeWarning) error {
	subject, body := disputeWarningText(w)
	return s.sendText(ctx, w.To, subject, body)
}

// SendDisputeWarning logs the warning instead of mailing it (development).
func (l LogSender) SendDisputeWarning(_ context.Context, w DisputeWarning) error {
	l.Log.Warn("BGCHECK_SMTP_URL is not set: the dispute deadline warning is logged instead of mailed",
		"to", w.To, "dispute_id", w.DisputeID, "due_at", w.DueAt)
	return nil
}
