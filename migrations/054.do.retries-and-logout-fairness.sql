-- A retried code exchange (src/store/grants.ts, retryCodeExchange): the code remembers the access
-- token its exchange issued last, so that a retry revokes it along with that refresh token.
ALTER TABLE auth_codes ADD COLUMN access_jti text;

-- Why one access token was revoked: by its website (RFC 7009), or replaced by a retried exchange.
ALTER TABLE revoked_access_tokens ADD COLUMN reason text NOT NULL DEFAULT 'client_revocation';

CREATE OR REPLACE FUNCTION audit_access_token_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit_events (event, request_id, agent_id, user_id, client_id, grant_id, model, reason, detail)
  SELECT 'revoked', g.request_id, g.agent_id, g.user_id, g.client_id, g.id, g.model, NEW.reason,
         jsonb_build_object('token_type', 'access_token')
  FROM grants g WHERE g.id = split_part(NEW.jti, '.', 1);
  RETURN NULL;
END
$$;

-- Back-channel logout per website (src/store/logout-deliveries.ts): a website whose deliveries keep
-- timing out is backed off as a whole. While `resume_at` is ahead nothing of it is sent; then one
-- delivery (the probe) goes, and the rest wait until one is answered in time (which deletes the row).
CREATE TABLE logout_websites (
  client_id  text PRIMARY KEY REFERENCES clients(id) ON DELETE CASCADE,
  timeouts   integer NOT NULL,
  resume_at  timestamptz NOT NULL
);
