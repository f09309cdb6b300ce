-- +goose Up
-- Portal sign-in. A session is one sign-in (login, registration or magic link); every refresh token
-- belongs to one, and presenting a refresh token twice revokes the whole session. Consumers who
-- register themselves belong to no account.
ALTER TABLE users ALTER COLUMN account_id DROP NOT NULL;
ALTER TABLE users ADD CONSTRAINT users_admin_has_account CHECK (role <> 'admin' OR account_id IS NOT NULL);

CREATE TABLE sessions (
    id         text PRIMARY KEY,
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    -- why it was revoked: logout, refresh_token_reused
    revoked_reason text
);
CREATE INDEX sessions_user_idx ON sessions (user_id);

CREATE TABLE refresh_tokens (
    jti        text PRIMARY KEY,
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX refresh_tokens_session_idx ON refresh_tokens (session_id);

CREATE TABLE magic_links (
    token_hash bytea PRIMARY KEY,  -- SHA-256 of the token; the token itself is only in the mail
    user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX magic_links_user_idx ON magic_links (user_id);

-- +goose Down
DROP TABLE magic_links;
DROP TABLE refresh_tokens;
DROP TABLE sessions;
ALTER TABLE users DROP CONSTRAINT users_admin_has_account;
ALTER TABLE users ALTER COLUMN account_id SET NOT NULL;
