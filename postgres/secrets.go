package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// SecretBox seals secrets before they are stored and opens them when they are used; package
// secretbox's Keyring is one. context binds a sealed value to its row.
type SecretBox interface {
	Seal(plaintext, context []byte) (keyID string, ciphertext []byte, err error)
	Open(keyID string, ciphertext, context []byte) ([]byte, error)
	CurrentKeyID() string
}

// Option configures Open.
type Option func(*DB)

// WithSecrets gives the handle the keys for endpoint signing secrets. Without it, storing or
// reading a secret fails.
func WithSecrets(box SecretBox) Option { return func(db *DB) { db.secrets = box } }

var errNoSecretBox = errors.New("postgres: no key for secrets at rest (BGCHECK_SECRETS_KEY)")

// sealSecret seals an endpoint's signing secret, bound to the endpoint's id.
func (db *DB) sealSecret(endpointID, secret string) (keyID string, sealed []byte, err error) {
	if db.secrets == nil {
		return "", nil, errNoSecretBox
	}
	return db.secrets.Seal([]byte(secret), []byte(endpointID))
}

// openSecret returns an endpoint's signing secret from its columns: sealed, or plaintext for a
// row written before secrets were sealed and not sealed since.
func (db *DB) openSecret(endpointID string, plain *string, keyID *string, sealed []byte) (string, error) {
	if sealed == nil {
		if plain == nil {
			return "", fmt.Errorf("postgres: endpoint %s has no secret", endpointID)
		}
		return *plain, nil
	}
	if db.secrets == nil {
		return "", errNoSecretBox
	}
	b, err := db.secrets.Open(*keyID, sealed, []byte(endpointID))
	if err != nil {
		return "", fmt.Errorf("postgres: secret of endpoint %s: %w", endpointID, err)
	}
	return string(b), nil
}

// ResealSecrets seals every endpoint secret that is stored in plaintext or under a key other
// than the current one, and returns how many it changed. It works in batches of 500 rows, each
// in its own transaction with the rows locked, so it can run beside live traffic and be run
// again after an interruption. Plaintext only (onlyPlaintext) is what the API does at start;
// everything is bgcheckctl secrets rotate-key.
func (db *DB) ResealSecrets(ctx context.Context, onlyPlaintext bool) (int, error) {
	if db.secrets == nil {
		return 0, errNoSecretBox
	}
	current := db.secrets.CurrentKeyID()
	total := 0
	for {
		n := 0
		err := db.inTx(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `
				SELECT id, secret, secret_key_id, secret_sealed, previous_secret_key_id, previous_secret_sealed FROM webhook_endpoints
				WHERE secret_sealed IS NULL OR (NOT $1 AND (secret_key_id <> $2 OR previous_secret_key_id <> $2))
				ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED`, onlyPlaintext, current)
			if err != nil {
				return err
			}
			type row struct {
				ID         string
				Plain      *string
				KeyID      *string
				Sealed     []byte
				PrevKeyID  *string
				PrevSealed []byte
			}
			batch, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
			if err != nil {
				return err
			}
			for _, r := range batch {
				secret, err := db.openSecret(r.ID, r.Plain, r.KeyID, r.Sealed)
				if err != nil {
					return err
				}
				keyID, sealed, err := db.sealSecret(r.ID, secret)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET secret = NULL, secret_key_id = $2, secret_sealed = $3
					WHERE id = $1`, r.ID, keyID, sealed); err != nil {
					return err
				}
				if r.PrevSealed != nil { // a rotation's previous secret, still overlapping or not
					prev, err := db.openSecret(r.ID, nil, r.PrevKeyID, r.PrevSealed)
					if err != nil {
						return err
					}
					keyID, sealed, err := db.sealSecret(r.ID, prev)
					if err != nil {
						return err
					}
					if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET previous_secret_key_id = $2, previous_secret_sealed = $3
						WHERE id = $1`, r.ID, keyID, sealed); err != nil {
						return err
					}
				}
			}
			n = len(batch)
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < 500 {
			return total, nil
		}
	}
}
