package mail

import (
	"context"
	"fmt"
	"time"
)

// EndpointDisabled tells an account's admins that a webhook endpoint was disabled because every
// delivery to it failed for too long.
type EndpointDisabled struct {
	To           []string
	EndpointID   string
	URL          string
	Mode         string
	FailingSince time.Time
	Link         string
}

func endpointDisabledText(n EndpointDisabled) (subject, body string) {
	return "Webhook endpoint disabled: " + n.URL, fmt.Sprintf(`Hello,

every delivery to your %s-mode webhook endpoint %s (%s) has failed since %s,
so it was disabled: no new deliveries go to it. Fix the receiver, then enable the endpoint again
in the dashboard (%s) or with PATCH /api/v1/webhooks/endpoints/%s {"enabled": true}; deliveries
that failed meanwhile can be sent again.
`, n.Mode, n.EndpointID, n.URL, n.FailingSince.UTC().Format("2 January 2006, 15:04 MST"), n.Link, n.EndpointID)
}

// SendEndpointDisabled mails the notice to the admins.
func (s *SMTPSender) SendEndpointDisabled(ctx context.Context, n EndpointDisabled) error {
	subject, body := endpointDisabledText(n)
	return s.sendText(ctx, n.To, subject, body)
}

// SendEndpointDisabled logs the notice instead of mailing it (development).
func (l LogSender) SendEndpointDisabled(_ context.Context, n EndpointDisabled) error {
	l.Log.Warn("BGCHECK_SMTP_URL is not set: the endpoint-disabled notice is logged instead of mailed", "to", n.To, "endpoint_id", n.EndpointID)
	return nil
}
