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

// CreateEvent stores a test event (POST /events/test) and its deliveries (see insertEvent) in one
// transaction. Its data is the caller's, so it is marked a test event: the catalogue's schemas
// bind the service's own events only.
func (db *DB) CreateEvent(ctx context.Context, t bgcheck.Tenant, eventType string, data any) (*bgcheck.Event, error) {
	var ev *bgcheck.Event
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		ev, err = insertEventOf(ctx, tx, t, eventType, data, true)
		return err
	})
	return ev, err
}

// insertEvent renders an event's envelope once, stores it with its bytes, and writes one pending
// delivery per enabled endpoint of the tenant that subscribes to the type (or to "*"), all in
// the caller's transaction: the event and its deliveries exist together or not at all. The
// event's Deliveries is how many were written.
func insertEvent(ctx context.Context, tx pgx.Tx, t bgcheck.Tenant, eventType string, data any) (*bgcheck.Event, error) {
	return insertEventOf(ctx, tx, t, eventType, data, false)
}

// insertEventOf is insertEvent, marking a test event (its data the caller's) as such.
func insertEventOf(ctx context.Context, tx pgx.Tx, t bgcheck.Tenant, eventType string, data any, test bool) (*bgcheck.Event, error) {
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
		SELECT f.n, CASE WHEN f.n > 0 THEN pg_notify('`+DeliveriesChannel+`', '')::text END
		FROM (SELECT count(*) AS n FROM fanout) f`,
		ev.ID, ev.AccountID, ev.Mode, ev.Type, ev.CreatedAt)
	br := tx.SendBatch(ctx, batch)
	var notified *string // pg_notify's void, as text: only there to be called when n > 0
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&ev.Deliveries, &notified)
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return nil, err
	}
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
