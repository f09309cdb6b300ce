-- +goose Up
-- Billing and usage (issue 15). A check carries the price of its package when created (0 in
-- test mode); consent records one usage record for it in the same transaction, once (UNIQUE).
-- Usage records outlive their check (no foreign key): they are what is billed.
ALTER TABLE checks ADD COLUMN unit_price_cents integer NOT NULL DEFAULT 0;
CREATE INDEX checks_period_idx ON checks (account_id, mode, created_at);

-- The operator sets an account's monthly quota of checks (bgcheckctl quota set).
ALTER TABLE accounts ADD COLUMN monthly_check_quota integer NOT NULL DEFAULT 1000 CHECK (monthly_check_quota >= 0);

CREATE TABLE usage_records (
    id               text PRIMARY KEY,
    account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode             text NOT NULL CHECK (mode IN ('test', 'live')),
    check_id         text NOT NULL,
    kind             text NOT NULL DEFAULT 'package_fee',
    package          text NOT NULL,
    unit_price_cents integer NOT NULL CHECK (unit_price_cents >= 0),
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (check_id, kind)
);
CREATE INDEX usage_records_period_idx ON usage_records (account_id, mode, created_at, id);

-- One invoice per account and period (the UNIQUE makes a rerun of the period a no-op).
CREATE TABLE invoices (
    id           text PRIMARY KEY,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    number       text NOT NULL,
    period_start timestamptz NOT NULL,
    period_end   timestamptz NOT NULL,
    lines        jsonb NOT NULL,
    total_cents  bigint NOT NULL,
    currency     text NOT NULL DEFAULT 'usd',
    status       text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'paid', 'void')),
    issued_at    timestamptz NOT NULL DEFAULT now(),
    mailed_at    timestamptz,
    UNIQUE (account_id, period_start),
    UNIQUE (account_id, number)
);
CREATE INDEX invoices_account_idx ON invoices (account_id, id DESC);

-- References to payment methods held by a payment processor: never a card number. Test mode has
-- its own, as in Stripe, so a test key never touches the live ones.
CREATE TABLE payment_methods (
    id            text PRIMARY KEY,
    account_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode          text NOT NULL CHECK (mode IN ('test', 'live')),
    processor     text NOT NULL,
    processor_ref text NOT NULL,
    brand         text NOT NULL,
    last4         text NOT NULL CHECK (last4 ~ '^[0-9]{4}$'),
    exp_month     integer NOT NULL CHECK (exp_month BETWEEN 1 AND 12),
    exp_year      integer NOT NULL,
    is_default    boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, mode, processor, processor_ref)
);
CREATE UNIQUE INDEX payment_methods_one_default_idx ON payment_methods (account_id, mode) WHERE is_default;

-- +goose Down
DROP TABLE payment_methods;
DROP TABLE invoices;
DROP TABLE usage_records;
ALTER TABLE accounts DROP COLUMN monthly_check_quota;
DROP INDEX checks_period_idx;
ALTER TABLE checks DROP COLUMN unit_price_cents;
