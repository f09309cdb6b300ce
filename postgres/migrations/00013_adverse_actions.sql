-- +goose Up
-- Adverse actions (issue 13): written with their adverse_action.created event; the dispatcher
-- starts their AdverseActionWorkflow (workflow_started_at) and cancels it (cancel_workflow). One
-- open (pending) adverse action per check at a time.
CREATE TABLE adverse_actions (
    id                   text PRIMARY KEY,
    account_id           text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode                 text NOT NULL CHECK (mode IN ('test', 'live')),
    check_id             text NOT NULL REFERENCES checks (id) ON DELETE CASCADE,
    candidate_id         text NOT NULL REFERENCES candidates (id) ON DELETE CASCADE,
    status               text NOT NULL CHECK (status IN ('pending', 'finalized', 'canceled')),
    reasons              text[] NOT NULL,
    waiting_days         integer NOT NULL CHECK (waiting_days >= 5),
    notice_sent_at       timestamptz,
    final_notice_sent_at timestamptz,
    finalize_at          timestamptz NOT NULL,
    finalized_at         timestamptz,
    canceled_at          timestamptz,
    workflow_started_at  timestamptz,
    dispatch_lease_until timestamptz,
    cancel_workflow      boolean NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX adverse_actions_one_open_idx ON adverse_actions (check_id) WHERE status = 'pending';
CREATE INDEX adverse_actions_account_idx ON adverse_actions (account_id, mode, id DESC);
CREATE INDEX adverse_actions_to_start_idx ON adverse_actions (id) WHERE workflow_started_at IS NULL AND status = 'pending';
CREATE INDEX adverse_actions_to_cancel_idx ON adverse_actions (id) WHERE cancel_workflow;

-- +goose Down
DROP TABLE adverse_actions;
