package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// DeliveriesChannel is the PostgreSQL notification channel on which new undispatched deliveries
// are announced. Notifications are sent once the writing transaction has committed (see
// announcer), so a listener never looks for rows it cannot see yet.
const DeliveriesChannel = "bgcheck_deliveries"

// CreateEvent stores a test event (POST /events/test) and its deliveries (see insertEvent)
// together, and returns once they are committed. Its data is the caller's, so it is marked a
// test event: the catalogue's schemas bind the service's own events only.
//
// Events created this way, each on its own, are written by the event writer, which puts the
// events waiting at the same moment in one statement and one commit; the dispatchers are told
// after the commit.
func (db *DB) CreateEvent(ctx context.Context, t bgcheck.Tenant, eventType string, data any) (*bgcheck.Event, error) {
	ev, err := newEvent(t, eventType, data)
	if err != nil {
		return nil, err
	}
	if err := db.events.write(ctx, ev, true); err != nil {
		return nil, err
	}
	return ev, nil
}

// insertEvent renders an event's envelope once, stores it with its bytes, and writes one pending
// delivery per enabled endpoint of the tenant that subscribes to the type (or to "*"), all in
// the caller's transaction: the event and its deliveries exist together or not at all. The
// event's Deliveries is how many were written.
func insertEvent(ctx context.Context, tx pgx.Tx, t bgcheck.Tenant, eventType string, data any) (*bgcheck.Event, error) {
	ev, err := newEvent(t, eventType, data)
	if err != nil {
		return nil, err
	}
	var rows eventRows
	rows.add(ev, false)
	counts, err := rows.insert(ctx, tx)
	if err != nil {
		return nil, err
	}
	ev.Deliveries = counts[ev.ID]
	if ev.Deliveries > 0 {
		if err := announceNewDeliveries(ctx, tx); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

// newEvent renders a new event of the tenant.
func newEvent(t bgcheck.Tenant, eventType string, data any) (*bgcheck.Event, error) {
	ev := &bgcheck.Event{
		ID:        bgcheck.NewID(bgcheck.PrefixEvent),
		AccountID: t.AccountID,
		Mode:      t.Mode,
		Type:      eventType,
		// PostgreSQL keeps microseconds: truncate so the stored time and the envelope's agree.
		CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	body, err := bgcheck.EncodeEnvelope(ev.ID, ev.Type, ev.CreatedAt, data)
	if err != nil {
		return nil, err
	}
	ev.Body = body
	return ev, nil
}

// ListEvents returns a page of the tenant's events, newest first; eventType "" means every type.
func (db *DB) ListEvents(ctx context.Context, t bgcheck.Tenant, eventType string, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.Event], error) {
	return page(ctx, db, p, func(e *bgcheck.Event) string { return e.ID }, `
		SELECT id, account_id, mode, type, body, created_at FROM events
		WHERE account_id = $1 AND mode = $2 AND ($3 = '' OR type = $3) AND ($4 = '' OR id < $4)
		ORDER BY id DESC LIMIT $5`, t.AccountID, t.Mode, eventType)
}

// FindEvent returns one of the tenant's events.
func (db *DB) FindEvent(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.Event, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, account_id, mode, type, body, created_at FROM events
		WHERE id = $1 AND account_id = $2 AND mode = $3`, id, t.AccountID, t.Mode)
	return collectOne[bgcheck.Event](rows, err)
}
