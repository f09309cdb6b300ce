package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// NewSSOConnection is a connection to create. For OIDC the issuer, client id and secret are
// set; for SAML the IdP's metadata (and its URL when it was fetched from one).
type NewSSOConnection struct {
	AccountID       string
	Protocol        bgcheck.SSOProtocol
	Name            string
	Enabled         bool
	JITProvisioning bool
	Domains         []string

	OIDCIssuer, OIDCClientID, OIDCClientSecret string

	SAMLIdPEntityID, SAMLIdPMetadataXML, SAMLIdPMetadataURL string
	SAMLMetadataValidUntil                                  *time.Time
	// SAMLMetadataNextRefresh is when metadata from a URL is next fetched again.
	SAMLMetadataNextRefresh *time.Time
	SAMLAllowIdPInitiated   bool
}

// SSOConnectionUpdate changes the fields that are set; Domains, when set, replaces them all.
type SSOConnectionUpdate struct {
	Name            *string
	Enabled         *bool
	JITProvisioning *bool
	Domains         *[]string

	OIDCIssuer, OIDCClientID, OIDCClientSecret *string

	// SAMLIdPMetadataXML and the entity id and validity read from it change together.
	SAMLIdPMetadataXML     *string
	SAMLIdPEntityID        *string
	SAMLIdPMetadataURL     *string // "" forgets the URL (metadata pasted as XML)
	SAMLMetadataValidUntil *time.Time
	// SAMLMetadataNextRefresh goes with new metadata from a URL (nil for pasted XML); new
	// metadata forgets the failures of earlier refreshes.
	SAMLMetadataNextRefresh *time.Time
	SAMLAllowIdPInitiated   *bool
}

const ssoConnectionColumns = `c.id, c.account_id, c.protocol, c.name, c.enabled, c.jit_provisioning,
	coalesce(c.oidc_issuer, ''), coalesce(c.oidc_client_id, ''), c.oidc_client_secret IS NOT NULL,
	coalesce(c.saml_idp_entity_id, ''), coalesce(c.saml_idp_metadata_xml, ''), coalesce(c.saml_idp_metadata_url, ''),
	c.saml_metadata_fetched_at, c.saml_metadata_valid_until, c.saml_allow_idp_initiated,
	c.saml_metadata_next_refresh_at, c.saml_metadata_refresh_failed_at, c.saml_metadata_refresh_error,
	c.last_sign_in_at, c.last_test_at, c.last_test_ok, c.last_test_detail, c.created_at, c.updated_at,
	coalesce((SELECT json_agg(json_build_object('domain', d.domain, 'token', d.verification_token,
		'verified_at', d.verified_at) ORDER BY d.domain) FROM sso_domains d WHERE d.connection_id = c.id), '[]')`

// ssoDomainRow is a domain claim as the connection query aggregates it.
type ssoDomainRow struct {
	Domain     string     `json:"domain"`
	Token      string     `json:"token"`
	VerifiedAt *time.Time `json:"verified_at"`
}

func scanSSOConnection(row pgx.CollectableRow) (*bgcheck.SSOConnection, error) {
	var c bgcheck.SSOConnection
	var claims []ssoDomainRow
	err := row.Scan(&c.ID, &c.AccountID, &c.Protocol, &c.Name, &c.Enabled, &c.JITProvisioning,
		&c.OIDCIssuer, &c.OIDCClientID, &c.OIDCClientSecretSet,
		&c.SAMLIdPEntityID, &c.SAMLIdPMetadataXML, &c.SAMLIdPMetadataURL,
		&c.SAMLMetadataFetchedAt, &c.SAMLMetadataValidTill, &c.SAMLAllowIdPInitiated,
		&c.SAMLMetadataNextRefresh, &c.SAMLMetadataRefreshFailedAt, &c.SAMLMetadataRefreshError,
		&c.LastSignInAt, &c.LastTestAt, &c.LastTestOK, &c.LastTestDetail, &c.CreatedAt, &c.UpdatedAt, &claims)
	c.Domains = make([]string, len(claims))
	for i, d := range claims {
		c.Domains[i] = d.Domain
		c.DomainClaims = append(c.DomainClaims, bgcheck.SSODomain{Domain: d.Domain, Token: d.Token, VerifiedAt: d.VerifiedAt})
	}
	return &c, err
}

func oneSSOConnection(rows pgx.Rows, err error) (*bgcheck.SSOConnection, error) {
	if err != nil {
		return nil, err
	}
	c, err := pgx.CollectExactlyOneRow(rows, scanSSOConnection)
	return c, notFound(err)
}

// CreateSSOConnection stores a connection with its domain claims, each pending until verified.
// A domain another connection has verified is bgcheck.CodeDomainTaken; a second connection of the same protocol in one account is a
// validation error on protocol.
func (db *DB) CreateSSOConnection(ctx context.Context, n NewSSOConnection) (*bgcheck.SSOConnection, error) {
	id := bgcheck.NewID(bgcheck.PrefixSSOConnection)
	var keyID *string
	var sealed []byte
	if n.OIDCClientSecret != "" {
		k, s, err := db.sealSSOSecret(id, n.OIDCClientSecret)
		if err != nil {
			return nil, err
		}
		keyID, sealed = &k, s
	}
	var fetchedAt *time.Time
	if n.SAMLIdPMetadataURL != "" {
		now := time.Now()
		fetchedAt = &now
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO sso_connections (id, account_id, protocol, name, enabled, jit_provisioning,
				oidc_issuer, oidc_client_id, oidc_client_secret, oidc_client_secret_key_id,
				saml_idp_entity_id, saml_idp_metadata_xml, saml_idp_metadata_url,
				saml_metadata_fetched_at, saml_metadata_valid_until, saml_allow_idp_initiated, saml_metadata_next_refresh_at)
			VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''), nullif($8, ''), $9, $10,
				nullif($11, ''), nullif($12, ''), nullif($13, ''), $14, $15, $16, $17)`,
			id, n.AccountID, n.Protocol, n.Name, n.Enabled, n.JITProvisioning,
			n.OIDCIssuer, n.OIDCClientID, sealed, keyID,
			n.SAMLIdPEntityID, n.SAMLIdPMetadataXML, n.SAMLIdPMetadataURL, fetchedAt, n.SAMLMetadataValidUntil,
			n.SAMLAllowIdPInitiated, n.SAMLMetadataNextRefresh)
		if isUniqueViolation(err, "sso_connections_account_id_protocol_key") {
			return bgcheck.ValidationError(bgcheck.FieldError{Field: "protocol",
				Message: fmt.Sprintf("this account already has a %s connection; change that one", n.Protocol)})
		}
		if err != nil {
			return err
		}
		return setSSODomains(ctx, tx, id, n.Domains)
	})
	if err != nil {
		return nil, err
	}
	return db.FindSSOConnection(ctx, n.AccountID, id)
}

// setSSODomains makes domains the connection's claims: a claim it keeps keeps its token and
// verification, a new one starts pending with a fresh token.
func setSSODomains(ctx context.Context, tx pgx.Tx, connectionID string, domains []string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM sso_domains WHERE connection_id = $1 AND NOT domain = ANY($2)`,
		connectionID, domains); err != nil {
		return err
	}
	for _, d := range domains {
		var taken bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sso_domains WHERE domain = $1 AND verified_at IS NOT NULL
			AND connection_id <> $2)`, d, connectionID).Scan(&taken)
		if err != nil {
			return err
		}
		if taken {
			return bgcheck.Errorf(bgcheck.CodeDomainTaken, "the domain %s belongs to another SSO connection", d)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sso_domains (connection_id, domain, verification_token) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, connectionID, d, newDomainToken()); err != nil {
			return err
		}
	}
	return nil
}

// newDomainToken is a claim's random token, published by the domain's owner in DNS.
func newDomainToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// VerifySSODomain records that the connection proved it holds domain. A domain another
// connection verified first is bgcheck.CodeDomainTaken.
func (db *DB) VerifySSODomain(ctx context.Context, connectionID, domain string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE sso_domains SET verified_at = now()
		WHERE connection_id = $1 AND domain = $2 AND verified_at IS NULL`, connectionID, domain)
	if isUniqueViolation(err, "sso_domains_verified_key") {
		return bgcheck.Errorf(bgcheck.CodeDomainTaken, "the domain %s was verified by another SSO connection first", domain)
	}
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return bgcheck.ErrNotFound
	}
	return nil
}

// ListSSOConnections returns the account's connections, oldest first.
func (db *DB) ListSSOConnections(ctx context.Context, accountID string) ([]*bgcheck.SSOConnection, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+ssoConnectionColumns+` FROM sso_connections c
		WHERE c.account_id = $1 ORDER BY c.created_at, c.id`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanSSOConnection)
}

// FindSSOConnection returns one of the account's connections.
func (db *DB) FindSSOConnection(ctx context.Context, accountID, id string) (*bgcheck.SSOConnection, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+ssoConnectionColumns+` FROM sso_connections c
		WHERE c.account_id = $1 AND c.id = $2`, accountID, id)
	return oneSSOConnection(rows, err)
}

// FindSSOConnectionByID returns a connection whatever its account: for the protocol routes,
// where the identity provider, not a signed-in admin, names it.
func (db *DB) FindSSOConnectionByID(ctx context.Context, id string) (*bgcheck.SSOConnection, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+ssoConnectionColumns+` FROM sso_connections c WHERE c.id = $1`, id)
	return oneSSOConnection(rows, err)
}

// FindSSOConnectionByDomain returns the connection that verified an e-mail domain.
func (db *DB) FindSSOConnectionByDomain(ctx context.Context, domain string) (*bgcheck.SSOConnection, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+ssoConnectionColumns+` FROM sso_connections c
		JOIN sso_domains d ON d.connection_id = c.id WHERE d.domain = lower($1) AND d.verified_at IS NOT NULL`, domain)
	return oneSSOConnection(rows, err)
}

// UpdateSSOConnection changes a connection. Disabling the account's last enabled connection
// while the account requires SSO is refused with bgcheck.CodeSSOInUse: nobody but the
// break-glass admin could sign in.
func (db *DB) UpdateSSOConnection(ctx context.Context, accountID, id string, u SSOConnectionUpdate) (*bgcheck.SSOConnection, error) {
	var keyID *string
	var sealed []byte
	if u.OIDCClientSecret != nil {
		k, s, err := db.sealSSOSecret(id, *u.OIDCClientSecret)
		if err != nil {
			return nil, err
		}
		keyID, sealed = &k, s
	}
	var fetchedAt *time.Time
	if u.SAMLIdPMetadataURL != nil && *u.SAMLIdPMetadataURL != "" {
		now := time.Now()
		fetchedAt = &now
	}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// Another identity provider's subjects mean other people: identities made under the
		// old issuer or entity id are forgotten, and a sign-in must work again before SSO can
		// be required.
		if _, err := tx.Exec(ctx, `
			WITH changed AS (
				UPDATE sso_connections SET last_sign_in_at = NULL
				WHERE account_id = $1 AND id = $2 AND (oidc_issuer IS DISTINCT FROM coalesce($3, oidc_issuer)
					OR saml_idp_entity_id IS DISTINCT FROM coalesce($4, saml_idp_entity_id))
				RETURNING id)
			DELETE FROM sso_identities WHERE connection_id IN (SELECT id FROM changed)`,
			accountID, id, u.OIDCIssuer, u.SAMLIdPEntityID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			UPDATE sso_connections SET
				name = coalesce($3, name),
				enabled = coalesce($4, enabled),
				jit_provisioning = coalesce($5, jit_provisioning),
				oidc_issuer = coalesce($6, oidc_issuer),
				oidc_client_id = coalesce($7, oidc_client_id),
				oidc_client_secret = coalesce($8, oidc_client_secret),
				oidc_client_secret_key_id = coalesce($9, oidc_client_secret_key_id),
				saml_idp_metadata_xml = coalesce($10, saml_idp_metadata_xml),
				saml_idp_entity_id = coalesce($11, saml_idp_entity_id),
				saml_idp_metadata_url = CASE WHEN $12::text IS NULL THEN saml_idp_metadata_url ELSE nullif($12, '') END,
				saml_metadata_fetched_at = CASE WHEN $12::text IS NULL THEN saml_metadata_fetched_at ELSE $13 END,
				saml_metadata_valid_until = CASE WHEN $10::text IS NULL THEN saml_metadata_valid_until ELSE $14 END,
				saml_metadata_next_refresh_at = CASE WHEN $10::text IS NULL THEN saml_metadata_next_refresh_at ELSE $16 END,
				saml_metadata_refresh_failures = CASE WHEN $10::text IS NULL THEN saml_metadata_refresh_failures ELSE 0 END,
				saml_metadata_refresh_failed_at = CASE WHEN $10::text IS NULL THEN saml_metadata_refresh_failed_at END,
				saml_metadata_refresh_error = CASE WHEN $10::text IS NULL THEN saml_metadata_refresh_error END,
				saml_allow_idp_initiated = coalesce($15, saml_allow_idp_initiated),
				updated_at = now()
			WHERE account_id = $1 AND id = $2`,
			accountID, id, u.Name, u.Enabled, u.JITProvisioning, u.OIDCIssuer, u.OIDCClientID, sealed, keyID,
			u.SAMLIdPMetadataXML, u.SAMLIdPEntityID, u.SAMLIdPMetadataURL, fetchedAt, u.SAMLMetadataValidUntil,
			u.SAMLAllowIdPInitiated, u.SAMLMetadataNextRefresh)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return bgcheck.ErrNotFound
		}
		if u.Domains != nil {
			if err := setSSODomains(ctx, tx, id, *u.Domains); err != nil {
				return err
			}
		}
		return ssoStillReachable(ctx, tx, accountID)
	})
	if err != nil {
		return nil, err
	}
	return db.FindSSOConnection(ctx, accountID, id)
}

// DeleteSSOConnection removes a connection, its domains and its identities; refused like a
// disable while the account requires SSO and it is the last enabled connection.
func (db *DB) DeleteSSOConnection(ctx context.Context, accountID, id string) error {
	return db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM sso_connections WHERE account_id = $1 AND id = $2`, accountID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return bgcheck.ErrNotFound
		}
		return ssoStillReachable(ctx, tx, accountID)
	})
}

// ssoStillReachable refuses a change that leaves an admin who must sign in through SSO without
// an enabled connection that verified their e-mail's domain. It locks the account row, as
// SetSSOEnforcement does, so the two cannot pass each other.
func ssoStillReachable(ctx context.Context, tx pgx.Tx, accountID string) error {
	var required bool
	var breakGlass *string
	err := tx.QueryRow(ctx, `SELECT sso_required, sso_break_glass_user_id FROM accounts WHERE id = $1 FOR UPDATE`, accountID).
		Scan(&required, &breakGlass)
	if err != nil || !required {
		return notFound(err)
	}
	stranded, err := adminsWithoutSSO(ctx, tx, accountID, breakGlass)
	if err != nil {
		return err
	}
	if len(stranded) > 0 {
		return bgcheck.Errorf(bgcheck.CodeSSOInUse, "the account requires SSO, and after this change %s could not sign in: "+
			"turn the requirement off first, or keep a connection that verified their domain enabled", strings.Join(stranded, ", "))
	}
	return nil
}

// adminsWithoutSSO lists (up to five) e-mails of the account's admins, other than breakGlass,
// whose domain no enabled connection of the account has verified: those SSO cannot let in.
func adminsWithoutSSO(ctx context.Context, tx pgx.Tx, accountID string, breakGlass *string) ([]string, error) {
	rows, err := tx.Query(ctx, `
		SELECT u.email FROM users u
		WHERE u.account_id = $1 AND u.role = 'admin' AND u.id IS DISTINCT FROM $2
			AND NOT EXISTS (SELECT 1 FROM sso_connections c JOIN sso_domains d ON d.connection_id = c.id
				WHERE c.account_id = $1 AND c.enabled AND d.verified_at IS NOT NULL
					AND d.domain = lower(substring(u.email from '@([^@]*)$')))
		ORDER BY u.email LIMIT 5`, accountID, breakGlass)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// OpenOIDCClientSecret returns a connection's client secret in the clear, for the code exchange.
func (db *DB) OpenOIDCClientSecret(ctx context.Context, id string) (string, error) {
	var keyID *string
	var sealed []byte
	err := db.pool.QueryRow(ctx, `SELECT oidc_client_secret_key_id, oidc_client_secret FROM sso_connections WHERE id = $1`, id).
		Scan(&keyID, &sealed)
	if err != nil {
		return "", notFound(err)
	}
	if sealed == nil || keyID == nil {
		return "", nil
	}
	if db.secrets == nil {
		return "", errNoSecretBox
	}
	plain, err := db.secrets.Open(*keyID, sealed, ssoSecretContext(id))
	if err != nil {
		return "", fmt.Errorf("postgres: client secret of SSO connection %s: %w", id, err)
	}
	return string(plain), nil
}

func (db *DB) sealSSOSecret(id, secret string) (string, []byte, error) {
	if db.secrets == nil {
		return "", nil, errNoSecretBox
	}
	return db.secrets.Seal([]byte(secret), ssoSecretContext(id))
}

// ResealSSOSecrets seals again, under the current key, every OIDC client secret sealed under
// another: part of a key rotation. It returns how many it changed.
func (db *DB) ResealSSOSecrets(ctx context.Context) (int, error) {
	if db.secrets == nil {
		return 0, errNoSecretBox
	}
	n := 0
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, oidc_client_secret_key_id, oidc_client_secret FROM sso_connections
			WHERE oidc_client_secret IS NOT NULL AND oidc_client_secret_key_id <> $1 FOR UPDATE`, db.secrets.CurrentKeyID())
		if err != nil {
			return err
		}
		type row struct {
			ID     string
			KeyID  string
			Sealed []byte
		}
		stale, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
		if err != nil {
			return err
		}
		for _, r := range stale {
			plain, err := db.secrets.Open(r.KeyID, r.Sealed, ssoSecretContext(r.ID))
			if err != nil {
				return fmt.Errorf("postgres: client secret of SSO connection %s: %w", r.ID, err)
			}
			keyID, sealed, err := db.sealSSOSecret(r.ID, string(plain))
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE sso_connections SET oidc_client_secret = $2, oidc_client_secret_key_id = $3
				WHERE id = $1`, r.ID, sealed, keyID); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// ssoSecretContext binds a sealed client secret to its connection, apart from endpoint secrets.
func ssoSecretContext(id string) []byte { return []byte("sso-client-secret:" + id) }

// RecordSSOTest remembers the outcome of a connection's last test, for its settings page.
func (db *DB) RecordSSOTest(ctx context.Context, id string, ok bool, detail string) error {
	_, err := db.pool.Exec(ctx, `UPDATE sso_connections SET last_test_at = now(), last_test_ok = $2, last_test_detail = $3
		WHERE id = $1`, id, ok, detail)
	return err
}
