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
// The two statements go in one batch outside any transaction: PostgreSQL runs a batch as one
// implicit transaction, committed after its last statement, so the event costs one round trip
// instead of three (BEGIN, the batch, COMMIT). The dispatchers are told after the commit.
func (db *DB) CreateEvent(ctx context.Context, t bgcheck.Tenant, eventType string, data any) (*bgcheck.Event, error) {
	ev, batch, err := eventBatch(t, eventType, data, true)
	if err != nil {
		return nil, err
	}
	if err := readEventBatch(db.pool.SendBatch(ctx, batch), ev); err != nil {
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
	ev, batch, err := eventBatch(t, eventType, data, false)
	if err != nil {
		return nil, err
	}
	if err := readEventBatch(tx.SendBatch(ctx, batch), ev); err != nil {
		return nil, err
	}
	if ev.Deliveries > 0 {
		if err := announceDeliveries(ctx, tx); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

// eventBatch renders a new event and queues its insert and its deliveries' (one per enabled
// endpoint of the tenant subscribed to the type or to "*"); test marks an event whose data is
// the caller's.
func eventBatch(t bgcheck.Tenant, eventType string, data any, test bool) (*bgcheck.Event, *pgx.Batch, error) {
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
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO events (id, account_id, mode, type, body, created_at, test_event)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, ev.ID, ev.AccountID, ev.Mode, ev.Type, []byte(ev.Body), ev.CreatedAt, test)
	batch.Queue(`
		WITH fanout AS (
			INSERT INTO deliveries (id, event_id, endpoint_id, account_id, mode, event_type, next_attempt_at)
			SELECT 'dlv_' || replace(bgcheck_uuidv7()::text, '-', ''), $1, e.id, e.account_id, e.mode, $4, $5
			FROM webhook_endpoints e
			WHERE e.account_id = $2 AND e.mode = $3 AND e.enabled AND e.deleted_at IS NULL
			  AND (e.events @> ARRAY[$4::text] OR e.events @> ARRAY['*'])
			RETURNING 1
		)
		SELECT count(*) FROM fanout`,
		ev.ID, ev.AccountID, ev.Mode, ev.Type, ev.CreatedAt)
	return ev, batch, nil
}

// readEventBatch reads eventBatch's results into ev.Deliveries and closes them.
func readEventBatch(br pgx.BatchResults, ev *bgcheck.Event) error {
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&ev.Deliveries)
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	return err
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
