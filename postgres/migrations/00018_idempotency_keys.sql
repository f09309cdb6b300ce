-- +goose Up
-- Idempotency-Key on the API-key routes' POSTs (issue 16): the first request with a key runs and
-- its answer is kept 24 hours; a repeat with the same request gets that answer. locked_until is
-- the first request's claim while it runs: a repeat waits, and takes over once it lapses (the
-- first's process died); claim names the request that holds it, so a request taken over cannot
-- overwrite or free the key. Kept answers are sealed like secrets (an endpoint's creation answers
-- its signing secret).
CREATE TABLE idempotency_keys (
    account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode             text NOT NULL CHECK (mode IN ('test', 'live')),
    key              text NOT NULL,
    fingerprint      bytea NOT NULL,
    status_code      integer,
    response_headers jsonb,
    response_body    bytea,
    body_key_id      text,
    claim            text,
    locked_until     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, mode, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
