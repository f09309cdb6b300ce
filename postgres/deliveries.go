package postgres

import (
	"context"
	"slices"
	"strings"
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
	return db.redeliver(ctx, t.AccountID, t.Mode, id, 0)
}

// redeliver is Redeliver for a delivery of the account in the given mode, or in either mode when
// mode is "" (an admin acts across both; see RedeliverInAccount). stalledSeries, when not 0,
// also admits a dispatched delivery still pending in that series: its workflow has ended.
func (db *DB) redeliver(ctx context.Context, accountID string, mode bgcheck.Mode, id string, stalledSeries int) (*bgcheck.Delivery, error) {
	var d *bgcheck.Delivery
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			UPDATE deliveries SET status = 'pending', series = series + 1, dispatched_at = NULL,
				dispatch_lease_until = NULL, dispatch_after = NULL, dispatch_failures = 0, dispatch_error = NULL,
				reconciled_at = NULL, next_attempt_at = now(), updated_at = now()
			WHERE id = $1 AND account_id = $2 AND ($3 = '' OR mode = $3)
				AND (status <> 'pending' OR (series = $4 AND dispatched_at IS NOT NULL))
			RETURNING `+deliveryColumns, id, accountID, mode, stalledSeries)
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
		err = announceNewDeliveries(ctx, tx)
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
	// Failures counts the earlier starts of this series that failed.
	Failures int
}

// ClaimDispatches leases up to limit pending deliveries whose workflow has not been started and
// whose backoff (after failed starts) has passed, oldest first, and returns them. The lease is
// committed at once, so no lock is held while the caller talks to Temporal; other dispatchers
// skip leased rows until the lease expires (a dispatcher that died mid-batch). The caller ends
// each lease with MarkDispatched, DeferDispatch or ReleaseDispatches.
func (db *DB) ClaimDispatches(ctx context.Context, limit int, lease time.Duration) ([]Dispatch, error) {
	rows, err := db.pool.Query(ctx, `
		UPDATE deliveries d SET dispatch_lease_until = now() + $2 * interval '1 millisecond'
		FROM (
			SELECT id FROM deliveries
			WHERE dispatched_at IS NULL AND status = 'pending'
				AND (dispatch_lease_until IS NULL OR dispatch_lease_until < now())
				AND (dispatch_after IS NULL OR dispatch_after <= now())
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
		) claimed
		WHERE d.id = claimed.id
		RETURNING d.id, d.event_id, d.event_type, d.endpoint_id, d.account_id, d.series, d.attempt_count, d.dispatch_failures`,
		limit, lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	batch, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Dispatch])
	if err != nil {
		return nil, err
	}
	slices.SortFunc(batch, func(a, b Dispatch) int { return strings.Compare(a.DeliveryID, b.DeliveryID) })
	return batch, nil
}

// MarkDispatched records that the deliveries' workflows exist, ending their leases.
func (db *DB) MarkDispatched(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.pool.Exec(ctx, `UPDATE deliveries SET dispatched_at = now(), dispatch_lease_until = NULL,
		dispatch_after = NULL, dispatch_error = NULL WHERE id = ANY($1) AND dispatched_at IS NULL`, ids)
	return err
}

// DeferDispatch ends the lease of a delivery whose workflow could not be started for a reason of
// its own, and backs it off: 2^failures seconds, at most MaxDispatchBackoff, so a row that keeps
// failing costs one try per backoff rather than one per round. reason is kept for operators.
func (db *DB) DeferDispatch(ctx context.Context, id, reason string) error {
	_, err := db.pool.Exec(ctx, `UPDATE deliveries SET dispatch_lease_until = NULL,
		dispatch_failures = dispatch_failures + 1, dispatch_error = $2,
		dispatch_after = now() + least(interval '1 second' * power(2, least(dispatch_failures, 20)), $3 * interval '1 second')
		WHERE id = $1 AND dispatched_at IS NULL`, id, reason, MaxDispatchBackoff.Seconds())
	return err
}

// MaxDispatchBackoff bounds the wait between start attempts for one delivery.
const MaxDispatchBackoff = 5 * time.Minute

// ReleaseDispatches ends leases without blame (Temporal as a whole was unreachable): the rows
// are claimable again at once.
func (db *DB) ReleaseDispatches(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.pool.Exec(ctx, `UPDATE deliveries SET dispatch_lease_until = NULL WHERE id = ANY($1) AND dispatched_at IS NULL`, ids)
	return err
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
	AccountID  string
	EndpointID string
	Status     bgcheck.DeliveryStatus
	EventID    string
	EventType  string
	Body       []byte
	URL        string
	Secret     string
	// PreviousSecret, when not "", is the secret a rotation replaced, still signing beside Secret.
	PreviousSecret string
	// Live is false when the endpoint has been deleted or disabled.
	Live bool
	// Paused is true while the endpoint is paused: attempts wait for its resume.
	Paused bool
}

// FindAttemptTarget loads a delivery's event body and its endpoint's current URL and secret.
func (db *DB) FindAttemptTarget(ctx context.Context, deliveryID string) (*AttemptTarget, error) {
	var a AttemptTarget
	var plain, keyID, prevKeyID *string
	var sealed, prevSealed []byte
	err := db.pool.QueryRow(ctx, `
		SELECT d.id, d.account_id, d.status, e.id, e.type, e.body, w.id, w.url, w.secret, w.secret_key_id, w.secret_sealed,
			(w.enabled AND w.deleted_at IS NULL), w.paused_at IS NOT NULL,
			CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret_key_id END,
			CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret_sealed END
		FROM deliveries d JOIN events e ON e.id = d.event_id JOIN webhook_endpoints w ON w.id = d.endpoint_id
		WHERE d.id = $1`, deliveryID).Scan(&a.DeliveryID, &a.AccountID, &a.Status, &a.EventID, &a.EventType, &a.Body,
		&a.EndpointID, &a.URL, &plain, &keyID, &sealed, &a.Live, &a.Paused, &prevKeyID, &prevSealed)
	if err != nil {
		return nil, notFound(err)
	}
	if a.Secret, err = db.openSecret(a.EndpointID, plain, keyID, sealed); err != nil {
		return nil, err
	}
	if prevSealed != nil {
		if a.PreviousSecret, err = db.openSecret(a.EndpointID, nil, prevKeyID, prevSealed); err != nil {
			return nil, err
		}
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

// RecordAttempt stores an attempt and moves the delivery on, in one statement (one transaction,
// one round trip). Recording the same attempt number again (an activity retried after a crash)
// replaces the earlier record, so the activity is idempotent. A delivery canceled meanwhile (its
// endpoint deleted) stays canceled.
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
	sql := recordSuccessSQL
	if r.Error != "" {
		sql = recordFailureSQL
	}
	_, err := db.pool.Exec(ctx, sql, r.DeliveryID, r.Number, r.StartedAt, r.Duration.Milliseconds(), code,
		nullable(r.Error), nullable(r.ResponseSnippet), r.Status, r.NextAttemptAt)
	return err
}

// recordAttemptSQL stores attempt $2 of delivery $1 and moves the delivery on; it ends with the
// endpoint's health, which recordSuccessSQL and recordFailureSQL add. The parts of one WITH
// statement all run, whether or not the final SELECT reads them.
const recordAttemptSQL = `
	WITH attempt AS (
		INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, status_code, error, response_snippet)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (delivery_id, number) DO UPDATE SET started_at = excluded.started_at,
			duration_ms = excluded.duration_ms, status_code = excluded.status_code, error = excluded.error,
			response_snippet = excluded.response_snippet
	), delivery AS (
		UPDATE deliveries SET
			status = CASE WHEN status = 'canceled' THEN status ELSE $8 END,
			attempt_count = greatest(attempt_count, $2),
			next_attempt_at = CASE WHEN status = 'canceled' THEN NULL ELSE $9::timestamptz END,
			last_status_code = $5, last_error = $6, held_by_pause = false, updated_at = now()
		WHERE id = $1
		RETURNING endpoint_id
	), endpoint AS (`

// The endpoint's health, written only when it changes (or a minute after the last success), so a
// busy healthy endpoint's row is not rewritten on every attempt.
const (
	recordSuccessSQL = recordAttemptSQL + `
		UPDATE webhook_endpoints SET last_success_at = now(), failing_since = NULL
		WHERE id = (SELECT endpoint_id FROM delivery)
			AND (failing_since IS NOT NULL OR last_success_at IS NULL OR last_success_at < now() - interval '1 minute')
	)
	SELECT 1`
	recordFailureSQL = recordAttemptSQL + `
		UPDATE webhook_endpoints SET failing_since = now(), health_check_pending = true
		WHERE id = (SELECT endpoint_id FROM delivery) AND failing_since IS NULL
	)
	SELECT 1`
)

// CancelDelivery marks a delivery canceled (its endpoint was deleted or disabled).
func (db *DB) CancelDelivery(ctx context.Context, deliveryID string) error {
	_, err := db.pool.Exec(ctx, `UPDATE deliveries SET status = 'canceled', next_attempt_at = NULL, updated_at = now()
		WHERE id = $1 AND status = 'pending'`, deliveryID)
	return err
}
