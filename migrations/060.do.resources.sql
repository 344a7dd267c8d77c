-- Protected resources (docs/protocol.md, "Resources"): an MCP server or any API that takes our
-- access tokens, named by its resource identifier (RFC 8707 §2), kept without a trailing slash.
-- client_id: the website it belongs to, whose credentials may introspect the tokens issued for it.
CREATE TABLE resources (
  resource     text PRIMARY KEY,
  name         text NOT NULL,
  scopes       text[] NOT NULL,
  client_id    text REFERENCES clients (id) ON DELETE SET NULL,
  signing_alg  text NOT NULL DEFAULT 'RS256' CHECK (signing_alg IN ('RS256', 'ES256', 'EdDSA')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);

-- The resource a sign-in asked for (RFC 8707 §2.1), carried by its code to its grant; null: tokens
-- for the website itself, as before. Removing a resource ends what was issued for it.
ALTER TABLE auth_requests ADD COLUMN resource text REFERENCES resources (resource) ON DELETE CASCADE;
ALTER TABLE auth_codes ADD COLUMN resource text REFERENCES resources (resource) ON DELETE CASCADE;
ALTER TABLE grants ADD COLUMN resource text REFERENCES resources (resource) ON DELETE CASCADE;
CREATE INDEX grants_resource_idx ON grants (resource) WHERE resource IS NOT NULL;
