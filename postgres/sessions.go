package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

const userColumns = `id, account_id, email, name, role, created_at`

// FindUserByEmail returns the user with the e-mail (in any case) and the stored password hash
// ("" when the user has none).
func (db *DB) FindUserByEmail(ctx context.Context, email string) (*bgcheck.User, string, error) {
	var hash *string
	var u bgcheck.User
	err := db.pool.QueryRow(ctx, `SELECT `+userColumns+`, password_hash FROM users WHERE lower(email) = lower($1)`, email).
		Scan(&u.ID, &u.AccountID, &u.Email, &u.Name, &u.Role, &u.CreatedAt, &hash)
	if err != nil {
		return nil, "", notFound(err)
	}
	if hash == nil {
		return &u, "", nil
	}
	return &u, *hash, nil
}

// FindUser returns the user with the id.
func (db *DB) FindUser(ctx context.Context, id string) (*bgcheck.User, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id)
	return collectOne[bgcheck.User](rows, err)
}

// StartSession records a new sign-in and its first refresh token.
func (db *DB) StartSession(ctx context.Context, sessionID, userID, refreshJTI string, refreshExpires time.Time) error {
	return db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sessions (id, user_id) VALUES ($1, $2)`, sessionID, userID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO refresh_tokens (jti, session_id, expires_at) VALUES ($1, $2, $3)`,
			refreshJTI, sessionID, refreshExpires)
		return err
	})
}

// ErrRefreshReused is returned by RotateRefresh when the refresh token had been used before: the
// session has been revoked, every token of it with it.
var ErrRefreshReused = bgcheck.Errorf(bgcheck.CodeRefreshTokenReused,
	"this refresh token was already used; the sign-in it belongs to has been revoked, sign in again")

var errSessionEnded = bgcheck.Errorf(bgcheck.CodeInvalidToken, "this sign-in has ended; sign in again")

// RotateRefresh retires refresh token oldJTI of sessionID and records newJTI in its place, in one
// transaction that locks the old token, so of two concurrent uses exactly one succeeds. Presenting
// a retired token again revokes the session (ErrRefreshReused); a token of a revoked session, or
// one never issued, is bgcheck.CodeInvalidToken.
func (db *DB) RotateRefresh(ctx context.Context, sessionID, oldJTI, newJTI string, newExpires time.Time) error {
	reused := false
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var usedAt, revokedAt *time.Time
		err := tx.QueryRow(ctx, `
			SELECT r.used_at, s.revoked_at FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id
			WHERE r.jti = $1 AND r.session_id = $2 FOR UPDATE OF r, s`, oldJTI, sessionID).Scan(&usedAt, &revokedAt)
		switch {
		case err == pgx.ErrNoRows:
			return errSessionEnded
		case err != nil:
			return err
		case revokedAt != nil:
			return errSessionEnded
		case usedAt != nil:
			// Replay: someone holds a copy of a retired token. End the whole sign-in, and commit that.
			reused = true
			_, err := tx.Exec(ctx, `UPDATE sessions SET revoked_at = now(), revoked_reason = 'refresh_token_reused' WHERE id = $1`, sessionID)
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE refresh_tokens SET used_at = now() WHERE jti = $1`, oldJTI); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO refresh_tokens (jti, session_id, expires_at) VALUES ($1, $2, $3)`, newJTI, sessionID, newExpires)
		return err
	})
	if err == nil && reused {
		return ErrRefreshReused
	}
	return err
}

// RevokeSession ends a sign-in (logout). Revoking twice keeps the first reason.
func (db *DB) RevokeSession(ctx context.Context, sessionID, reason string) error {
	_, err := db.pool.Exec(ctx, `UPDATE sessions SET revoked_at = coalesce(revoked_at, now()),
		revoked_reason = coalesce(revoked_reason, $2) WHERE id = $1`, sessionID, reason)
	return err
}

// FindSession returns a sign-in with its user's current account and role; an unknown session is
// bgcheck.ErrNotFound.
func (db *DB) FindSession(ctx context.Context, sessionID string) (*bgcheck.Session, error) {
	var s bgcheck.Session
	var account *string
	err := db.pool.QueryRow(ctx, `
		SELECT s.id, s.user_id, u.account_id, u.role, s.revoked_at IS NOT NULL
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = $1`, sessionID).
		Scan(&s.ID, &s.UserID, &account, &s.Role, &s.Revoked)
	if err != nil {
		return nil, notFound(err)
	}
	if account != nil {
		s.AccountID = *account
	}
	return &s, nil
}

// CreateMagicLink stores the hash of a sign-in link's token for a user.
func (db *DB) CreateMagicLink(ctx context.Context, userID string, tokenHash []byte, expires time.Time) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO magic_links (token_hash, user_id, expires_at) VALUES ($1, $2, $3)`,
		tokenHash, userID, expires)
	return err
}

// UseMagicLink spends a sign-in link and returns its user. One statement marks the link used only
// if it is unused and unexpired, so of any number of concurrent uses exactly one succeeds; an
// unknown, used or expired link is bgcheck.CodeInvalidMagicLink.
func (db *DB) UseMagicLink(ctx context.Context, tokenHash []byte) (*bgcheck.User, error) {
	rows, err := db.pool.Query(ctx, `
		WITH spent AS (
			UPDATE magic_links SET used_at = now()
			WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
			RETURNING user_id
		)
		SELECT `+userColumns+` FROM users WHERE id = (SELECT user_id FROM spent)`, tokenHash)
	u, err := collectOne[bgcheck.User](rows, err)
	if err == bgcheck.ErrNotFound {
		return nil, bgcheck.Errorf(bgcheck.CodeInvalidMagicLink, "this sign-in link is unknown, used or expired; ask for a new one")
	}
	return u, err
}
