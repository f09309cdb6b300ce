-- +goose Up
-- Recovering an endpoint (issue 16): one operation redelivers every failed delivery of the
-- endpoint since a time. A RecoveryWorkflow pages through them; recovery_items makes each
-- redelivered exactly once, however often a page is retried. One recovery per endpoint and since.
CREATE TABLE recoveries (
    id                   text PRIMARY KEY,
    account_id           text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode                 text NOT NULL CHECK (mode IN ('test', 'live')),
    endpoint_id          text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    since                timestamptz NOT NULL,
    status               text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed')),
    total                integer NOT NULL,
    redelivered          integer NOT NULL DEFAULT 0,
    workflow_started_at  timestamptz,
    dispatch_lease_until timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    completed_at         timestamptz,
    UNIQUE (endpoint_id, since)
);
CREATE INDEX recoveries_to_start_idx ON recoveries (id) WHERE workflow_started_at IS NULL;

CREATE TABLE recovery_items (
    recovery_id text NOT NULL REFERENCES recoveries (id) ON DELETE CASCADE,
    delivery_id text NOT NULL,
    PRIMARY KEY (recovery_id, delivery_id)
);

-- +goose Down
DROP TABLE recovery_items;
DROP TABLE recoveries;
