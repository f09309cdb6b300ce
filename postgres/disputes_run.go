package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// DisputeRun is what a dispute's workflow and activities need.
type DisputeRun struct {
	ID          string
	CheckID     string
	Tenant      bgcheck.Tenant
	Screening   string
	Status      bgcheck.DisputeStatus
	DueAt       time.Time
	WarningSent bool
	// AdminEmails are the addresses of the account's admins, who are warned before the deadline.
	AdminEmails []string
}

// FindDisputeRun loads a dispute for its workflow, whatever its account.
func (db *DB) FindDisputeRun(ctx context.Context, id string) (*DisputeRun, error) {
	var r DisputeRun
	err := db.pool.QueryRow(ctx, `
		SELECT d.id, d.check_id, d.account_id, d.mode, d.screening, d.status, d.due_at, d.warning_sent_at IS NOT NULL,
			coalesce((SELECT array_agg(u.email ORDER BY u.email) FROM users u WHERE u.account_id = d.account_id AND u.role = 'admin'), '{}')
		FROM disputes d WHERE d.id = $1`, id).
		Scan(&r.ID, &r.CheckID, &r.Tenant.AccountID, &r.Tenant.Mode, &r.Screening, &r.Status, &r.DueAt, &r.WarningSent, &r.AdminEmails)
	if err != nil {
		return nil, notFound(err)
	}
	return &r, nil
}

// MarkDisputeWarningSent records that the admins were warned of the coming deadline, so a retried
// activity does not warn them twice.
func (db *DB) MarkDisputeWarningSent(ctx context.Context, id string) error {
	_, err := db.pool.Exec(ctx, `UPDATE disputes SET warning_sent_at = coalesce(warning_sent_at, now()) WHERE id = $1`, id)
	return err
}

// DisputeStart is a dispute whose workflow the dispatcher has to start.
type DisputeStart struct {
	ID          string
	AccountID   string
	CheckID     string
	CandidateID string
	DueAt       time.Time
}

// ClaimDisputeStarts leases up to limit open disputes whose workflow has not started.
func (db *DB) ClaimDisputeStarts(ctx context.Context, limit int, lease time.Duration) ([]DisputeStart, error) {
	rows, err := db.pool.Query(ctx, `
		UPDATE disputes d SET dispatch_lease_until = now() + $2 * interval '1 millisecond'
		FROM (
			SELECT id FROM disputes
			WHERE workflow_started_at IS NULL AND status = 'open'
				AND (dispatch_lease_until IS NULL OR dispatch_lease_until < now())
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
		) claimed
		WHERE d.id = claimed.id
		RETURNING d.id, d.account_id, d.check_id, d.candidate_id, d.due_at`, limit, lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[DisputeStart])
}

// MarkDisputesStarted records that the disputes' workflows exist; failed ones are released. A
// dispute resolved before its workflow started is signaled too: the workflow learns it either way.
func (db *DB) MarkDisputesStarted(ctx context.Context, started, failed []string) error {
	if len(started) > 0 {
		if _, err := db.pool.Exec(ctx, `UPDATE disputes SET workflow_started_at = now(), dispatch_lease_until = NULL,
				signal_resolved = (status = 'resolved' AND resolved_by <> 'deadline')
			WHERE id = ANY($1)`, started); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		_, err := db.pool.Exec(ctx, `UPDATE disputes SET dispatch_lease_until = NULL WHERE id = ANY($1)`, failed)
		return err
	}
	return nil
}

// DisputeSignals returns up to limit resolved disputes whose workflow has still to be told.
func (db *DB) DisputeSignals(ctx context.Context, limit int) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT id FROM disputes WHERE signal_resolved ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// DisputeSignaled records that a dispute's workflow was told of its resolution (or is gone).
func (db *DB) DisputeSignaled(ctx context.Context, id string) error {
	_, err := db.pool.Exec(ctx, `UPDATE disputes SET signal_resolved = false WHERE id = $1`, id)
	return err
}
