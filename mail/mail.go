// Package mail sends the service's e-mails: today, consumers' sign-in links. With
// BGCHECK_SMTP_URL set they go out over SMTP; without it they are written to the log, which is
// enough for local development.
package mail

import (
	"context"
	"log/slog"
)

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
