package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

const deliveryColumns = `id, event_id, event_type, endpoint_id, account_id, mode, status, attempt_count,
	next_attempt_at, last_status_code, last_error, series, created_at, updated_at`

// ListEndpointDeliveries returns a page of one endpoint's deliveries, newest first; status ""
// means every status. An endpoint the tenant cannot see is bgcheck.ErrNotFound.
func (db *DB) ListEndpointDeliveries(ctx context.Context, t bgcheck.Tenant, endpointID string, status bgcheck.DeliveryStatus, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.Delivery], error) {
	if _, err := db.FindEndpoint(ctx, t, endpointID); err != nil {
		return bgcheck.Page[*bgcheck.Delivery]{}, err
	}
	return page(ctx, db, p, func(d *bgcheck.Delivery) string { return d.ID }, `
		SELECT `+deliveryColumns+` FROM deliveries
		WHERE endpoint_id = $1 AND account_id = $2 AND mode = $3 AND ($4 = '' OR status = $4) AND ($5 = '' OR id < $5)
		ORDER BY id DESC LIMIT $6`, endpointID, t.AccountID, t.Mode, status)
}

// FindDelivery returns one of the tenant's deliveries with its attempts, oldest first.
func (db *DB) FindDelivery(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.Delivery, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM deliveries
		WHERE id = $1 AND account_id = $2 AND mode = $3`, id, t.AccountID, t.Mode)
	d, err := collectOne[bgcheck.Delivery](rows, err)
	if err != nil {
		return nil, err
	}
	rows, err = db.pool.Query(ctx, `SELECT number, started_at, duration_ms, status_code, error, response_snippet
		FROM delivery_attempts WHERE delivery_id = $1 ORDER BY number`, id)
	if err != nil {
		return nil, err
	}
	if d.Attempts, err = pgx.CollectRows(rows, pgx.RowToStructByName[bgcheck.DeliveryAttempt]); err != nil {
		return nil, err
	}
	return d, nil
}

// ErrDeliveryInProgress is returned by Redeliver for a delivery whose attempts are still running.
var ErrDeliveryInProgress = bgcheck.Errorf(bgcheck.CodeDeliveryInProgress,
	"this delivery is still being attempted; redeliver it once it has succeeded, failed or been canceled")

// Redeliver starts a fresh attempt series for a finished delivery (succeeded, failed or
// canceled): the same event, the same bytes, a new workflow. The row goes back to pending and
// undispatched, so the dispatcher starts the series' workflow exactly as for a new delivery. A
// pending delivery is ErrDeliveryInProgress; one the tenant cannot see is bgcheck.ErrNotFound.
func (db *DB) Redeliver(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.Delivery, error) {
	if !t.Mode.Valid() {
		return nil, bgcheck.ErrNotFound // "" would widen the search to both modes
	}
	return db.redeliver(ctx, t.AccountID, t.Mode, id)
}

// redeliver is Redeliver for a delivery of the account in the given mode, or in either mode when
// mode is "" (an admin acts across both; see RedeliverInAccount).
func (db *DB) redeliver(ctx context.Context, accountID string, mode bgcheck.Mode, id string) (*bgcheck.Delivery, error) {
	var d *bgcheck.Delivery
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			UPDATE deliveries SET status = 'pending', series = series + 1, dispatched_at = NULL,
				next_attempt_at = now(), updated_at = now()
			WHERE id = $1 AND account_id = $2 AND ($3 = '' OR mode = $3) AND status <> 'pending'
			RETURNING `+deliveryColumns, id, accountID, mode)
		d, err = collectOne[bgcheck.Delivery](rows, err)
		if err == bgcheck.ErrNotFound {
			var exists bool
			if qerr := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deliveries
				WHERE id = $1 AND account_id = $2 AND ($3 = '' OR mode = $3))`,
				id, accountID, mode).Scan(&exists); qerr != nil {
				return qerr
			}
			if exists {
				return ErrDeliveryInProgress
			}
			return err
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify('`+DeliveriesChannel+`', '')`)
		return err
	})
	return d, err
}

// Dispatch is what starting a delivery's workflow needs to know.
type Dispatch struct {
	DeliveryID   string
	EventID      string
	EventType    string
	EndpointID   string
	AccountID    string
	Series       int
	AttemptCount int
}

// DispatchPending claims up to limit pending deliveries whose workflow has not been started,
// hands them to start, and marks dispatched the ones start reports started. The claim holds row
// locks (FOR UPDATE SKIP LOCKED) until then, so several API instances share the work without
// starting a delivery twice at once; a row start fails on stays undispatched for the next round.
// It returns how many deliveries it claimed.
func (db *DB) DispatchPending(ctx context.Context, limit int, start func([]Dispatch) (started []string)) (int, error) {
	claimed := 0
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT id, event_id, event_type, endpoint_id, account_id, series, attempt_count FROM deliveries
			WHERE dispatched_at IS NULL AND status = 'pending'
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Dispatch, error) {
			var d Dispatch
			err := row.Scan(&d.DeliveryID, &d.EventID, &d.EventType, &d.EndpointID, &d.AccountID, &d.Series, &d.AttemptCount)
			return d, err
		})
		if err != nil || len(batch) == 0 {
			return err
		}
		claimed = len(batch)
		started := start(batch)
		if len(started) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE deliveries SET dispatched_at = now() WHERE id = ANY($1)`, started)
		return err
	})
	return claimed, err
}

// CountUndispatched reports how many pending deliveries wait for their workflow to start.
func (db *DB) CountUndispatched(ctx context.Context) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE dispatched_at IS NULL AND status = 'pending'`).Scan(&n)
	return n, err
}

// AttemptTarget is what one delivery attempt sends, and where: read afresh for every attempt, so
// a changed URL or rotated secret applies to the next attempt.
type AttemptTarget struct {
	DeliveryID string
	Status     bgcheck.DeliveryStatus
	EventID    string
	EventType  string
	Body       []byte
	URL        string
	Secret     string
	// Live is false when the endpoint has been deleted or disabled.
	Live bool
}

// FindAttemptTarget loads a delivery's event body and its endpoint's current URL and secret.
func (db *DB) FindAttemptTarget(ctx context.Context, deliveryID string) (*AttemptTarget, error) {
	var a AttemptTarget
	err := db.pool.QueryRow(ctx, `
		SELECT d.id, d.status, e.id, e.type, e.body, w.url, w.secret, (w.enabled AND w.deleted_at IS NULL)
		FROM deliveries d JOIN events e ON e.id = d.event_id JOIN webhook_endpoints w ON w.id = d.endpoint_id
		WHERE d.id = $1`, deliveryID).Scan(&a.DeliveryID, &a.Status, &a.EventID, &a.EventType, &a.Body, &a.URL, &a.Secret, &a.Live)
	if err != nil {
		return nil, notFound(err)
	}
	return &a, nil
}

// AttemptRecord is the outcome of one attempt, as the delivery activity reports it.
type AttemptRecord struct {
	DeliveryID      string
	Number          int
	StartedAt       time.Time
	Duration        time.Duration
	StatusCode      int    // 0: no answer
	Error           string // "" on success
	ResponseSnippet string
	// Status is what the delivery becomes: succeeded, pending (a retry follows at NextAttemptAt)
	// or failed (the schedule is spent).
	Status        bgcheck.DeliveryStatus
	NextAttemptAt *time.Time
}

// RecordAttempt stores an attempt and moves the delivery on, in one transaction. Recording the
// same attempt number again (an activity retried after a crash) replaces the earlier record, so
// the activity is idempotent. A delivery canceled meanwhile (its endpoint deleted) stays canceled.
func (db *DB) RecordAttempt(ctx context.Context, r AttemptRecord) error {
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	var code *int
	if r.StatusCode != 0 {
		code = &r.StatusCode
	}
	batch := &pgx.Batch{}
	batch.Queue(`
		INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, status_code, error, response_snippet)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (delivery_id, number) DO UPDATE SET started_at = excluded.started_at,
			duration_ms = excluded.duration_ms, status_code = excluded.status_code, error = excluded.error,
			response_snippet = excluded.response_snippet`,
		r.DeliveryID, r.Number, r.StartedAt, r.Duration.Milliseconds(), code, nullable(r.Error), nullable(r.ResponseSnippet))
	batch.Queue(`
		UPDATE deliveries SET
			status = CASE WHEN status = 'canceled' THEN status ELSE $2 END,
			attempt_count = greatest(attempt_count, $3),
			next_attempt_at = CASE WHEN status = 'canceled' THEN NULL ELSE $4::timestamptz END,
			last_status_code = $5, last_error = $6, updated_at = now()
		WHERE id = $1`, r.DeliveryID, r.Status, r.Number, r.NextAttemptAt, code, nullable(r.Error))
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, batch).Close()
	})
}

// CancelDelivery marks a delivery canceled (its endpoint was deleted or disabled).
func (db *DB) CancelDelivery(ctx context.Context, deliveryID string) error {
	_, err := db.pool.Exec(ctx, `UPDATE deliveries SET status = 'canceled', next_attempt_at = NULL, updated_at = now()
		WHERE id = $1 AND status = 'pending'`, deliveryID)
	return err
}
