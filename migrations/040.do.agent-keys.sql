-- Key-bound agents (docs/protocol.md, "Agent assertions"): an agent may prove who it is with a
-- signature by one of its public keys instead of its secret; secret_enabled = false makes it key-only.
ALTER TABLE agents ADD COLUMN secret_enabled boolean NOT NULL DEFAULT true;

-- Public keys only (Ed25519 or P-256, as a JWK with its private members refused); several at once
-- for rotation. The kid is the key's RFC 7638 thumbprint unless its registration named one.
CREATE TABLE agent_keys (
  agent_id      text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  kid           text NOT NULL,
  alg           text NOT NULL CHECK (alg IN ('EdDSA', 'ES256')),
  jwk           jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  PRIMARY KEY (agent_id, kid)
);

-- Each assertion's jti is spent once, in the database, so that a replay fails on every instance. A row
-- is kept until the assertion could no longer be accepted anyway (its exp plus the clock skew allowed).
CREATE TABLE agent_assertion_jtis (
  agent_id    text NOT NULL,
  jti         text NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (agent_id, jti)
);
CREATE INDEX agent_assertion_jtis_expires_at_idx ON agent_assertion_jtis (expires_at);
