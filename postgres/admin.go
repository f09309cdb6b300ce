package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
)

// The methods in this file serve an account's admins, who see the account across both modes:
// they filter on the account alone, never on a mode.

// OverviewFailedDeliveries is how many failed deliveries AccountOverview returns.
const OverviewFailedDeliveries = 20

// AccountOverview is the first screen of an account's dashboard, counted over both modes.
type AccountOverview struct {
	Account          bgcheck.Account
	Candidates       int
	WebhookEndpoints int // not deleted
	Events24h        int // created in the last 24 hours
	Deliveries       DeliveryCounts
	// FailedDeliveries are the newest failed deliveries, newest first.
	FailedDeliveries []*bgcheck.Delivery
}

// DeliveryCounts counts an account's deliveries by status.
type DeliveryCounts struct {
	Pending   int
	Succeeded int
	Failed    int
	Canceled  int
}

// FindAccountOverview returns the overview of an account: its counts come from one statement (one
// pass over the account's deliveries, counting each status with FILTER), sent in one round trip
// with the query of its newest failed deliveries. An unknown account is bgcheck.ErrNotFound.
func (db *DB) FindAccountOverview(ctx context.Context, accountID string) (*AccountOverview, error) {
	var o AccountOverview
	batch := &pgx.Batch{}
	batch.Queue(`
		SELECT a.id, a.name, a.created_at,
			(SELECT count(*) FROM candidates c WHERE c.account_id = a.id),
			(SELECT count(*) FROM webhook_endpoints w WHERE w.account_id = a.id AND w.deleted_at IS NULL),
			(SELECT count(*) FROM events e WHERE e.account_id = a.id AND e.created_at > now() - interval '24 hours'),
			d.pending, d.succeeded, d.failed, d.canceled
		FROM accounts a CROSS JOIN LATERAL (
			SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
				count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
				count(*) FILTER (WHERE status = 'failed') AS failed,
				count(*) FILTER (WHERE status = 'canceled') AS canceled
			FROM deliveries WHERE account_id = a.id) d
		WHERE a.id = $1`, accountID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&o.Account.ID, &o.Account.Name, &o.Account.CreatedAt,
			&o.Candidates, &o.WebhookEndpoints, &o.Events24h,
			&o.Deliveries.Pending, &o.Deliveries.Succeeded, &o.Deliveries.Failed, &o.Deliveries.Canceled)
	})
	batch.Queue(`SELECT `+deliveryColumns+` FROM deliveries
		WHERE account_id = $1 AND status = 'failed' ORDER BY id DESC LIMIT $2`, accountID, OverviewFailedDeliveries).
		Query(func(rows pgx.Rows) error {
			var err error
			o.FailedDeliveries, err = pgx.CollectRows(rows, pgx.RowToAddrOfStructByNameLax[bgcheck.Delivery])
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

// RedeliverInAccount is Redeliver for an admin: the delivery may be of either mode, but must be
// the account's (another account's is bgcheck.ErrNotFound).
func (db *DB) RedeliverInAccount(ctx context.Context, accountID, id string) (*bgcheck.Delivery, error) {
	if accountID == "" {
		return nil, bgcheck.ErrNotFound
	}
	return db.redeliver(ctx, accountID, "", id)
}

// NewAPIKeyFor is the record that stores a key issued by auth.IssueAPIKey for an account: the one
// way the admin API and the operator CLI turn an issued key into a row.
func NewAPIKeyFor(accountID string, k auth.IssuedKey) NewAPIKey {
	return NewAPIKey{
		AccountID: accountID, Name: k.Name, Mode: k.Mode, Hash: k.Hash, Prefix: k.Prefix, Last4: k.Last4,
		Scopes: k.Scopes, AllowedIPs: k.AllowedIPs, ExpiresAt: k.ExpiresAt,
	}
}
