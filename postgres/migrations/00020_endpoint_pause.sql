-- +goose NO TRANSACTION
-- +goose Up
-- Pausing an endpoint (issue 16): its deliveries' attempts are held, not made and not counted,
-- until it is resumed. held_by_pause marks a delivery whose workflow waits for the resume;
-- resume_signal_pending that the dispatcher has still to tell it. deliveries is a big table: the
-- columns' constant defaults need no rewrite, and the indexes are built CONCURRENTLY (dropped
-- first, so a rerun after a failed build rebuilds them), hence NO TRANSACTION.
ALTER TABLE webhook_endpoints ADD COLUMN IF NOT EXISTS paused_at timestamptz;
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS held_by_pause boolean NOT NULL DEFAULT false;
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS resume_signal_pending boolean NOT NULL DEFAULT false;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_held_idx;
CREATE INDEX CONCURRENTLY deliveries_held_idx ON deliveries (endpoint_id) WHERE held_by_pause;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_resume_idx;
CREATE INDEX CONCURRENTLY deliveries_resume_idx ON deliveries (id) WHERE resume_signal_pending;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS deliveries_resume_idx;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_held_idx;
ALTER TABLE deliveries DROP COLUMN IF EXISTS resume_signal_pending;
ALTER TABLE deliveries DROP COLUMN IF EXISTS held_by_pause;
ALTER TABLE webhook_endpoints DROP COLUMN IF EXISTS paused_at;
