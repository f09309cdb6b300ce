package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// DeliveriesChannel is the PostgreSQL notification channel on which new undispatched deliveries
// are announced. Notifications are sent only when the transaction commits, so a listener never
// looks for rows it cannot see yet.
const DeliveriesChannel = "bgcheck_deliveries"

// CreateEvent stores a test event (POST /events/test) and its deliveries (see insertEvent)
// together. Its data is the caller's, so it is marked a test event: the catalogue's schemas bind
// the service's own events only.
//
// The statement runs on its own, outside a transaction block, as its own transaction: one round
// trip instead of three (BEGIN, the insert, COMMIT). The dispatchers are told after the commit.
func (db *DB) CreateEvent(ctx context.Context, t bgcheck.Tenant, eventType string, data any) (*bgcheck.Event, error) {
	ev, args, err := newEvent(t, eventType, data, true)
	if err != nil {
		return nil, err
	}
	if err := db.pool.QueryRow(ctx, insertEventSQL, args...).Scan(&ev.Deliveries); err != nil {
		return nil, err
	}
	if ev.Deliveries > 0 {
		db.announcer.announce()
	}
	return ev, nil
}

// insertEvent renders an event's envelope once, stores it with its bytes, and writes one pending
// delivery per enabled endpoint of the tenant that subscribes to the type (or to "*"), all in
// the caller's transaction: the event and its deliveries exist together or not at all. The
// event's Deliveries is how many were written.
func insertEvent(ctx context.Context, tx pgx.Tx, t bgcheck.Tenant, eventType string, data any) (*bgcheck.Event, error) {
	ev, args, err := newEvent(t, eventType, data, false)
	if err != nil {
		return nil, err
	}
	if err := tx.QueryRow(ctx, insertEventSQL, args...).Scan(&ev.Deliveries); err != nil {
		return nil, err
	}
	if ev.Deliveries > 0 {
		if err := announceDeliveries(ctx, tx); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

// newEvent renders a new event and returns the arguments of insertEventSQL for it; test marks an
// event whose data is the caller's.
func newEvent(t bgcheck.Tenant, eventType string, data any, test bool) (*bgcheck.Event, []any, error) {
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
		return nil, nil, err
	}
	ev.Body = body
	return ev, []any{ev.ID, ev.AccountID, ev.Mode, ev.Type, []byte(ev.Body), ev.CreatedAt, test}, nil
}

// insertEventSQL stores an event and writes its deliveries, one per enabled endpoint of the
// tenant subscribed to the type or to "*", in one statement, and counts the deliveries. One
// statement costs PostgreSQL markedly less than the same two pipelined: pgbench, 16 clients on
// this 2-core machine, 2,990–3,140 events/s against 2,330–2,530/s.
const insertEventSQL = `
	WITH event AS (
		INSERT INTO events (id, account_id, mode, type, body, created_at, test_event)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING id
	), fanout AS (
		INSERT INTO deliveries (id, event_id, endpoint_id, account_id, mode, event_type, next_attempt_at)
		SELECT 'dlv_' || replace(bgcheck_uuidv7()::text, '-', ''), event.id, e.id, e.account_id, e.mode, $4, $6
		FROM event, webhook_endpoints e
		WHERE e.account_id = $2 AND e.mode = $3 AND e.enabled AND e.deleted_at IS NULL
		  AND (e.events @> ARRAY[$4::text] OR e.events @> ARRAY['*'])
		RETURNING 1
	)
	SELECT count(*) FROM fanout`

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
