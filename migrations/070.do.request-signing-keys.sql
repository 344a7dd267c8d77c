-- Signed agent requests (docs/protocol.md, "Signed agent requests"): an agent's request-signing keys
-- live beside its assertion keys, one purpose per key. The directory lists them and websites look an
-- agent up by a key's kid alone, so a request-signing kid (the RFC 7638 thumbprint) names one key in
-- the whole deployment; the same public key cannot serve both purposes of one agent (primary key).
ALTER TABLE agent_keys ADD COLUMN purpose text NOT NULL DEFAULT 'assertion' CHECK (purpose IN ('assertion', 'request-signing'));
CREATE UNIQUE INDEX agent_keys_request_signing_kid_idx ON agent_keys (kid) WHERE purpose = 'request-signing';
