package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// PauseEndpoint pauses one of the tenant's endpoints: its deliveries' attempts wait, durably and
// uncounted, until ResumeEndpoint. Pausing a paused endpoint changes nothing.
func (db *DB) PauseEndpoint(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.WebhookEndpoint, error) {
	rows, err := db.pool.Query(ctx, `UPDATE webhook_endpoints SET paused_at = coalesce(paused_at, now()), updated_at = now()
		WHERE id = $1 AND account_id = $2 AND mode = $3 AND deleted_at IS NULL RETURNING `+endpointColumns, id, t.AccountID, t.Mode)
	return collectOne[bgcheck.WebhookEndpoint](rows, err)
}

// ResumeEndpoint resumes a paused endpoint and asks the dispatcher to tell the workflows waiting
// on it, in one transaction.
func (db *DB) ResumeEndpoint(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.WebhookEndpoint, error) {
	var ep *bgcheck.WebhookEndpoint
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// The failing streak starts afresh: failures while paused were the owner's maintenance.
		rows, err := tx.Query(ctx, `UPDATE webhook_endpoints SET paused_at = NULL, failing_since = NULL, updated_at = now()
			WHERE id = $1 AND account_id = $2 AND mode = $3 AND deleted_at IS NULL RETURNING `+endpointColumns, id, t.AccountID, t.Mode)
		if ep, err = collectOne[bgcheck.WebhookEndpoint](rows, err); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET held_by_pause = false, resume_signal_pending = true
			WHERE endpoint_id = $1 AND held_by_pause`, id); err != nil {
			return err
		}
		err = announceOutbox(ctx, tx)
		return err
	})
	return ep, err
}

// HoldDelivery records that a delivery's workflow waits for its endpoint's resume. If the
// endpoint was resumed meanwhile, the delivery is asked to be told at once.
func (db *DB) HoldDelivery(ctx context.Context, deliveryID string) error {
	_, err := db.pool.Exec(ctx, `UPDATE deliveries d SET held_by_pause = (w.paused_at IS NOT NULL),
			resume_signal_pending = (w.paused_at IS NULL)
		FROM webhook_endpoints w WHERE d.id = $1 AND w.id = d.endpoint_id`, deliveryID)
	return err
}

// ResumeSignal is a held delivery's workflow to tell that its endpoint was resumed.
type ResumeSignal struct {
	DeliveryID string
	Series     int
}

// ResumeSignals returns up to limit deliveries whose workflows are to be told of a resume.
func (db *DB) ResumeSignals(ctx context.Context, limit int) ([]ResumeSignal, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, series FROM deliveries WHERE resume_signal_pending ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[ResumeSignal])
}

// ResumeSignaled records that a delivery's workflow was told (or is gone).
func (db *DB) ResumeSignaled(ctx context.Context, deliveryID string) error {
	_, err := db.pool.Exec(ctx, `UPDATE deliveries SET resume_signal_pending = false WHERE id = $1`, deliveryID)
	return err
}
