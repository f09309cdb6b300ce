-- +goose Up
-- Enterprise single sign-on for admin users. An account has at most one OIDC and one SAML
-- connection; a connection claims e-mail domains and owns those it proves with a DNS TXT record
-- (a verified domain belongs to one connection in the whole service, so an e-mail leads to one
-- identity provider); an identity is the identity provider's subject under one connection and
-- names one admin user of that connection's account, never of another.
CREATE TABLE sso_connections (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    protocol    text NOT NULL CHECK (protocol IN ('oidc', 'saml')),
    name        text NOT NULL DEFAULT '',
    enabled     boolean NOT NULL DEFAULT false,
    -- whether a first sign-in of an unknown user of an owned domain creates an admin
    jit_provisioning boolean NOT NULL DEFAULT false,
    oidc_issuer    text,
    oidc_client_id text,
    -- the client secret, sealed by the secrets keyring (package secretbox) bound to the id
    oidc_client_secret        bytea,
    oidc_client_secret_key_id text,
    saml_idp_entity_id     text,
    saml_idp_metadata_xml  text,
    saml_idp_metadata_url  text,
    saml_metadata_fetched_at     timestamptz,
    saml_metadata_valid_until    timestamptz,
    saml_allow_idp_initiated     boolean NOT NULL DEFAULT false,
    last_sign_in_at timestamptz,
    last_test_at    timestamptz,
    last_test_ok    boolean,
    last_test_detail text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, protocol)
);

-- A claim stays pending until the TXT record _bgcheck-challenge.<domain> holds
-- bgcheck-domain-verification=<verification_token>; several accounts may claim a domain, only one
-- connection can have it verified.
CREATE TABLE sso_domains (
    connection_id      text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
    domain             text NOT NULL CHECK (domain = lower(domain)),
    verification_token text NOT NULL,
    verified_at        timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (connection_id, domain)
);
CREATE UNIQUE INDEX sso_domains_verified_key ON sso_domains (domain) WHERE verified_at IS NOT NULL;

CREATE TABLE sso_identities (
    connection_id   text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
    subject         text NOT NULL,
    user_id         text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_sign_in_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (connection_id, subject)
);
CREATE INDEX sso_identities_user_idx ON sso_identities (user_id);

-- A sign-in under way: the state (OIDC) or RelayState (SAML) is only in the browser, stored here
-- hashed with the cookie that binds it to that browser; single use, ten minutes.
CREATE TABLE sso_login_states (
    state_hash      bytea PRIMARY KEY,
    binding_hash    bytea NOT NULL,
    connection_id   text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
    purpose         text NOT NULL CHECK (purpose IN ('sign_in', 'test')),
    nonce           text NOT NULL DEFAULT '',
    pkce_verifier   text NOT NULL DEFAULT '',
    saml_request_id text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    consumed_at     timestamptz
);
CREATE INDEX sso_login_states_expires_idx ON sso_login_states (expires_at);

-- SAML assertion ids seen, until they could no longer be accepted anyway: a response presented
-- twice is refused the second time.
CREATE TABLE sso_assertions (
    connection_id text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
    assertion_id  text NOT NULL,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (connection_id, assertion_id)
);

-- The one-time code the dashboard trades for tokens after a sign-in: tokens never travel in a URL.
-- It is bound, like a state, to the browser the sign-in ended in: a code carried to another
-- browser (a login CSRF) signs nobody in there.
CREATE TABLE sso_grants (
    code_hash     bytea PRIMARY KEY,
    binding_hash  bytea NOT NULL,
    user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    connection_id text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
    expires_at    timestamptz NOT NULL,
    used_at       timestamptz
);

ALTER TABLE accounts
    ADD COLUMN sso_required boolean NOT NULL DEFAULT false,
    ADD COLUMN sso_break_glass_user_id text REFERENCES users (id) ON DELETE SET NULL;

-- +goose Down
ALTER TABLE accounts DROP COLUMN sso_break_glass_user_id, DROP COLUMN sso_required;
DROP TABLE sso_grants;
DROP TABLE sso_assertions;
DROP TABLE sso_login_states;
DROP TABLE sso_identities;
DROP TABLE sso_domains;
DROP TABLE sso_connections;
