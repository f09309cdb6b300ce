-- +goose Up
-- Rotation without downtime (issue 16): the secret a rotation replaced keeps signing, beside the
-- new one, until previous_secret_expires_at. Sealed like the current one.
ALTER TABLE webhook_endpoints
    ADD COLUMN previous_secret_key_id text,
    ADD COLUMN previous_secret_sealed bytea,
    ADD COLUMN previous_secret_expires_at timestamptz;

-- +goose Down
ALTER TABLE webhook_endpoints
    DROP COLUMN previous_secret_key_id,
    DROP COLUMN previous_secret_sealed,
    DROP COLUMN previous_secret_expires_at;
