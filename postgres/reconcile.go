package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bgcheck/bgcheck"
)

// ReconcilerLockKey is the advisory lock a reconciliation run holds, so that of several API
// instances one reconciles at a time.
const ReconcilerLockKey int64 = 0x6267636b_72636e00 // "bgckrcn"

// InFlightDelivery names a delivery whose workflow was started and which is still pending.
type InFlightDelivery struct {
	ID     string
	Series int
}

// DeliveriesToReconcile returns up to limit dispatched, pending deliveries not checked against
// Temporal for at least checkedBefore, the least recently checked first.
func (db *DB) DeliveriesToReconcile(ctx context.Context, checkedBefore time.Duration, limit int) ([]InFlightDelivery, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, series FROM deliveries
		WHERE status = 'pending' AND dispatched_at IS NOT NULL
			AND coalesce(reconciled_at, dispatched_at) <= now() - $1 * interval '1 millisecond'
		ORDER BY coalesce(reconciled_at, dispatched_at) LIMIT $2`, checkedBefore.Milliseconds(), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[InFlightDelivery])
}

// MarkReconciled records that the deliveries' workflows were found running.
func (db *DB) MarkReconciled(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.pool.Exec(ctx, `UPDATE deliveries SET reconciled_at = now() WHERE id = ANY($1)`, ids)
	return err
}

// RedispatchDelivery puts a delivery whose workflow does not exist back in the outbox, for the
// dispatcher to start its series again. Only the series named is touched.
func (db *DB) RedispatchDelivery(ctx context.Context, id string, series int) error {
	_, err := db.pool.Exec(ctx, `UPDATE deliveries SET dispatched_at = NULL, dispatch_lease_until = NULL,
		reconciled_at = NULL, updated_at = now() WHERE id = $1 AND series = $2 AND status = 'pending'`, id, series)
	if err == nil {
		db.announcer.announce(true)
	}
	return err
}

// FailStuckDelivery ends a pending delivery whose workflow closed without recording an outcome:
// the delivery becomes failed, and the attempt that could not run is recorded with the reason,
// so the dashboard and GET /webhooks/deliveries/{id} say what happened. It reports whether the
// delivery was still pending in that series.
func (db *DB) FailStuckDelivery(ctx context.Context, id string, series int, reason string) (bool, error) {
	failed := false
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var number int
		err := tx.QueryRow(ctx, `UPDATE deliveries SET status = 'failed', attempt_count = attempt_count + 1,
			next_attempt_at = NULL, last_status_code = NULL, last_error = $3, updated_at = now()
			WHERE id = $1 AND series = $2 AND status = 'pending' RETURNING attempt_count`, id, series, reason).Scan(&number)
		if err == pgx.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		failed = true
		_, err = tx.Exec(ctx, `INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, error)
			VALUES ($1, $2, now(), 0, $3) ON CONFLICT (delivery_id, number) DO NOTHING`, id, number, reason)
		return err
	})
	return failed, err
}

// RedeliverStalled is Redeliver for a pending delivery whose workflow is known to have ended
// (canceled or terminated outside bgcheck, or lost): a new series starts if the delivery is
// still pending in series. mode "" means either mode (an admin). Anything else is refused as
// Redeliver refuses it.
func (db *DB) RedeliverStalled(ctx context.Context, accountID string, mode bgcheck.Mode, id string, series int) (*bgcheck.Delivery, error) {
	return db.redeliver(ctx, accountID, mode, id, series)
}

// WorkflowCancel names a canceled delivery whose workflow is still to be canceled in Temporal.
type WorkflowCancel struct {
	ID     string
	Series int
}

// WorkflowCancels returns up to limit deliveries whose workflows await cancellation.
func (db *DB) WorkflowCancels(ctx context.Context, limit int) ([]WorkflowCancel, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, series FROM deliveries WHERE cancel_workflow ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[WorkflowCancel])
}

// WorkflowsCanceled records that Temporal has canceled (or never had) these workflows.
func (db *DB) WorkflowsCanceled(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.pool.Exec(ctx, `UPDATE deliveries SET cancel_workflow = false WHERE id = ANY($1)`, ids)
	return err
}

// OldestPendingDelivery returns when the oldest pending delivery was created; zero when none is
// pending.
func (db *DB) OldestPendingDelivery(ctx context.Context) (time.Time, error) {
	var oldest *time.Time
	if err := db.pool.QueryRow(ctx, `SELECT min(created_at) FROM deliveries WHERE status = 'pending'`).Scan(&oldest); err != nil {
		return time.Time{}, err
	}
	if oldest == nil {
		return time.Time{}, nil
	}
	return *oldest, nil
}

// WithExclusiveRun runs fn while holding the session advisory lock key on a connection of its
// own, and reports whether it ran: when another instance holds the lock, fn is skipped. It is
// how a background job every API instance runs has one owner at a time without a coordinator.
func (db *DB) WithExclusiveRun(ctx context.Context, key int64, fn func(context.Context) error) (bool, error) {
	return db.withExclusiveConn(ctx, key, func(ctx context.Context, _ *pgxpool.Conn) error { return fn(ctx) })
}

// withExclusiveConn is WithExclusiveRun handing fn the connection that holds the lock.
func (db *DB) withExclusiveConn(ctx context.Context, key int64, fn func(context.Context, *pgxpool.Conn) error) (bool, error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&locked); err != nil {
		return false, err
	}
	if !locked {
		return false, nil
	}
	defer func() {
		// The lock belongs to the session: a connection that cannot say unlock must not go
		// back to the pool still holding it, so it is closed instead.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	return true, fn(ctx, conn)
}
