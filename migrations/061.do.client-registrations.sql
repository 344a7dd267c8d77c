-- Clients that are not websites an operator registered (docs/protocol.md, "MCP clients"): a Client ID
-- Metadata Document (the id is its URL, the row the document as last fetched) or a dynamic
-- registration (RFC 7591). Neither has a shared secret: secret_hash then holds the digest of a
-- secret nobody was ever told, so client_secret_post always fails for them.
ALTER TABLE clients
  ADD COLUMN registration text NOT NULL DEFAULT 'admin' CHECK (registration IN ('admin', 'metadata_document', 'dynamic')),
  ADD COLUMN token_endpoint_auth_method text NOT NULL DEFAULT 'client_secret_post'
    CHECK (token_endpoint_auth_method IN ('client_secret_post', 'none', 'private_key_jwt')),
  ADD COLUMN jwks jsonb,
  ADD COLUMN jwks_uri text,
  -- A dynamic registration that never starts a sign-in is purged (DYNAMIC_REGISTRATION_UNUSED_TTL_SECONDS).
  ADD COLUMN first_used_at timestamptz;
CREATE INDEX clients_unused_dynamic_idx ON clients (created_at) WHERE registration = 'dynamic' AND first_used_at IS NULL;

-- private_key_jwt (RFC 7523 §3): each client assertion's jti is spent once, on every instance, and
-- kept until the assertion could no longer be accepted anyway.
CREATE TABLE client_assertion_jtis (
  client_id   text NOT NULL,
  jti         text NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (client_id, jti)
);
CREATE INDEX client_assertion_jtis_expires_at_idx ON client_assertion_jtis (expires_at);
