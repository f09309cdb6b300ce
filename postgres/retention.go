package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultEventRetention is how long events, their deliveries and their attempts are kept unless
// configured otherwise (BGCHECK_RETENTION_EVENTS).
const DefaultEventRetention = 90 * 24 * time.Hour

// DefaultAuthGrace is how long sign-in records are kept after they stopped working: long enough
// that a late click on a link or a replayed token still meets its record and the error that
// explains it, short enough that the tables stay the size of the active sign-ins.
const DefaultAuthGrace = 24 * time.Hour

// DefaultPruneBatch is how many rows one DELETE removes: small enough that each statement holds
// its locks and writes its WAL briefly, so pruning a backlog does not stall the API.
const DefaultPruneBatch = 5000

// RetentionLockKey is the PostgreSQL advisory lock a pruning run holds, so that of several
// instances one prunes at a time. While a run is on, pg_locks shows it as an advisory lock with
// classid 1650942827 and objid 1920232960 (its high and low 32 bits).
const RetentionLockKey int64 = 0x6267636b_72746e00 // "bgckrtn"

// RetentionPolicy says what Prune deletes.
type RetentionPolicy struct {
	// Events is the age past which an event is deleted with its deliveries and their attempts;
	// zero keeps events forever.
	Events time.Duration
	// AuthGrace is how long after they stopped working sessions, refresh tokens and magic links
	// are deleted; zero means DefaultAuthGrace.
	AuthGrace time.Duration
	// Batch is how many rows each statement deletes; zero means DefaultPruneBatch.
	Batch int
}

// PruneResult counts what a Prune deleted.
type PruneResult struct {
	// Skipped is true when another instance held RetentionLockKey, so this one deleted nothing.
	Skipped         bool
	Events          int64
	Deliveries      int64
	Attempts        int64
	Sessions        int64 // with their refresh tokens, which RefreshTokens does not count
	RefreshTokens   int64
	MagicLinks      int64
	IdempotencyKeys int64
}

// Prune deletes what p no longer keeps, in batches of p.Batch rows, on one connection holding
// RetentionLockKey; when another instance holds it, Prune returns at once with Skipped set.
//
// An event goes only when it and every one of its deliveries are older than p.Events and none of
// them is pending: a delivery in flight, or one redelivered lately, keeps its event.
func (db *DB) Prune(ctx context.Context, p RetentionPolicy) (PruneResult, error) {
	var res PruneResult
	if p.AuthGrace <= 0 {
		p.AuthGrace = DefaultAuthGrace
	}
	if p.Batch <= 0 {
		p.Batch = DefaultPruneBatch
	}
	ran, err := db.withExclusiveConn(ctx, RetentionLockKey, func(ctx context.Context, conn *pgxpool.Conn) error {
		return prune(ctx, conn, p, &res)
	})
	res.Skipped = !ran && err == nil
	return res, err
}

// prune is Prune's work, on the connection that holds the lock.
func prune(ctx context.Context, conn *pgxpool.Conn, p RetentionPolicy, res *PruneResult) error {
	now := time.Now()
	if p.Events > 0 {
		if err := pruneEvents(ctx, conn, now.Add(-p.Events), p.Batch, res); err != nil {
			return err
		}
	}
	authCutoff := now.Add(-p.AuthGrace)
	for _, step := range []struct {
		sql   string
		count *int64
	}{
		// A session is over when revoked, or when it can no longer refresh (its refresh tokens
		// all expired); its access tokens outlive neither by a day. Its tokens go with it.
		{`DELETE FROM sessions WHERE id IN (
			SELECT s.id FROM sessions s
			WHERE s.revoked_at < $1
				OR (s.created_at < $1 AND NOT EXISTS (
					SELECT 1 FROM refresh_tokens r WHERE r.session_id = s.id AND r.expires_at >= $1))
			LIMIT $2)`, &res.Sessions},
		// Expired tokens of sessions still on: a used one is kept until then to catch a replay.
		{`DELETE FROM refresh_tokens WHERE jti IN (
			SELECT jti FROM refresh_tokens WHERE expires_at < $1 LIMIT $2)`, &res.RefreshTokens},
		{`DELETE FROM magic_links WHERE token_hash IN (
			SELECT token_hash FROM magic_links WHERE expires_at < $1 LIMIT $2)`, &res.MagicLinks},
		// Idempotency keys outlive their 24 hours by the grace, like the rest.
		{`DELETE FROM idempotency_keys WHERE (account_id, mode, key) IN (
			SELECT account_id, mode, key FROM idempotency_keys WHERE created_at < $1::timestamptz - interval '24 hours' LIMIT $2)`, &res.IdempotencyKeys},
	} {
		for {
			tag, err := conn.Exec(ctx, step.sql, authCutoff, p.Batch)
			if err != nil {
				return err
			}
			*step.count += tag.RowsAffected()
			if tag.RowsAffected() < int64(p.Batch) {
				break
			}
		}
	}
	return nil
}

// pruneEventsSQL deletes one batch of events older than $1, the oldest first
// (events_created_idx), with their deliveries and attempts. The children are deleted by the
// statement itself rather than left to ON DELETE CASCADE so that it can count them; the cascade
// then finds nothing left to do. $1 also bounds the deliveries' updated_at, so an old event
// redelivered lately stays; deliveries_event_idx serves that check and the delete.
const pruneEventsSQL = `
	WITH doomed AS (
		SELECT e.id FROM events e
		WHERE e.created_at < $1 AND NOT EXISTS (
			SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND (d.status = 'pending' OR d.updated_at >= $1))
		ORDER BY e.created_at LIMIT $2
	), gone_deliveries AS (
		DELETE FROM deliveries d USING doomed WHERE d.event_id = doomed.id RETURNING d.id
	), gone_attempts AS (
		DELETE FROM delivery_attempts a USING gone_deliveries g WHERE a.delivery_id = g.id RETURNING 1
	), gone_events AS (
		DELETE FROM events e USING doomed WHERE e.id = doomed.id RETURNING 1
	)
	SELECT (SELECT count(*) FROM gone_events), (SELECT count(*) FROM gone_deliveries), (SELECT count(*) FROM gone_attempts)`

func pruneEvents(ctx context.Context, conn *pgxpool.Conn, cutoff time.Time, batch int, res *PruneResult) error {
	for {
		var events, deliveries, attempts int64
		if err := conn.QueryRow(ctx, pruneEventsSQL, cutoff, batch).Scan(&events, &deliveries, &attempts); err != nil {
			return err
		}
		res.Events += events
		res.Deliveries += deliveries
		res.Attempts += attempts
		if events < int64(batch) {
			return nil
		}
	}
}
