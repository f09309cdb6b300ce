-- +goose Up
-- Delivery over Temporal. A delivery row is written in the transaction that stores its event (the
-- outbox); dispatched_at stays NULL until its workflow has been started, so a crash or a Temporal
-- outage between the commit and the start leaves a row the dispatcher finds and starts later.
-- series counts redeliveries: each is a fresh attempt series with its own workflow.
ALTER TABLE deliveries ADD COLUMN series integer NOT NULL DEFAULT 1;
ALTER TABLE deliveries ADD COLUMN dispatched_at timestamptz;
CREATE INDEX deliveries_undispatched_idx ON deliveries (id) WHERE dispatched_at IS NULL AND status = 'pending';
CREATE INDEX deliveries_account_idx ON deliveries (account_id, id DESC);
CREATE INDEX events_type_idx ON events (account_id, mode, type, id DESC);

-- A UUIDv7 made in SQL (PostgreSQL 15 has none built in), so delivery ids created by
-- INSERT … SELECT sort by creation time like the ids the service makes in Go.
-- +goose StatementBegin
CREATE FUNCTION bgcheck_uuidv7() RETURNS uuid AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$ LANGUAGE sql VOLATILE;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION bgcheck_uuidv7();
DROP INDEX events_type_idx;
DROP INDEX deliveries_account_idx;
DROP INDEX deliveries_undispatched_idx;
ALTER TABLE deliveries DROP COLUMN dispatched_at;
ALTER TABLE deliveries DROP COLUMN series;
