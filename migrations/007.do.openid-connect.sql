-- OpenID Connect mode (ID_TOKEN_SIGNING_ALG). The nonce a client sent to /authorize, echoed in the ID token.
ALTER TABLE auth_requests ADD COLUMN nonce text;

-- The key pairs that sign ID tokens. The current key has retired_at NULL; a retired key stays
-- published in the JWKS until expires_at (no token it signed is still valid then), then goes.
CREATE TABLE signing_keys (
  kid          text PRIMARY KEY,
  alg          text NOT NULL,
  private_jwk  jsonb NOT NULL,
  public_jwk   jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  retired_at   timestamptz,
  expires_at   timestamptz
);
