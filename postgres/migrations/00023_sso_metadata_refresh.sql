-- +goose Up
-- SAML metadata fetched from a URL is fetched again in the background (the worker's SSO metadata
-- schedule), not inside a sign-in: when it is next due, and what the last failed attempt said, in
-- our words, with the count of failures in a row that spaces the attempts out.
ALTER TABLE sso_connections
    ADD COLUMN saml_metadata_next_refresh_at  timestamptz,
    ADD COLUMN saml_metadata_refresh_failures integer NOT NULL DEFAULT 0,
    ADD COLUMN saml_metadata_refresh_failed_at timestamptz,
    ADD COLUMN saml_metadata_refresh_error    text;

UPDATE sso_connections SET saml_metadata_next_refresh_at = now() WHERE saml_idp_metadata_url IS NOT NULL;

CREATE INDEX sso_connections_saml_refresh_idx ON sso_connections (saml_metadata_next_refresh_at)
    WHERE saml_idp_metadata_url IS NOT NULL;

-- +goose Down
DROP INDEX sso_connections_saml_refresh_idx;
ALTER TABLE sso_connections
    DROP COLUMN saml_metadata_refresh_error,
    DROP COLUMN saml_metadata_refresh_failed_at,
    DROP COLUMN saml_metadata_refresh_failures,
    DROP COLUMN saml_metadata_next_refresh_at;
