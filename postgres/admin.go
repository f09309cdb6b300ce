package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// The methods in this file serve an account's admins, who see the account across both modes:
// they filter on the account alone, never on a mode.

// OverviewFailedDeliveries is how many failed deliveries AccountOverview returns.
const OverviewFailedDeliveries = 20

// OverviewWindow is the span the overview counts finished deliveries over. A bounded window
// keeps the overview as fast on the thousandth day as on the first: the counts are an index-only
// range scan of deliveries_account_created_idx, not a pass over the account's whole history.
const OverviewWindow = 24 * time.Hour

// AccountOverview is the first screen of an account's dashboard, counted over both modes.
type AccountOverview struct {
	Account          bgcheck.Account
	Candidates       int
	WebhookEndpoints int // not deleted
	Events24h        int // created in the last 24 hours
	// Deliveries counts the deliveries created in the last OverviewWindow by status, except
	// Pending, which counts every delivery still in flight: a retry schedule can span more than
	// the window, and a delivery stuck for days is what an admin most needs to see.
	Deliveries DeliveryCounts
	// FailedDeliveries are the newest failed deliveries, newest first.
	FailedDeliveries []*bgcheck.Delivery
	// Hourly counts the deliveries created in each of the last 24 hours (the current one
	// included), by their status now, oldest hour first: always 24 entries.
	Hourly []HourlyDeliveries
}

// HourlyDeliveries counts the deliveries created in one hour by their status now; the admin API
// writes it as it is.
type HourlyDeliveries struct {
	Hour      time.Time `json:"hour"`
	Pending   int       `json:"pending"`
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`
	Canceled  int       `json:"canceled"`
}

// DeliveryCounts counts an account's deliveries by status.
type DeliveryCounts struct {
	Pending   int
	Succeeded int
	Failed    int
	Canceled  int
}

// The overview's statements, each served by an index (EXPLAIN on a million deliveries is in
// explain_test.go). $1 is the account; $2 of overviewCountsSQL is OverviewWindow.
const (
	// Pending comes from deliveries_account_status_idx (few rows: only those in flight), the
	// window's outcomes from deliveries_account_created_idx, which includes status so the heap is
	// not read.
	overviewCountsSQL = `
		SELECT a.id, a.name, a.created_at,
			(SELECT count(*) FROM candidates c WHERE c.account_id = a.id),
			(SELECT count(*) FROM webhook_endpoints w WHERE w.account_id = a.id AND w.deleted_at IS NULL),
			(SELECT count(*) FROM events e WHERE e.account_id = a.id AND e.created_at > now() - interval '24 hours'),
			(SELECT count(*) FROM deliveries p WHERE p.account_id = a.id AND p.status = 'pending'),
			d.succeeded, d.failed, d.canceled
		FROM accounts a CROSS JOIN LATERAL (
			SELECT count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
				count(*) FILTER (WHERE status = 'failed') AS failed,
				count(*) FILTER (WHERE status = 'canceled') AS canceled
			FROM deliveries WHERE account_id = a.id AND created_at > now() - $2::interval) d
		WHERE a.id = $1`
	overviewFailedSQL = `SELECT ` + deliveryColumns + ` FROM deliveries
		WHERE account_id = $1 AND status = 'failed' ORDER BY id DESC LIMIT $2`
	// The deliveries are grouped by hour first, over a range of created_at the index serves; only
	// then does every hour of the window become a row, so a quiet hour is a zero, not a gap.
	overviewHourlySQL = `
		SELECT h.hour, coalesce(c.pending, 0), coalesce(c.succeeded, 0), coalesce(c.failed, 0), coalesce(c.canceled, 0)
		FROM generate_series(date_trunc('hour', now()) - interval '23 hours', date_trunc('hour', now()), interval '1 hour') AS h(hour)
		LEFT JOIN (
			SELECT date_trunc('hour', created_at) AS hour,
				count(*) FILTER (WHERE status = 'pending') AS pending,
				count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
				count(*) FILTER (WHERE status = 'failed') AS failed,
				count(*) FILTER (WHERE status = 'canceled') AS canceled
			FROM deliveries
			WHERE account_id = $1 AND created_at >= date_trunc('hour', now()) - interval '23 hours'
			GROUP BY 1) c ON c.hour = h.hour
		ORDER BY h.hour`
)

// FindAccountOverview returns the overview of an account: its counts come from one statement,
// sent in one round trip with the query of its newest failed deliveries and the hourly series.
// An unknown account is bgcheck.ErrNotFound.
func (db *DB) FindAccountOverview(ctx context.Context, accountID string) (*AccountOverview, error) {
	var o AccountOverview
	batch := &pgx.Batch{}
	batch.Queue(overviewCountsSQL, accountID, OverviewWindow).QueryRow(func(row pgx.Row) error {
		return row.Scan(&o.Account.ID, &o.Account.Name, &o.Account.CreatedAt,
			&o.Candidates, &o.WebhookEndpoints, &o.Events24h,
			&o.Deliveries.Pending, &o.Deliveries.Succeeded, &o.Deliveries.Failed, &o.Deliveries.Canceled)
	})
	batch.Queue(overviewFailedSQL, accountID, OverviewFailedDeliveries).Query(func(rows pgx.Rows) error {
		var err error
		o.FailedDeliveries, err = pgx.CollectRows(rows, pgx.RowToAddrOfStructByNameLax[bgcheck.Delivery])
		return err
	})
	batch.Queue(overviewHourlySQL, accountID).Query(func(rows pgx.Rows) error {
		var err error
		o.Hourly, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (HourlyDeliveries, error) {
			var h HourlyDeliveries
			err := row.Scan(&h.Hour, &h.Pending, &h.Succeeded, &h.Failed, &h.Canceled)
			return h, err
		})
		return err
	})
	if err := db.pool.SendBatch(ctx, batch).Close(); err != nil {
		return nil, notFound(err)
	}
	if o.FailedDeliveries == nil {
		o.FailedDeliveries = []*bgcheck.Delivery{}
	}
	return &o, nil
}

// DeliveryFilter narrows a list of an account's deliveries; a zero field matches everything.
type DeliveryFilter struct {
	Status     bgcheck.DeliveryStatus
	Mode       bgcheck.Mode
	EventType  string
	EndpointID string
}

// ListAccountDeliveries returns a page of an account's deliveries in both modes, newest first.
func (db *DB) ListAccountDeliveries(ctx context.Context, accountID string, f DeliveryFilter, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.Delivery], error) {
	return page(ctx, db, p, func(d *bgcheck.Delivery) string { return d.ID }, `
		SELECT `+deliveryColumns+` FROM deliveries
		WHERE account_id = $1 AND ($2 = '' OR status = $2) AND ($3 = '' OR mode = $3)
			AND ($4 = '' OR event_type = $4) AND ($5 = '' OR endpoint_id = $5) AND ($6 = '' OR id < $6)
		ORDER BY id DESC LIMIT $7`, accountID, f.Status, f.Mode, f.EventType, f.EndpointID)
}

// FindAccountDelivery is FindDelivery for an admin: one of the account's deliveries, of either
// mode, with its attempts, oldest first. Another account's is bgcheck.ErrNotFound.
func (db *DB) FindAccountDelivery(ctx context.Context, accountID, id string) (*bgcheck.Delivery, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM deliveries
		WHERE id = $1 AND account_id = $2`, id, accountID)
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

// EndpointHealthWindow is the span over which ListAccountEndpointHealth counts outcomes.
const EndpointHealthWindow = 24 * time.Hour

// EndpointHealth is an endpoint with the outcomes of its deliveries created in the last
// EndpointHealthWindow.
type EndpointHealth struct {
	*bgcheck.WebhookEndpoint
	Succeeded int
	Failed    int
	Pending   int
}

// endpointHealthSQL counts with count(d.status), not count(d.id), so that
// deliveries_endpoint_created_idx, which includes status, answers without reading the heap.
const endpointHealthSQL = `
		SELECT w.id, w.account_id, w.mode, w.url, w.events, w.description, w.enabled, w.created_at, w.updated_at,
			w.last_success_at, w.failing_since, w.disabled_at, w.disabled_reason, w.paused_at,
			count(d.status) FILTER (WHERE d.status = 'succeeded'),
			count(d.status) FILTER (WHERE d.status = 'failed'),
			count(d.status) FILTER (WHERE d.status = 'pending')
		FROM webhook_endpoints w
		LEFT JOIN deliveries d ON d.endpoint_id = w.id AND d.created_at > now() - $2::interval
		WHERE w.account_id = $1 AND w.deleted_at IS NULL
		GROUP BY w.id ORDER BY w.id DESC`

// ListAccountEndpointHealth returns every endpoint of the account (both modes, not deleted),
// newest first, each with how its recent deliveries ended. An account has few endpoints, so
// there is no paging.
func (db *DB) ListAccountEndpointHealth(ctx context.Context, accountID string) ([]EndpointHealth, error) {
	rows, err := db.pool.Query(ctx, endpointHealthSQL, accountID, EndpointHealthWindow)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (EndpointHealth, error) {
		e := EndpointHealth{WebhookEndpoint: &bgcheck.WebhookEndpoint{}}
		w := e.WebhookEndpoint
		err := row.Scan(&w.ID, &w.AccountID, &w.Mode, &w.URL, &w.Events, &w.Description, &w.Enabled, &w.CreatedAt, &w.UpdatedAt,
			&w.LastSuccessAt, &w.FailingSince, &w.DisabledAt, &w.DisabledReason, &w.PausedAt, &e.Succeeded, &e.Failed, &e.Pending)
		return e, err
	})
}

// RedeliverInAccount is Redeliver for an admin: the delivery may be of either mode, but must be
// the account's (another account's is bgcheck.ErrNotFound).
func (db *DB) RedeliverInAccount(ctx context.Context, accountID, id string) (*bgcheck.Delivery, error) {
	if accountID == "" {
		return nil, bgcheck.ErrNotFound
	}
	return db.redeliver(ctx, accountID, "", id, 0)
}
