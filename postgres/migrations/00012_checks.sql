-- +goose Up
-- Background checks (issue 12). A check is written with its screenings and its check.created
-- event in one transaction; workflow_started_at stays NULL until the dispatcher has started its
-- CheckWorkflow (the outbox, as for deliveries). signal_authorized and cancel_workflow record a
-- consent or a cancellation the dispatcher still has to tell the workflow.
CREATE TABLE checks (
    id                    text PRIMARY KEY,
    account_id            text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode                  text NOT NULL CHECK (mode IN ('test', 'live')),
    candidate_id          text NOT NULL REFERENCES candidates (id) ON DELETE CASCADE,
    package               text NOT NULL,
    status                text NOT NULL CHECK (status IN ('invitation_pending', 'pending', 'complete', 'suspended', 'canceled', 'failed')),
    assessment            text CHECK (assessment IN ('clear', 'consider')),
    reason                text,
    invitation_expires_at timestamptz NOT NULL,
    authorized_at         timestamptz,
    completed_at          timestamptz,
    workflow_started_at   timestamptz,
    dispatch_lease_until  timestamptz,
    signal_authorized     boolean NOT NULL DEFAULT false,
    cancel_workflow       boolean NOT NULL DEFAULT false,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX checks_account_idx ON checks (account_id, mode, id DESC);
CREATE INDEX checks_candidate_idx ON checks (candidate_id);
CREATE INDEX checks_to_start_idx ON checks (id) WHERE workflow_started_at IS NULL;
CREATE INDEX checks_to_signal_idx ON checks (id) WHERE signal_authorized OR cancel_workflow;

CREATE TABLE check_screenings (
    check_id     text NOT NULL REFERENCES checks (id) ON DELETE CASCADE,
    position     integer NOT NULL,
    type         text NOT NULL,
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'complete', 'suspended', 'canceled', 'failed')),
    result       text CHECK (result IN ('clear', 'consider')),
    records      jsonb NOT NULL DEFAULT '[]',
    reason       text,
    completed_at timestamptz,
    PRIMARY KEY (check_id, type)
);

-- What the candidate gives when consenting (full SSN, address), sealed like endpoint secrets
-- (package secretbox) and bound to the candidate; only the SSN's last four are kept in the clear.
CREATE TABLE candidate_details (
    candidate_id text PRIMARY KEY REFERENCES candidates (id) ON DELETE CASCADE,
    key_id       text NOT NULL,
    sealed       bytea NOT NULL,
    ssn_last4    text NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- The consumer users a candidate's invitation signed in: a person may be a candidate of several
-- accounts, and sees the checks of every candidate linked to them.
CREATE TABLE candidate_users (
    candidate_id text NOT NULL REFERENCES candidates (id) ON DELETE CASCADE,
    user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (candidate_id, user_id)
);
CREATE INDEX candidate_users_user_idx ON candidate_users (user_id);

-- Invitation links: the hash of the token mailed to the candidate.
CREATE TABLE check_invitations (
    token_hash bytea PRIMARY KEY,
    check_id   text NOT NULL REFERENCES checks (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL
);
CREATE INDEX check_invitations_check_idx ON check_invitations (check_id);

CREATE TABLE reports (
    id           text PRIMARY KEY,
    check_id     text NOT NULL UNIQUE REFERENCES checks (id) ON DELETE CASCADE,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    mode         text NOT NULL,
    candidate_id text NOT NULL REFERENCES candidates (id) ON DELETE CASCADE,
    assessment   text NOT NULL CHECK (assessment IN ('clear', 'consider')),
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE reports;
DROP TABLE check_invitations;
DROP TABLE candidate_users;
DROP TABLE candidate_details;
DROP TABLE check_screenings;
DROP TABLE checks;
