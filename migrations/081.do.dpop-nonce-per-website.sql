-- A website that demands DPoP nonces (RFC 9449 §8; docs/protocol.md "DPoP"): its proofs at /token, and
-- the proofs presented with its access tokens at /userinfo, must carry a server nonce.
ALTER TABLE clients ADD COLUMN dpop_nonce_required boolean NOT NULL DEFAULT false;

-- The grant cache keeps the setting with each grant (/userinfo reads it there): a change forgets them.
DROP TRIGGER clients_grant_cache_update ON clients;
CREATE TRIGGER clients_grant_cache_update
  AFTER UPDATE ON clients
  FOR EACH ROW WHEN (OLD.active IS DISTINCT FROM NEW.active OR OLD.secret_hash IS DISTINCT FROM NEW.secret_hash
                     OR OLD.dpop_nonce_required IS DISTINCT FROM NEW.dpop_nonce_required)
  EXECUTE FUNCTION notify_grant_cache('client');
