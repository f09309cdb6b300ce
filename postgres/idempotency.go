package postgres

import (
	"bytes"
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// IdempotencyWindow is how long an Idempotency-Key's answer is kept (Stripe's 24 hours).
const IdempotencyWindow = 24 * time.Hour

// StoredResponse is the answer kept for an idempotency key.
type StoredResponse struct {
	StatusCode int
	Headers    map[string]string
	Body       []byte
}

// IdempotencyClaim is the outcome of claiming a key: Owned (the request runs, and must Finish or
// Release with Token), Response (a repeat of a finished request: answer with it), or neither (the
// first request still runs: wait and claim again).
type IdempotencyClaim struct {
	Owned    bool
	Token    string
	Response *StoredResponse
}

// ErrIdempotencyKeyReused refuses a key used before with another request.
var ErrIdempotencyKeyReused = bgcheck.Errorf(bgcheck.CodeIdempotencyKeyReused,
	"this Idempotency-Key was used with another request in the last 24 hours; use a new key for a new request")

// ClaimIdempotencyKey claims key for a request with fingerprint (a hash of its method, path and
// body) for lease, unless the same request holds or finished it within the window. A key held
// past its lease (its process died) is taken over; one older than the window starts afresh.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, t bgcheck.Tenant, key string, fingerprint []byte, lease time.Duration) (IdempotencyClaim, error) {
	claim := IdempotencyClaim{Token: bgcheck.NewID("claim")}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (account_id, mode, key, fingerprint, locked_until, claim)
			VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond', $7)
			ON CONFLICT (account_id, mode, key) DO UPDATE SET fingerprint = excluded.fingerprint, status_code = NULL,
				response_headers = NULL, response_body = NULL, body_key_id = NULL, locked_until = excluded.locked_until,
				claim = excluded.claim, created_at = now()
			WHERE idempotency_keys.created_at < now() - $6 * interval '1 millisecond'
				OR (idempotency_keys.status_code IS NULL AND idempotency_keys.locked_until < now()
					AND idempotency_keys.fingerprint = excluded.fingerprint)`,
			t.AccountID, t.Mode, key, fingerprint, lease.Milliseconds(), IdempotencyWindow.Milliseconds(), claim.Token)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			claim.Owned = true
			return nil
		}
		var stored []byte
		var status *int
		var headers map[string]string
		var body []byte
		var keyID *string
		if err := tx.QueryRow(ctx, `SELECT fingerprint, status_code, response_headers, response_body, body_key_id FROM idempotency_keys
			WHERE account_id = $1 AND mode = $2 AND key = $3`, t.AccountID, t.Mode, key).Scan(&stored, &status, &headers, &body, &keyID); err != nil {
			return err
		}
		if !bytes.Equal(stored, fingerprint) {
			return ErrIdempotencyKeyReused
		}
		if status != nil {
			if keyID != nil {
				if db.secrets == nil {
					return errNoSecretBox
				}
				if body, err = db.secrets.Open(*keyID, body, idempotencyAAD(t, key)); err != nil {
					return err
				}
			}
			claim.Response = &StoredResponse{StatusCode: *status, Headers: headers, Body: body}
		}
		return nil
	})
	return claim, err
}

func idempotencyAAD(t bgcheck.Tenant, key string) []byte {
	return []byte("idempotency:" + t.AccountID + ":" + string(t.Mode) + ":" + key)
}

// FinishIdempotencyKey keeps the answer of the request that holds the key (token), sealed like
// the secrets it may carry; a request whose claim was taken over keeps nothing.
func (db *DB) FinishIdempotencyKey(ctx context.Context, t bgcheck.Tenant, key, token string, r StoredResponse) error {
	body, keyID := r.Body, (*string)(nil)
	if db.secrets != nil {
		k, sealed, err := db.secrets.Seal(r.Body, idempotencyAAD(t, key))
		if err != nil {
			return err
		}
		body, keyID = sealed, &k
	}
	_, err := db.pool.Exec(ctx, `UPDATE idempotency_keys SET status_code = $5, response_headers = $6, response_body = $7,
		body_key_id = $8, locked_until = NULL WHERE account_id = $1 AND mode = $2 AND key = $3 AND claim = $4`,
		t.AccountID, t.Mode, key, token, r.StatusCode, r.Headers, body, keyID)
	return err
}

// ReleaseIdempotencyKey forgets a key whose request kept no answer (it did not succeed), so a
// retry with the key runs again; a claim taken over by another request is left alone.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, t bgcheck.Tenant, key, token string) error {
	_, err := db.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE account_id = $1 AND mode = $2 AND key = $3 AND claim = $4
		AND status_code IS NULL`, t.AccountID, t.Mode, key, token)
	return err
}
