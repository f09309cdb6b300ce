-- +goose NO TRANSACTION
-- +goose Up
-- Reconciliation of deliveries with Temporal. reconciled_at is when the reconciler last found a
-- dispatched, pending delivery's workflow running; it visits the least recently checked first.
-- cancel_workflow marks a delivery canceled in the database whose workflow is still to be
-- canceled in Temporal (its endpoint was deleted): the dispatcher, which owns starts and
-- cancels, retries it until Temporal confirms. Adding a column without a volatile default is
-- instant; the indexes cover only the few rows in flight, built CONCURRENTLY (see 00010).
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS reconciled_at timestamptz;
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS cancel_workflow boolean NOT NULL DEFAULT false;

DROP INDEX CONCURRENTLY IF EXISTS deliveries_in_flight_idx;
CREATE INDEX CONCURRENTLY deliveries_in_flight_idx ON deliveries ((coalesce(reconciled_at, dispatched_at)))
    WHERE status = 'pending' AND dispatched_at IS NOT NULL;

DROP INDEX CONCURRENTLY IF EXISTS deliveries_pending_created_idx;
CREATE INDEX CONCURRENTLY deliveries_pending_created_idx ON deliveries (created_at) WHERE status = 'pending';

DROP INDEX CONCURRENTLY IF EXISTS deliveries_cancel_workflow_idx;
CREATE INDEX CONCURRENTLY deliveries_cancel_workflow_idx ON deliveries (id) WHERE cancel_workflow;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS deliveries_cancel_workflow_idx;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_pending_created_idx;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_in_flight_idx;
ALTER TABLE deliveries DROP COLUMN IF EXISTS cancel_workflow;
ALTER TABLE deliveries DROP COLUMN IF EXISTS reconciled_at;
