package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// HealthCheck is an endpoint that started failing, whose health workflow the dispatcher has to
// start (or tell), with the streak it saw.
type HealthCheck struct {
	EndpointID   string
	FailingSince *time.Time
}

// HealthChecks returns up to limit endpoints to watch.
func (db *DB) HealthChecks(ctx context.Context, limit int) ([]HealthCheck, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, failing_since FROM webhook_endpoints WHERE health_check_pending ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[HealthCheck])
}

// HealthCheckStarted records that the endpoint's health workflow was started or told of the
// streak h saw; a streak that began since stays pending, so its workflow is told too.
func (db *DB) HealthCheckStarted(ctx context.Context, h HealthCheck) error {
	_, err := db.pool.Exec(ctx, `UPDATE webhook_endpoints SET health_check_pending = false
		WHERE id = $1 AND failing_since IS NOT DISTINCT FROM $2`, h.EndpointID, h.FailingSince)
	return err
}

// EndpointWatch is what the health workflow reads of an endpoint.
type EndpointWatch struct {
	FailingSince *time.Time
	Watched      bool // enabled and not deleted: worth watching
}

// FindEndpointWatch reads an endpoint's health, whatever its account; a deleted, disabled or
// paused endpoint is not watched (a paused one's failures are its owner's maintenance).
func (db *DB) FindEndpointWatch(ctx context.Context, id string) (EndpointWatch, error) {
	var h EndpointWatch
	err := db.pool.QueryRow(ctx, `SELECT failing_since, enabled AND deleted_at IS NULL AND paused_at IS NULL FROM webhook_endpoints WHERE id = $1`, id).
		Scan(&h.FailingSince, &h.Watched)
	if err == pgx.ErrNoRows {
		return EndpointWatch{}, nil
	}
	return h, err
}

// DisableFailingEndpoint disables an endpoint whose deliveries have all failed since failingSince
// (unchanged: no success since), records it, and returns true; an endpoint that recovered, failed
// anew, or is already disabled is left as it is.
func (db *DB) DisableFailingEndpoint(ctx context.Context, id string, failingSince time.Time, window time.Duration) (bool, error) {
	disabled := false
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var accountID string
		err := tx.QueryRow(ctx, `UPDATE webhook_endpoints SET enabled = false, disabled_at = now(), disabled_reason = 'failing',
				updated_at = now()
			WHERE id = $1 AND enabled AND deleted_at IS NULL AND paused_at IS NULL
				AND failing_since = $2 AND failing_since <= now() - $3 * interval '1 second'
			RETURNING account_id`, id, failingSince, window.Seconds()).Scan(&accountID)
		if err == pgx.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		disabled = true
		_, err = tx.Exec(ctx, `INSERT INTO endpoint_health_events (id, endpoint_id, account_id, kind, detail) VALUES ($1, $2, $3, 'disabled', $4)`,
			bgcheck.NewID("ehe"), id, accountID, "every delivery failed since "+failingSince.UTC().Format(time.RFC3339))
		return err
	})
	return disabled, err
}

// DisabledNotice is the mail to send about an endpoint disabled for failing, if not sent yet.
type DisabledNotice struct {
	EventID      string
	EndpointID   string
	URL          string
	Mode         bgcheck.Mode
	FailingSince *time.Time
	AdminEmails  []string
}

// PendingDisabledNotice returns the endpoint's latest disabled record whose mail has not gone, or
// nil.
func (db *DB) PendingDisabledNotice(ctx context.Context, endpointID string) (*DisabledNotice, error) {
	var n DisabledNotice
	err := db.pool.QueryRow(ctx, `
		SELECT h.id, w.id, w.url, w.mode, w.failing_since,
			coalesce((SELECT array_agg(u.email ORDER BY u.email) FROM users u WHERE u.account_id = w.account_id AND u.role = 'admin'), '{}')
		FROM endpoint_health_events h JOIN webhook_endpoints w ON w.id = h.endpoint_id
		WHERE h.endpoint_id = $1 AND h.kind = 'disabled' AND h.mailed_at IS NULL
		ORDER BY h.id DESC LIMIT 1`, endpointID).Scan(&n.EventID, &n.EndpointID, &n.URL, &n.Mode, &n.FailingSince, &n.AdminEmails)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	return &n, err
}

// MarkDisabledNoticeSent records that the admins were mailed.
func (db *DB) MarkDisabledNoticeSent(ctx context.Context, eventID string) error {
	_, err := db.pool.Exec(ctx, `UPDATE endpoint_health_events SET mailed_at = now() WHERE id = $1`, eventID)
	return err
}

// EnableEndpoint turns an endpoint back on (a disabled-for-failing one too: its failing clock
// starts afresh) and records it.
func (db *DB) EnableEndpoint(ctx context.Context, accountID string, mode bgcheck.Mode, id string) (*bgcheck.WebhookEndpoint, error) {
	var ep *bgcheck.WebhookEndpoint
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE webhook_endpoints SET enabled = true, disabled_at = NULL, disabled_reason = NULL,
				failing_since = NULL, updated_at = now()
			WHERE id = $1 AND account_id = $2 AND ($3 = '' OR mode = $3) AND deleted_at IS NULL RETURNING `+endpointColumns, id, accountID, mode)
		if ep, err = collectOne[bgcheck.WebhookEndpoint](rows, err); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO endpoint_health_events (id, endpoint_id, account_id, kind, detail) VALUES ($1, $2, $3, 'enabled', 'enabled again')`,
			bgcheck.NewID("ehe"), id, accountID)
		return err
	})
	return ep, err
}
