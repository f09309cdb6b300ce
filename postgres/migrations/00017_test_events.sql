-- +goose Up
-- Test events (POST /events/test) carry whatever data the caller chose; the service's own events
-- match the event catalogue's schemas, which the tests check. This tells the two apart.
ALTER TABLE events ADD COLUMN test_event boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE events DROP COLUMN test_event;
