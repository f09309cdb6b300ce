-- +goose Up
-- The dispatcher claims undispatched deliveries with a lease instead of holding row locks while
-- it calls Temporal: claim (lease until), commit, start the workflows, then mark dispatched. A
-- dispatcher that dies mid-batch leaves leases that expire. A row whose start keeps failing
-- backs off on its own (dispatch_after, dispatch_failures) and says why (dispatch_error).
ALTER TABLE deliveries
    ADD COLUMN dispatch_lease_until timestamptz,
    ADD COLUMN dispatch_after timestamptz,
    ADD COLUMN dispatch_failures integer NOT NULL DEFAULT 0,
    ADD COLUMN dispatch_error text;

-- +goose Down
ALTER TABLE deliveries
    DROP COLUMN dispatch_lease_until,
    DROP COLUMN dispatch_after,
    DROP COLUMN dispatch_failures,
    DROP COLUMN dispatch_error;
