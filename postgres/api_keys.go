package postgres

import (
	"context"
	"net/netip"
	"time"

	"github.com/bgcheck/bgcheck"
)

const apiKeyColumns = `id, account_id, name, mode, prefix, last4, scopes, allowed_ips,
	expires_at, revoked_at, last_used_at, created_at`

// CreateAPIKey stores a new key for an existing account.
func (db *DB) CreateAPIKey(ctx context.Context, k bgcheck.NewAPIKey) (*bgcheck.APIKey, error) {
	key, err := createAPIKey(ctx, db.pool, k)
	if isForeignKeyViolation(err) {
		return nil, bgcheck.ErrNotFound
	}
	return key, err
}

func createAPIKey(ctx context.Context, q querier, k bgcheck.NewAPIKey) (*bgcheck.APIKey, error) {
	if k.Scopes == nil {
		k.Scopes = []string{}
	}
	if k.AllowedIPs == nil {
		k.AllowedIPs = []netip.Prefix{}
	}
	rows, err := q.Query(ctx, `
		INSERT INTO api_keys (id, account_id, name, mode, key_hash, prefix, last4, scopes, allowed_ips, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		RETURNING `+apiKeyColumns,
		bgcheck.NewID(bgcheck.PrefixAPIKey), k.AccountID, k.Name, k.Mode, k.Hash, k.Prefix, k.Last4,
		k.Scopes, k.AllowedIPs, k.ExpiresAt)
	return collectOne[bgcheck.APIKey](rows, err)
}

// FindAPIKeyByHash returns the key whose raw form hashes to hash, revoked or not: the caller
// decides what a revoked or expired key means.
func (db *DB) FindAPIKeyByHash(ctx context.Context, hash []byte) (*bgcheck.APIKey, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE key_hash = $1`, hash)
	return collectOne[bgcheck.APIKey](rows, err)
}

// ListAPIKeys returns an account's keys that are not revoked, newest first.
func (db *DB) ListAPIKeys(ctx context.Context, accountID string, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.APIKey], error) {
	return page(ctx, db, p, func(k *bgcheck.APIKey) string { return k.ID }, `
		SELECT `+apiKeyColumns+` FROM api_keys
		WHERE account_id = $1 AND revoked_at IS NULL AND ($2 = '' OR id < $2)
		ORDER BY id DESC LIMIT $3`, accountID)
}

// RevokeAPIKey marks a key revoked. accountID "" revokes whichever account's key it is (the
// operator CLI); otherwise another account's key is bgcheck.ErrNotFound. Revoking twice is
// harmless and keeps the first revocation time.
func (db *DB) RevokeAPIKey(ctx context.Context, accountID, id string) error {
	tag, err := db.pool.Exec(ctx, `
		UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
		WHERE id = $1 AND ($2 = '' OR account_id = $2)`, id, accountID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return bgcheck.ErrNotFound
	}
	return nil
}

// MarkAPIKeysUsed records when each key was last used, in one statement for the whole batch. It
// never moves last_used_at backwards.
func (db *DB) MarkAPIKeysUsed(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	ids := make([]string, 0, len(used))
	times := make([]time.Time, 0, len(used))
	for id, t := range used {
		ids = append(ids, id)
		times = append(times, t)
	}
	_, err := db.pool.Exec(ctx, `
		UPDATE api_keys k SET last_used_at = u.t
		FROM unnest($1::text[], $2::timestamptz[]) AS u(id, t)
		WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.t)`, ids, times)
	return err
}
