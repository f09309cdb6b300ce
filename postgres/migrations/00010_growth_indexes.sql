-- +goose NO TRANSACTION
-- +goose Up
-- Indexes for growth: the admin overview counts a bounded window of an account's deliveries, and
-- retention deletes old events, whose deliveries go with them by ON DELETE CASCADE.
--
-- deliveries and events are the big tables, so every index here is built CONCURRENTLY: writes go
-- on while it builds. That cannot run in a transaction, hence NO TRANSACTION above; goose then runs
-- each statement on its own. A build that fails (or is interrupted) leaves an INVALID index behind
-- under the same name, which IF NOT EXISTS would keep; so each index is first dropped, and running
-- the migration again after a failure rebuilds it.

-- Overview cards and hourly chart: an index-only range scan over one account's recent deliveries.
DROP INDEX CONCURRENTLY IF EXISTS deliveries_account_created_idx;
CREATE INDEX CONCURRENTLY deliveries_account_created_idx ON deliveries (account_id, created_at) INCLUDE (status);

-- Endpoint health on the dashboard: each endpoint's deliveries of the last 24 hours.
DROP INDEX CONCURRENTLY IF EXISTS deliveries_endpoint_created_idx;
CREATE INDEX CONCURRENTLY deliveries_endpoint_created_idx ON deliveries (endpoint_id, created_at) INCLUDE (status);

-- Deleting an event cascades to its deliveries: without this every deleted event scans deliveries.
DROP INDEX CONCURRENTLY IF EXISTS deliveries_event_idx;
CREATE INDEX CONCURRENTLY deliveries_event_idx ON deliveries (event_id);

-- Retention finds the oldest events of every account.
DROP INDEX CONCURRENTLY IF EXISTS events_created_idx;
CREATE INDEX CONCURRENTLY events_created_idx ON events (created_at);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS events_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_event_idx;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_endpoint_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_account_created_idx;
