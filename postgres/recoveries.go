package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

const recoveryColumns = `id, account_id, mode, endpoint_id, since, status, total, redelivered, created_at, completed_at`

// StartRecovery records a recovery of the tenant's endpoint's failed deliveries since a time and
// wakes the dispatcher to start its workflow. The same endpoint and since again returns the
// recovery already made (created false): the operation is idempotent.
func (db *DB) StartRecovery(ctx context.Context, t bgcheck.Tenant, endpointID string, since time.Time) (r *bgcheck.Recovery, created bool, err error) {
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1 AND account_id = $2 AND mode = $3
			AND deleted_at IS NULL)`, endpointID, t.AccountID, t.Mode).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return bgcheck.ErrNotFound
		}
		rows, err := tx.Query(ctx, `INSERT INTO recoveries (id, account_id, mode, endpoint_id, since, total)
			VALUES ($1, $2, $3, $4, $5, (SELECT count(*) FROM deliveries WHERE endpoint_id = $4 AND status = 'failed' AND created_at >= $5))
			ON CONFLICT (endpoint_id, since) DO NOTHING RETURNING `+recoveryColumns,
			bgcheck.NewID(bgcheck.PrefixRecovery), t.AccountID, t.Mode, endpointID, since)
		r, err = collectOne[bgcheck.Recovery](rows, err)
		if err == nil {
			created = true
			err = announceOutbox(ctx, tx)
			return err
		}
		if err != bgcheck.ErrNotFound {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT `+recoveryColumns+` FROM recoveries WHERE endpoint_id = $1 AND since = $2`, endpointID, since)
		r, err = collectOne[bgcheck.Recovery](rows, err)
		return err
	})
	return r, created, err
}

// FindRecovery returns one of the tenant's recoveries of an endpoint.
func (db *DB) FindRecovery(ctx context.Context, t bgcheck.Tenant, endpointID, id string) (*bgcheck.Recovery, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+recoveryColumns+` FROM recoveries WHERE id = $1 AND endpoint_id = $2
		AND account_id = $3 AND mode = $4`, id, endpointID, t.AccountID, t.Mode)
	return collectOne[bgcheck.Recovery](rows, err)
}

// RecoveryPage lists up to limit failed deliveries of the recovery's endpoint since its time,
// with ids after after, in id order.
func (db *DB) RecoveryPage(ctx context.Context, recoveryID, after string, limit int) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT d.id FROM deliveries d JOIN recoveries r ON r.endpoint_id = d.endpoint_id
		WHERE r.id = $1 AND d.status = 'failed' AND d.created_at >= r.since AND d.id > $2 ORDER BY d.id LIMIT $3`, recoveryID, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// RedeliverForRecovery redelivers the given failed deliveries for the recovery, each exactly
// once however often it is called: an item recorded before is skipped, in the same statement.
func (db *DB) RedeliverForRecovery(ctx context.Context, recoveryID string, ids []string) error {
	_, err := db.pool.Exec(ctx, `
		WITH picked AS (
			INSERT INTO recovery_items (recovery_id, delivery_id) SELECT $1, unnest($2::text[])
			ON CONFLICT DO NOTHING RETURNING delivery_id
		), redone AS (
			UPDATE deliveries d SET status = 'pending', series = series + 1, dispatched_at = NULL,
				dispatch_lease_until = NULL, dispatch_after = NULL, dispatch_failures = 0, dispatch_error = NULL,
				reconciled_at = NULL, next_attempt_at = now(), updated_at = now()
			FROM picked WHERE d.id = picked.delivery_id AND d.status = 'failed' RETURNING d.id
		)
		UPDATE recoveries SET redelivered = redelivered + (SELECT count(*) FROM redone) WHERE id = $1`, recoveryID, ids)
	if err == nil {
		db.announcer.announce(true)
	}
	return err
}

// CompleteRecovery marks a recovery done.
func (db *DB) CompleteRecovery(ctx context.Context, recoveryID string) error {
	_, err := db.pool.Exec(ctx, `UPDATE recoveries SET status = 'completed', completed_at = coalesce(completed_at, now()) WHERE id = $1`, recoveryID)
	return err
}

// RecoveryStart is a recovery whose workflow the dispatcher has to start.
type RecoveryStart struct {
	ID         string
	AccountID  string
	EndpointID string
}

// ClaimRecoveryStarts leases up to limit recoveries whose workflow has not started.
func (db *DB) ClaimRecoveryStarts(ctx context.Context, limit int, lease time.Duration) ([]RecoveryStart, error) {
	rows, err := db.pool.Query(ctx, `
		UPDATE recoveries r SET dispatch_lease_until = now() + $2 * interval '1 millisecond'
		FROM (
			SELECT id FROM recoveries WHERE workflow_started_at IS NULL
				AND (dispatch_lease_until IS NULL OR dispatch_lease_until < now())
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
		) claimed
		WHERE r.id = claimed.id
		RETURNING r.id, r.account_id, r.endpoint_id`, limit, lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[RecoveryStart])
}

// MarkRecoveryStarted records that a recovery's workflow exists, or releases a failed start.
func (db *DB) MarkRecoveryStarted(ctx context.Context, id string, started bool) error {
	if started {
		_, err := db.pool.Exec(ctx, `UPDATE recoveries SET workflow_started_at = now(), dispatch_lease_until = NULL WHERE id = $1`, id)
		return err
	}
	_, err := db.pool.Exec(ctx, `UPDATE recoveries SET dispatch_lease_until = NULL WHERE id = $1`, id)
	return err
}
