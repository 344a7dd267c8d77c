-- DPoP (RFC 9449, docs/protocol.md "DPoP").
-- The key a sign-in's code is bound to (dpop_jkt at /authorize, §10), and the key a grant's tokens are
-- bound to (the proof's at the code exchange): refreshes must prove that same key.
ALTER TABLE auth_requests ADD COLUMN dpop_jkt text;
ALTER TABLE grants ADD COLUMN dpop_jkt text;
-- A website that must use DPoP (§5.2): its token requests without a proof are refused.
ALTER TABLE clients ADD COLUMN dpop_bound_access_tokens boolean NOT NULL DEFAULT false;

-- Proofs already accepted: a digest of the key's thumbprint and the proof's jti, kept until the proof
-- would be too old to accept anyway, so that a replay fails on every instance.
CREATE TABLE dpop_proofs (
  proof_hash  text PRIMARY KEY,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX dpop_proofs_expires_at_idx ON dpop_proofs (expires_at);
