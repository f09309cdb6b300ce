// Package mail sends the service's e-mails: today, consumers' sign-in links. With
// BGCHECK_SMTP_URL set they go out over SMTP (SMTPSender); without it they are written to the log
// (LogSender), which is enough for local development.
package mail

import (
	"context"
	"log/slog"
)

// Sender delivers sign-in links. It has the method set of api.MagicLinkSender, which this package
// cannot name: package api imports package mail.
type Sender interface {
	SendMagicLink(ctx context.Context, to, link string) error
	SendInvitation(ctx context.Context, inv Invitation) error
	SendAdverseNotice(ctx context.Context, n AdverseNotice) error
	SendDisputeWarning(ctx context.Context, w DisputeWarning) error
	SendInvoice(ctx context.Context, inv Invoice) error
	SendEndpointDisabled(ctx context.Context, n EndpointDisabled) error
}

// New returns the sender BGCHECK_SMTP_URL asks for: an SMTPSender for smtpURL (see
// NewSMTPSender for its syntax), or a LogSender when smtpURL is empty. A malformed URL is an
// error, which never repeats the URL's password.
func New(smtpURL string, log *slog.Logger) (Sender, error) {
	if smtpURL == "" {
		return LogSender{Log: log}, nil
	}
	s, err := NewSMTPSender(smtpURL)
	if err != nil {
		return nil, err
	}
	log.Info("magic links are mailed over SMTP", "server", s.Addr(), "tls", s.security.String(), "from", s.from)
	return s, nil
}

// LogSender writes sign-in links to the log instead of sending them.
type LogSender struct {
	Log *slog.Logger
}

// SendMagicLink logs the link. The link signs its holder in: use this only where the log is as
// private as the mailbox would be (development).
func (l LogSender) SendMagicLink(_ context.Context, to, link string) error {
	l.Log.Warn("BGCHECK_SMTP_URL is not set: the magic link is logged instead of mailed", "to", to, "link", link)
	return nil
}
