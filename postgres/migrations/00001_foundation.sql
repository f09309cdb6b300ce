-- +goose Up
-- Ids are prefix_<UUIDv7 hex>, so ORDER BY id sorts by creation time; every record an integration
-- can see carries account_id and mode, and every query filters on both.

CREATE TABLE accounts (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id            text PRIMARY KEY,
    account_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email         text NOT NULL,
    name          text NOT NULL DEFAULT '',
    role          text NOT NULL CHECK (role IN ('admin', 'consumer')),
    password_hash text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Sign-in is by e-mail alone, so an address belongs to one user across all accounts.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         text NOT NULL DEFAULT '',
    mode         text NOT NULL CHECK (mode IN ('test', 'live')),
    key_hash     bytea NOT NULL UNIQUE,          -- SHA-256 of the raw key; the key itself is never stored
    prefix       text NOT NULL,
    last4        text NOT NULL,
    scopes       text[] NOT NULL DEFAULT '{}',  -- empty: full access
    allowed_ips  cidr[] NOT NULL DEFAULT '{}',  -- empty: any address
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_account_idx ON api_keys (account_id, id DESC);

CREATE TABLE webhook_endpoints (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode        text NOT NULL CHECK (mode IN ('test', 'live')),
    url         text NOT NULL,
    events      text[] NOT NULL,
    description text NOT NULL DEFAULT '',
    enabled     boolean NOT NULL DEFAULT true,
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    -- Deleting an endpoint keeps its row so its deliveries keep their history.
    deleted_at  timestamptz
);
CREATE INDEX webhook_endpoints_live_idx ON webhook_endpoints (account_id, mode, id DESC)
    WHERE deleted_at IS NULL;

CREATE TABLE candidates (
    id         text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode       text NOT NULL CHECK (mode IN ('test', 'live')),
    first_name text NOT NULL,
    last_name  text NOT NULL,
    email      text,
    phone      text,
    dob        date,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX candidates_account_idx ON candidates (account_id, mode, id DESC);

CREATE TABLE events (
    id         text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode       text NOT NULL CHECK (mode IN ('test', 'live')),
    type       text NOT NULL,
    body       bytea NOT NULL,  -- the exact envelope bytes every delivery attempt sends
    created_at timestamptz NOT NULL
);
CREATE INDEX events_account_idx ON events (account_id, mode, id DESC);

CREATE TABLE deliveries (
    id               text PRIMARY KEY,
    event_id         text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    endpoint_id      text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode             text NOT NULL CHECK (mode IN ('test', 'live')),
    event_type       text NOT NULL,
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled')),
    attempt_count    integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz,
    last_status_code integer,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deliveries_endpoint_idx ON deliveries (endpoint_id, id DESC);
CREATE INDEX deliveries_account_status_idx ON deliveries (account_id, status, id DESC);

CREATE TABLE delivery_attempts (
    delivery_id      text NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    number           integer NOT NULL,
    started_at       timestamptz NOT NULL,
    duration_ms      integer NOT NULL,
    status_code      integer,
    error            text,
    response_snippet text,
    PRIMARY KEY (delivery_id, number)
);

-- +goose Down
DROP TABLE delivery_attempts;
DROP TABLE deliveries;
DROP TABLE events;
DROP TABLE candidates;
DROP TABLE webhook_endpoints;
DROP TABLE api_keys;
DROP TABLE users;
DROP TABLE accounts;
