package postgres

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// SSOLoginState is a sign-in under way, kept between the redirect to the IdP and its answer.
// Only hashes of the state and of the browser binding are stored.
type SSOLoginState struct {
	StateHash     []byte
	BindingHash   []byte
	ConnectionID  string
	Purpose       string // "sign_in" or "test"
	Nonce         string
	PKCEVerifier  string
	SAMLRequestID string
	ExpiresAt     time.Time
}

// The purposes of a sign-in through a connection.
const (
	SSOPurposeSignIn = "sign_in"
	SSOPurposeTest   = "test"
)

// CreateSSOLoginState stores a sign-in under way, and clears states long expired.
func (db *DB) CreateSSOLoginState(ctx context.Context, s SSOLoginState) error {
	_, err := db.pool.Exec(ctx, `
		WITH stale AS (DELETE FROM sso_login_states WHERE expires_at < now() - interval '1 day')
		INSERT INTO sso_login_states (state_hash, binding_hash, connection_id, purpose, nonce, pkce_verifier,
			saml_request_id, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		s.StateHash, s.BindingHash, s.ConnectionID, s.Purpose, s.Nonce, s.PKCEVerifier, s.SAMLRequestID, s.ExpiresAt)
	return err
}

var errUnknownState = &bgcheck.Error{Code: bgcheck.CodeSSOFailed,
	Detail: "this sign-in is unknown, already used or expired: start again from the sign-in page"}

// ConsumeSSOLoginState spends a state: once only, before it expires, from the browser that
// started it (its binding cookie), and for the connection whose route received the answer.
func (db *DB) ConsumeSSOLoginState(ctx context.Context, stateHash, bindingHash []byte, connectionID string) (*SSOLoginState, error) {
	var s SSOLoginState
	err := db.pool.QueryRow(ctx, `
		UPDATE sso_login_states SET consumed_at = now()
		WHERE state_hash = $1 AND consumed_at IS NULL AND expires_at > now()
		RETURNING state_hash, binding_hash, connection_id, purpose, nonce, pkce_verifier, saml_request_id, expires_at`,
		stateHash).Scan(&s.StateHash, &s.BindingHash, &s.ConnectionID, &s.Purpose, &s.Nonce, &s.PKCEVerifier,
		&s.SAMLRequestID, &s.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errUnknownState
	}
	if err != nil {
		return nil, err
	}
	if s.ConnectionID != connectionID {
		return nil, errUnknownState
	}
	if subtle.ConstantTimeCompare(s.BindingHash, bindingHash) != 1 {
		return nil, &bgcheck.Error{Code: bgcheck.CodeSSOFailed,
			Detail: "this sign-in was started in another browser (or its cookie was lost): start again here"}
	}
	return &s, nil
}

// RecordSAMLAssertion remembers an assertion id until it could no longer be accepted anyway. An
// id seen before is a replay: bgcheck.CodeSSOFailed.
func (db *DB) RecordSAMLAssertion(ctx context.Context, connectionID, assertionID string, until time.Time) error {
	tag, err := db.pool.Exec(ctx, `
		WITH stale AS (DELETE FROM sso_assertions WHERE connection_id = $1 AND expires_at < now())
		INSERT INTO sso_assertions (connection_id, assertion_id, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, connectionID, assertionID, until)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: "this SAML assertion was presented before: a replayed response is refused"}
	}
	return nil
}

// SSOSignIn says which user an identity became and how.
type SSOSignIn struct {
	User *bgcheck.User
	// How is "identity" (known subject), "linked" (an existing admin of the account with the
	// e-mail) or "created" (just in time).
	How string
}

// errNotAnAdminHere refuses an identity that neither is nor may become an admin of the
// connection's account. Whether the e-mail belongs to someone elsewhere in the service (a
// consumer, another account's admin) or to nobody, it reads the same: the service does not say
// who its users are.
var errNotAnAdminHere = &bgcheck.Error{Code: bgcheck.CodeSSOFailed,
	Detail: "this identity is not an admin of the account and cannot become one by signing in: ask one of its admins to invite you"}

// SignInWithSSO finds the admin an identity belongs to: by (connection, subject); else an admin
// of the connection's account with the same e-mail, who is linked to the identity; else, when
// the connection provisions just in time, a new admin of that account. A user of another
// account, or a consumer, with the e-mail is never the answer. The caller has checked that the
// e-mail is verified and in the connection's domains.
//
// Two first sign-ins of one person at once both find nobody and both create: the loser's
// transaction fails on a unique key and runs again, finding what the winner made.
func (db *DB) SignInWithSSO(ctx context.Context, conn *bgcheck.SSOConnection, id bgcheck.SSOIdentity) (*SSOSignIn, error) {
	for attempt := 0; ; attempt++ {
		out, err := db.signInWithSSO(ctx, conn, id)
		if attempt < 2 && (bgcheck.ErrorCode(err) == bgcheck.CodeEmailTaken || isUniqueViolation(err, "sso_identities_pkey")) {
			continue
		}
		return out, err
	}
}

func (db *DB) signInWithSSO(ctx context.Context, conn *bgcheck.SSOConnection, id bgcheck.SSOIdentity) (*SSOSignIn, error) {
	var out *SSOSignIn
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		out = nil
		var u bgcheck.User
		err := tx.QueryRow(ctx, `SELECT u.id, u.account_id, u.email, u.name, u.role, u.created_at
			FROM sso_identities i JOIN users u ON u.id = i.user_id
			WHERE i.connection_id = $1 AND i.subject = $2 FOR UPDATE OF i`, conn.ID, id.Subject).
			Scan(&u.ID, &u.AccountID, &u.Email, &u.Name, &u.Role, &u.CreatedAt)
		switch {
		case err == nil:
			if u.Role != bgcheck.RoleAdmin || u.AccountID == nil || *u.AccountID != conn.AccountID {
				return &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: "this identity's user is no longer an admin of the account"}
			}
			out = &SSOSignIn{User: &u, How: "identity"}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		default:
			err = tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE lower(email) = lower($1) FOR UPDATE`, id.Email).
				Scan(&u.ID, &u.AccountID, &u.Email, &u.Name, &u.Role, &u.CreatedAt)
			switch {
			case err == nil:
				if u.Role != bgcheck.RoleAdmin || u.AccountID == nil || *u.AccountID != conn.AccountID {
					return errNotAnAdminHere
				}
				out = &SSOSignIn{User: &u, How: "linked"}
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			case !conn.JITProvisioning:
				return errNotAnAdminHere
			default:
				created, err := createUser(ctx, tx, NewUser{AccountID: conn.AccountID, Email: id.Email, Name: id.Name, Role: bgcheck.RoleAdmin})
				if err != nil {
					return err
				}
				out = &SSOSignIn{User: created, How: "created"}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO sso_identities (connection_id, subject, user_id) VALUES ($1, $2, $3)`,
				conn.ID, id.Subject, out.User.ID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE sso_identities SET last_sign_in_at = now() WHERE connection_id = $1 AND subject = $2`,
			conn.ID, id.Subject); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE sso_connections SET last_sign_in_at = now() WHERE id = $1`, conn.ID)
		return err
	})
	return out, err
}

// PreviewSSOSignIn says what SignInWithSSO would do with an identity, changing nothing: for a
// connection's test.
func (db *DB) PreviewSSOSignIn(ctx context.Context, conn *bgcheck.SSOConnection, id bgcheck.SSOIdentity) (string, error) {
	var how string
	err := db.pool.QueryRow(ctx, `
		SELECT CASE
			WHEN EXISTS (SELECT 1 FROM sso_identities WHERE connection_id = $1 AND subject = $2) THEN 'identity'
			WHEN EXISTS (SELECT 1 FROM users WHERE lower(email) = lower($3) AND role = 'admin' AND account_id = $4) THEN 'linked'
			WHEN EXISTS (SELECT 1 FROM users WHERE lower(email) = lower($3)) THEN 'refused'
			WHEN $5 THEN 'created'
			ELSE 'refused' END`, conn.ID, id.Subject, id.Email, conn.AccountID, conn.JITProvisioning).Scan(&how)
	return how, err
}

// CreateSSOGrant stores the one-time code a finished sign-in hands the dashboard, bound to the
// browser it was handed to.
func (db *DB) CreateSSOGrant(ctx context.Context, codeHash, bindingHash []byte, userID, connectionID string, expiresAt time.Time) error {
	_, err := db.pool.Exec(ctx, `
		WITH stale AS (DELETE FROM sso_grants WHERE expires_at < now() - interval '1 day')
		INSERT INTO sso_grants (code_hash, binding_hash, user_id, connection_id, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		codeHash, bindingHash, userID, connectionID, expiresAt)
	return err
}

// UseSSOGrant spends a one-time code: once, before it expires, in the browser it was handed to
// (another browser's attempt spends it too). It returns the user and the connection they signed
// in through.
func (db *DB) UseSSOGrant(ctx context.Context, codeHash, bindingHash []byte) (*bgcheck.User, string, error) {
	var u bgcheck.User
	var conn string
	var binding []byte
	err := db.pool.QueryRow(ctx, `
		WITH spent AS (
			UPDATE sso_grants SET used_at = now()
			WHERE code_hash = $1 AND used_at IS NULL AND expires_at > now()
			RETURNING user_id, connection_id, binding_hash
		)
		SELECT u.id, u.account_id, u.email, u.name, u.role, u.created_at, spent.connection_id, spent.binding_hash
		FROM spent JOIN users u ON u.id = spent.user_id`, codeHash).
		Scan(&u.ID, &u.AccountID, &u.Email, &u.Name, &u.Role, &u.CreatedAt, &conn, &binding)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: "this sign-in code is unknown, used or expired: sign in again"}
	}
	if err != nil {
		return nil, "", err
	}
	if subtle.ConstantTimeCompare(binding, bindingHash) != 1 {
		return nil, "", &bgcheck.Error{Code: bgcheck.CodeSSOFailed,
			Detail: "this sign-in code was handed to another browser: sign in again here"}
	}
	return &u, conn, nil
}

// SSOSessionValid reports whether a session signed in through a connection may go on: the
// connection is still enabled and the user still has an identity under it.
func (db *DB) SSOSessionValid(ctx context.Context, userID, connectionID string) (bool, error) {
	var ok bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sso_identities i JOIN sso_connections c ON c.id = i.connection_id
		WHERE i.user_id = $1 AND i.connection_id = $2 AND c.enabled)`, userID, connectionID).Scan(&ok)
	return ok, err
}

// FindSSOEnforcement returns the account's SSO requirement.
func (db *DB) FindSSOEnforcement(ctx context.Context, accountID string) (*bgcheck.SSOEnforcement, error) {
	var e bgcheck.SSOEnforcement
	err := db.pool.QueryRow(ctx, `SELECT sso_required, sso_break_glass_user_id FROM accounts WHERE id = $1`, accountID).
		Scan(&e.Required, &e.BreakGlassUserID)
	return &e, notFound(err)
}

// SSOBreakGlassCandidate is an admin who could be the account's break-glass admin: one with a
// password.
type SSOBreakGlassCandidate struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

// ListSSOBreakGlassCandidates lists the account's admins who have a password, by e-mail.
func (db *DB) ListSSOBreakGlassCandidates(ctx context.Context, accountID string) ([]SSOBreakGlassCandidate, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, email FROM users
		WHERE account_id = $1 AND role = 'admin' AND password_hash IS NOT NULL ORDER BY lower(email), id`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[SSOBreakGlassCandidate])
}

// SetSSOEnforcement changes the account's requirement. Requiring SSO needs an enabled
// connection with a verified domain through which a sign-in has succeeded
// (bgcheck.CodeSSONotVerified), a break-glass user who is an admin of the account with a
// password, and every other admin's e-mail domain verified by an enabled connection (a
// validation error on required names those it would lock out).
func (db *DB) SetSSOEnforcement(ctx context.Context, accountID string, e bgcheck.SSOEnforcement) error {
	return db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, accountID); err != nil {
			return err
		}
		if e.BreakGlassUserID != nil {
			var ok bool
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE id = $1 AND account_id = $2
				AND role = 'admin' AND password_hash IS NOT NULL)`, *e.BreakGlassUserID, accountID).Scan(&ok)
			if err != nil {
				return err
			}
			if !ok {
				return bgcheck.ValidationError(bgcheck.FieldError{Field: "break_glass_user_id",
					Message: "must be an admin of this account who has a password"})
			}
		}
		if e.Required {
			var verified bool
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sso_connections c JOIN sso_domains d ON d.connection_id = c.id
				WHERE c.account_id = $1 AND c.enabled AND d.verified_at IS NOT NULL AND c.last_sign_in_at IS NOT NULL)`,
				accountID).Scan(&verified)
			if err != nil {
				return err
			}
			if !verified {
				return bgcheck.Errorf(bgcheck.CodeSSONotVerified,
					"sign in through an enabled SSO connection with a verified domain once before requiring it, so nobody is locked out")
			}
			if e.BreakGlassUserID == nil {
				return bgcheck.ValidationError(bgcheck.FieldError{Field: "break_glass_user_id",
					Message: "is required when SSO is required: the admin who may still sign in with a password"})
			}
			stranded, err := adminsWithoutSSO(ctx, tx, accountID, e.BreakGlassUserID)
			if err != nil {
				return err
			}
			if len(stranded) > 0 {
				return bgcheck.ValidationError(bgcheck.FieldError{Field: "required", Message: "cannot be turned on while " +
					strings.Join(stranded, ", ") + " would be locked out: no enabled connection verified their e-mail's domain. " +
					"Add and verify the domain, or remove them as admins, first"})
			}
		}
		_, err := tx.Exec(ctx, `UPDATE accounts SET sso_required = $2, sso_break_glass_user_id = $3 WHERE id = $1`,
			accountID, e.Required, e.BreakGlassUserID)
		return err
	})
}

// SSORequiredFor reports whether a user must sign in through SSO: an admin of an account that
// requires it, other than its break-glass admin.
func (db *DB) SSORequiredFor(ctx context.Context, userID string) (bool, error) {
	var required bool
	err := db.pool.QueryRow(ctx, `
		SELECT coalesce(a.sso_required AND u.role = 'admin' AND a.sso_break_glass_user_id IS DISTINCT FROM u.id, false)
		FROM users u LEFT JOIN accounts a ON a.id = u.account_id WHERE u.id = $1`, userID).Scan(&required)
	return required, notFound(err)
}
