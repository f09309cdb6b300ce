package mail

import (
	"context"
	"fmt"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Invitation is the mail that asks a candidate to consent to a background check.
type Invitation struct {
	To        string
	Name      string // the candidate's name, for the greeting
	Link      string // signs the candidate in to the consumer portal, to the check
	ExpiresAt time.Time
}

// invitationText is the plain-text body: the greeting's name, the link, the expiry date.
const invitationText = `Hello %s,

an employer has asked bgcheck to run a background check on you. Nothing happens until you agree:
follow this link to read the disclosure of what will be checked, give the details the check
needs, and authorize it.

%s

The link works until %s. If you did not apply for a job, you can ignore this e-mail.
`

// SendInvitation mails a check's invitation. The send gets 30 seconds in all, less if ctx ends
// sooner.
func (s *SMTPSender) SendInvitation(ctx context.Context, inv Invitation) error {
	return s.sendText(ctx, []string{inv.To}, "Your background check: your authorization is needed",
		fmt.Sprintf(invitationText, inv.Name, inv.Link, inv.ExpiresAt.UTC().Format("2 January 2006, 15:04 MST")))
}

// SendInvitation logs the invitation's link instead of mailing it (development).
func (l LogSender) SendInvitation(_ context.Context, inv Invitation) error {
	l.Log.Warn("BGCHECK_SMTP_URL is not set: the check invitation is logged instead of mailed", "to", inv.To, "link", inv.Link)
	return nil
}

// AdverseNotice is an FCRA adverse-action notice to a candidate: the pre-adverse notice (with
// the report and the summary of rights, before the employer decides) or the final one.
type AdverseNotice struct {
	To         string
	Name       string
	Final      bool
	Reasons    []string
	ReportLink string    // where the candidate reads their report in the consumer portal
	FinalizeAt time.Time // when the employer may decide (pre-adverse notices)
}

// adverseText renders the notice. The pre-adverse notice gives the candidate the report, the
// summary of rights and how to dispute; the final one names the agency, says it did not make the
// decision, and repeats the rights to a free copy within 60 days and to dispute (FCRA §615(a)).
func adverseText(n AdverseNotice) (subject, body string) {
	reasons := ""
	for _, r := range n.Reasons {
		reasons += "  - " + r + "\n"
	}
	if !n.Final {
		return "Pre-adverse action notice: your background check", fmt.Sprintf(`Hello %s,

the employer that ordered your background check is considering a decision against you based on
it, for these reasons:

%s
Your report: %s
A Summary of Your Rights Under the Fair Credit Reporting Act: https://www.consumerfinance.gov/learnmore/

If anything in the report is inaccurate or incomplete, you may dispute it with bgcheck from the
report's page, free of charge; the employer will not decide before %s.
`, n.Name, reasons, n.ReportLink, n.FinalizeAt.UTC().Format("2 January 2006"))
	}
	return "Adverse action notice: your background check", fmt.Sprintf(`Hello %s,

the employer that ordered your background check has decided against you, based in part on the
report bgcheck provided, for these reasons:

%s
bgcheck, the consumer reporting agency (bgcheck.example, support@bgcheck.example), did not make
this decision and cannot tell you why it was made. You have the right to a free copy of your
report if you ask for it within 60 days (%s), and the right to dispute with bgcheck anything in
it that is inaccurate or incomplete.
`, n.Name, reasons, n.ReportLink)
}

// SendAdverseNotice mails an adverse-action notice.
func (s *SMTPSender) SendAdverseNotice(ctx context.Context, n AdverseNotice) error {
	subject, body := adverseText(n)
	return s.sendText(ctx, []string{n.To}, subject, body)
}

// sendText mails a plain-text, automatically generated message. The send gets 30 seconds in all,
// less if ctx ends sooner.
func (s *SMTPSender) sendText(ctx context.Context, to []string, subject, body string) error {
	m := gomail.NewMsg()
	if err := m.From(s.from); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if err := m.To(to...); err != nil {
		return fmt.Errorf("recipient: %w", err)
	}
	m.Subject(subject)
	m.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	m.SetBodyString(gomail.TypeTextPlain, body)
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	client, err := s.client(ctx)
	if err != nil {
		return err
	}
	if err := client.DialAndSendWithContext(ctx, m); err != nil {
		return fmt.Errorf("smtp %s: %w", s.Addr(), err)
	}
	return nil
}

// SendAdverseNotice logs that a notice would have been mailed (development).
func (l LogSender) SendAdverseNotice(_ context.Context, n AdverseNotice) error {
	l.Log.Warn("BGCHECK_SMTP_URL is not set: the adverse-action notice is logged instead of mailed", "to", n.To, "final", n.Final)
	return nil
}
