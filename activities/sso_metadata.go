package activities

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/sso"
)

// SSOMetadataBatch is how many connections one run of the metadata refresh takes on.
const SSOMetadataBatch = 50

// ssoMetadataLease is how long a claimed refresh is another worker's: longer than a fetch can
// take, so a refresh whose worker died is due again soon after.
const ssoMetadataLease = 5 * time.Minute

// SSOMetadata refreshes SAML connections' IdP metadata from their URLs, in the background.
type SSOMetadata struct {
	DB *postgres.DB
	// HTTP reaches identity providers through the address guard (sso.NewHTTPClient).
	HTTP *http.Client
	// Allowed are the operator's private networks where an IdP may be (and use plain http).
	Allowed []netip.Prefix
	Log     *slog.Logger
}

// DueSAMLMetadata lists the connections whose metadata is due to be fetched again.
func (a *SSOMetadata) DueSAMLMetadata(ctx context.Context) ([]string, error) {
	return a.DB.DueSAMLMetadataRefreshes(ctx, SSOMetadataBatch)
}

// Outcomes of RefreshSAMLMetadata.
const (
	MetadataRefreshed = "refreshed"
	MetadataFailed    = "failed"
	MetadataNotDue    = "not_due" // another run took it, or it changed meanwhile
)

// RefreshSAMLMetadata fetches a connection's metadata again, if it is still due, and stores it,
// or records why it could not (in our words; the library's in the log) and when to try again.
// The stored metadata stays in use until its validUntil either way. It fails only when the
// database does: an IdP that is down is an outcome, retried on the connection's own backoff.
func (a *SSOMetadata) RefreshSAMLMetadata(ctx context.Context, connectionID string) (string, error) {
	claim, err := a.DB.ClaimSAMLMetadataRefresh(ctx, connectionID, ssoMetadataLease)
	if err != nil || claim == nil {
		return MetadataNotDue, err
	}
	log := a.Log.With("connection_id", connectionID)
	now := time.Now()
	raw, md, err := sso.FetchIdPMetadata(ctx, a.HTTP, claim.URL, a.Allowed, now)
	if err != nil {
		failures := claim.Failures + 1
		retry := now.Add(sso.RefreshBackoff(failures))
		log.Warn("SSO: refreshing SAML metadata failed; the stored copy stays in use while valid",
			"failures", failures, "retry_at", retry, "err", err)
		return MetadataFailed, a.DB.RecordSAMLMetadataFailure(ctx, connectionID, claim.URL, sso.ReasonOf(err), retry)
	}
	m := postgres.FetchedSAMLMetadata{URL: claim.URL, XML: string(raw), EntityID: md.EntityID, NextRefresh: md.NextRefresh(now)}
	if !md.ValidUntil.IsZero() {
		m.ValidUntil = &md.ValidUntil
	}
	saved, err := a.DB.SaveSAMLMetadata(ctx, connectionID, m)
	if err != nil || !saved {
		return MetadataNotDue, err
	}
	if md.EntityID != claim.EntityID {
		log.Warn("SSO: the refreshed SAML metadata names another IdP; the identities made under the old one are forgotten",
			"old_entity_id", claim.EntityID, "entity_id", md.EntityID)
	}
	log.Info("SSO: SAML metadata refreshed", "next_refresh_at", m.NextRefresh)
	return MetadataRefreshed, nil
}
