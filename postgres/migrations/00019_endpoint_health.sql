-- +goose Up
-- Endpoint health (issue 16). Attempts keep last_success_at (at most once a minute) and
-- failing_since (set by the first failed attempt after a success, cleared by a success); the
-- first failure also asks the dispatcher (health_check_pending) to have the endpoint's
-- EndpointHealthWorkflow watch it, which disables an endpoint still failing after the window.
ALTER TABLE webhook_endpoints
    ADD COLUMN last_success_at timestamptz,
    ADD COLUMN failing_since timestamptz,
    ADD COLUMN disabled_at timestamptz,
    ADD COLUMN disabled_reason text,
    ADD COLUMN health_check_pending boolean NOT NULL DEFAULT false;
CREATE INDEX webhook_endpoints_health_check_idx ON webhook_endpoints (id) WHERE health_check_pending;

-- What happened to an endpoint's health: disabled for failing (the admins mailed), enabled again.
CREATE TABLE endpoint_health_events (
    id          text PRIMARY KEY,
    endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('disabled', 'enabled')),
    detail      text NOT NULL,
    mailed_at   timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX endpoint_health_events_endpoint_idx ON endpoint_health_events (endpoint_id, id DESC);

-- +goose Down
DROP TABLE endpoint_health_events;
DROP INDEX webhook_endpoints_health_check_idx;
ALTER TABLE webhook_endpoints
    DROP COLUMN last_success_at,
    DROP COLUMN failing_since,
    DROP COLUMN disabled_at,
    DROP COLUMN disabled_reason,
    DROP COLUMN health_check_pending;
