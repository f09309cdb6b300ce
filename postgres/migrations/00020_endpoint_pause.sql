-- +goose Up
-- Pausing an endpoint (issue 16): its deliveries' attempts are held, not made and not counted,
-- until it is resumed. held_by_pause marks a delivery whose workflow waits for the resume;
-- resume_signal_pending that the dispatcher has still to tell it.
ALTER TABLE webhook_endpoints ADD COLUMN paused_at timestamptz;
ALTER TABLE deliveries ADD COLUMN held_by_pause boolean NOT NULL DEFAULT false;
ALTER TABLE deliveries ADD COLUMN resume_signal_pending boolean NOT NULL DEFAULT false;
CREATE INDEX deliveries_held_idx ON deliveries (endpoint_id) WHERE held_by_pause;
CREATE INDEX deliveries_resume_idx ON deliveries (id) WHERE resume_signal_pending;

-- +goose Down
DROP INDEX deliveries_resume_idx;
DROP INDEX deliveries_held_idx;
ALTER TABLE deliveries DROP COLUMN resume_signal_pending;
ALTER TABLE deliveries DROP COLUMN held_by_pause;
ALTER TABLE webhook_endpoints DROP COLUMN paused_at;
