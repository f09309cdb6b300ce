-- +goose Up
-- The admin overview counts an account's events of the last 24 hours.
CREATE INDEX events_account_created_idx ON events (account_id, created_at);

-- +goose Down
DROP INDEX events_account_created_idx;
