package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// DueSAMLMetadataRefreshes lists (up to limit) the connections whose metadata came from a URL
// and is due to be fetched again, the longest overdue first.
func (db *DB) DueSAMLMetadataRefreshes(ctx context.Context, limit int) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT id FROM sso_connections
		WHERE saml_idp_metadata_url IS NOT NULL AND coalesce(saml_metadata_next_refresh_at, '-infinity') <= now()
		ORDER BY saml_metadata_next_refresh_at NULLS FIRST, id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// SAMLMetadataRefresh is a connection's metadata refresh claimed by one worker.
type SAMLMetadataRefresh struct {
	ConnectionID string
	URL          string
	// EntityID is the IdP's entity id in the stored metadata.
	EntityID string
	// Failures counts the refreshes that failed in a row before this one.
	Failures int
}

// ClaimSAMLMetadataRefresh takes a due refresh of the connection's metadata for lease: until
// then no other claim succeeds, and when the claimer dies the refresh is due again after it.
// It returns nil when the refresh is not (or no longer) due, or the metadata is pasted XML.
func (db *DB) ClaimSAMLMetadataRefresh(ctx context.Context, connectionID string, lease time.Duration) (*SAMLMetadataRefresh, error) {
	r := SAMLMetadataRefresh{ConnectionID: connectionID}
	err := db.pool.QueryRow(ctx, `UPDATE sso_connections SET saml_metadata_next_refresh_at = now() + $2::interval
		WHERE id = $1 AND saml_idp_metadata_url IS NOT NULL AND coalesce(saml_metadata_next_refresh_at, '-infinity') <= now()
		RETURNING saml_idp_metadata_url, coalesce(saml_idp_entity_id, ''), saml_metadata_refresh_failures`, connectionID, lease).
		Scan(&r.URL, &r.EntityID, &r.Failures)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// FetchedSAMLMetadata is metadata fetched again from a connection's URL, read and checked.
type FetchedSAMLMetadata struct {
	URL         string // the URL it came from: a connection pointed elsewhere meanwhile keeps its own
	XML         string
	EntityID    string
	ValidUntil  *time.Time
	NextRefresh time.Time
}

// SaveSAMLMetadata records metadata fetched again from the connection's URL and forgets the
// failures before it. Metadata naming another entity id is another IdP, whose subjects are other
// people: as when an admin points the connection elsewhere, the identities made under the old
// one are forgotten, and a sign-in must work again before SSO can be required anew. It reports
// false, storing nothing, when the connection no longer takes its metadata from m.URL (an admin
// changed it while it was fetched) or is gone.
func (db *DB) SaveSAMLMetadata(ctx context.Context, connectionID string, m FetchedSAMLMetadata) (bool, error) {
	saved := false
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var entityID *string
		err := tx.QueryRow(ctx, `SELECT saml_idp_entity_id FROM sso_connections WHERE id = $1 AND saml_idp_metadata_url = $2
			FOR UPDATE`, connectionID, m.URL).Scan(&entityID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if entityID == nil || *entityID != m.EntityID {
			if _, err := tx.Exec(ctx, `DELETE FROM sso_identities WHERE connection_id = $1`, connectionID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE sso_connections SET last_sign_in_at = NULL WHERE id = $1`, connectionID); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE sso_connections SET saml_idp_metadata_xml = $2, saml_idp_entity_id = $3,
				saml_metadata_valid_until = $4, saml_metadata_fetched_at = now(), saml_metadata_next_refresh_at = $5,
				saml_metadata_refresh_failures = 0, saml_metadata_refresh_failed_at = NULL, saml_metadata_refresh_error = NULL,
				updated_at = now()
			WHERE id = $1`, connectionID, m.XML, m.EntityID, m.ValidUntil, m.NextRefresh)
		saved = err == nil
		return err
	})
	return saved, err
}

// RecordSAMLMetadataFailure records a failed refresh of the connection's metadata from url:
// when, why in our words (the connection shows it), and when to try again. The stored metadata
// stays in use while it is valid.
func (db *DB) RecordSAMLMetadataFailure(ctx context.Context, connectionID, url, reason string, retryAt time.Time) error {
	_, err := db.pool.Exec(ctx, `UPDATE sso_connections SET saml_metadata_refresh_failures = saml_metadata_refresh_failures + 1,
			saml_metadata_refresh_failed_at = now(), saml_metadata_refresh_error = $3, saml_metadata_next_refresh_at = $4
		WHERE id = $1 AND saml_idp_metadata_url = $2`, connectionID, url, reason, retryAt)
	return err
}
