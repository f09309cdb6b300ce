-- +goose Up
-- Disputes (issue 13). A dispute is written with its dispute.filed event and the check's move to
-- status dispute; the dispatcher starts its DisputeWorkflow (the 30-day deadline) and, once it is
-- resolved, signals it (signal_resolved). An open dispute holds the check's adverse action in its
-- waiting period: on_hold is what the action should be (held_at since when), hold_version counts
-- its changes so a workflow ignores a signal older than one it has seen, and hold_signal_pending
-- says that the workflow has still to be told.
ALTER TABLE checks DROP CONSTRAINT checks_status_check;
ALTER TABLE checks ADD CONSTRAINT checks_status_check
    CHECK (status IN ('invitation_pending', 'pending', 'complete', 'dispute', 'suspended', 'canceled', 'failed'));

-- A report revised after a dispute keeps its id and counts its versions.
ALTER TABLE reports ADD COLUMN version integer NOT NULL DEFAULT 1;
ALTER TABLE reports ADD COLUMN revised_at timestamptz;

ALTER TABLE adverse_actions ADD COLUMN on_hold boolean NOT NULL DEFAULT false;
ALTER TABLE adverse_actions ADD COLUMN held_at timestamptz;
ALTER TABLE adverse_actions ADD COLUMN hold_version integer NOT NULL DEFAULT 0;
ALTER TABLE adverse_actions ADD COLUMN hold_signal_pending boolean NOT NULL DEFAULT false;
CREATE INDEX adverse_actions_to_signal_idx ON adverse_actions (id) WHERE hold_signal_pending;

-- The account's default waiting period of an adverse action, in business days (FCRA: at least 5).
ALTER TABLE accounts ADD COLUMN adverse_waiting_days integer NOT NULL DEFAULT 5
    CHECK (adverse_waiting_days BETWEEN 5 AND 30);

CREATE TABLE disputes (
    id                   text PRIMARY KEY,
    account_id           text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode                 text NOT NULL CHECK (mode IN ('test', 'live')),
    check_id             text NOT NULL REFERENCES checks (id) ON DELETE CASCADE,
    candidate_id         text NOT NULL REFERENCES candidates (id) ON DELETE CASCADE,
    screening            text NOT NULL,
    reason               text NOT NULL,
    status               text NOT NULL CHECK (status IN ('open', 'resolved')),
    resolution           text CHECK (resolution IN ('corrected', 'verified', 'deleted')),
    note                 text,
    resolved_by          text,
    filed_at             timestamptz NOT NULL DEFAULT now(),
    due_at               timestamptz NOT NULL,
    warning_sent_at      timestamptz,
    resolved_at          timestamptz,
    workflow_started_at  timestamptz,
    dispatch_lease_until timestamptz,
    signal_resolved      boolean NOT NULL DEFAULT false,
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX disputes_one_open_idx ON disputes (check_id, screening) WHERE status = 'open';
CREATE INDEX disputes_account_idx ON disputes (account_id, mode, id DESC);
CREATE INDEX disputes_check_idx ON disputes (check_id);
CREATE INDEX disputes_to_start_idx ON disputes (id) WHERE workflow_started_at IS NULL AND status = 'open';
CREATE INDEX disputes_to_signal_idx ON disputes (id) WHERE signal_resolved;

-- +goose Down
DROP TABLE disputes;
ALTER TABLE accounts DROP COLUMN adverse_waiting_days;
DROP INDEX adverse_actions_to_signal_idx;
ALTER TABLE adverse_actions DROP COLUMN hold_signal_pending;
ALTER TABLE adverse_actions DROP COLUMN hold_version;
ALTER TABLE adverse_actions DROP COLUMN held_at;
ALTER TABLE adverse_actions DROP COLUMN on_hold;
ALTER TABLE reports DROP COLUMN revised_at;
ALTER TABLE reports DROP COLUMN version;
ALTER TABLE checks DROP CONSTRAINT checks_status_check;
ALTER TABLE checks ADD CONSTRAINT checks_status_check
    CHECK (status IN ('invitation_pending', 'pending', 'complete', 'suspended', 'canceled', 'failed'));
