package activities

import (
	"context"
	"strings"
	"time"

	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/postgres"
)

// EndpointDisabledMailer mails the admins about an endpoint disabled for failing.
type EndpointDisabledMailer interface {
	SendEndpointDisabled(ctx context.Context, n mail.EndpointDisabled) error
}

// EndpointHealth holds what the endpoint health activities need.
type EndpointHealth struct {
	DB        *postgres.DB
	Mailer    EndpointDisabledMailer
	PortalURL string
}

// EndpointWatch is an endpoint's failing streak as the health workflow reads it.
type EndpointWatch struct {
	FailingSince *time.Time
	Watched      bool
}

// ReadEndpointHealth reads since when every attempt to the endpoint has failed (nil when the last
// succeeded) and whether it is still enabled.
func (a *EndpointHealth) ReadEndpointHealth(ctx context.Context, endpointID string) (EndpointWatch, error) {
	w, err := a.DB.FindEndpointWatch(ctx, endpointID)
	return EndpointWatch{FailingSince: w.FailingSince, Watched: w.Watched}, err
}

// DisableInput names the failing streak that is to disable an endpoint.
type DisableInput struct {
	EndpointID   string
	FailingSince time.Time
	Window       time.Duration
}

// DisableFailingEndpoint disables the endpoint if the streak is unbroken, and mails its admins
// once (a retry finds the mail sent). It reports whether the endpoint is off now.
func (a *EndpointHealth) DisableFailingEndpoint(ctx context.Context, in DisableInput) (bool, error) {
	disabled, err := a.DB.DisableFailingEndpoint(ctx, in.EndpointID, in.FailingSince, in.Window)
	if err != nil {
		return false, err
	}
	n, err := a.DB.PendingDisabledNotice(ctx, in.EndpointID)
	if err != nil || n == nil {
		return disabled, err
	}
	if len(n.AdminEmails) > 0 {
		if err := a.Mailer.SendEndpointDisabled(ctx, mail.EndpointDisabled{
			To: n.AdminEmails, EndpointID: n.EndpointID, URL: n.URL, Mode: string(n.Mode), FailingSince: in.FailingSince,
			Link: strings.TrimRight(a.PortalURL, "/") + "/dashboard/#/endpoints",
		}); err != nil {
			return false, err
		}
	}
	return true, a.DB.MarkDisabledNoticeSent(ctx, n.EventID)
}
