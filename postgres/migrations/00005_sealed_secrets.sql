-- +goose Up
-- Endpoint signing secrets are stored sealed (AES-256-GCM, package secretbox) with the id of the
-- key that sealed them, so the key can rotate. secret holds only rows written before this
-- migration, until the API seals them at start (or bgcheckctl secrets rotate-key does).
ALTER TABLE webhook_endpoints
    ADD COLUMN secret_sealed bytea,
    ADD COLUMN secret_key_id text,
    ALTER COLUMN secret DROP NOT NULL,
    ADD CONSTRAINT webhook_endpoints_secret_stored CHECK (
        (secret_sealed IS NOT NULL AND secret_key_id IS NOT NULL) OR secret IS NOT NULL);

-- +goose Down
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_secret_stored;
ALTER TABLE webhook_endpoints DROP COLUMN secret_sealed, DROP COLUMN secret_key_id;
