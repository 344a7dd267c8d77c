-- Who acted, for the audit rows of actions: 'admin' (the admin API, the console, the CLI) or 'owner'
-- (the portal and its API). NULL for what agents, websites and the server do on their own.
ALTER TABLE audit_events ADD COLUMN actor text;

-- As in migrations/003, plus the actor of a revocation, told by its reason (admin_<level>, owner_<level>).
CREATE OR REPLACE FUNCTION audit_grant() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kinds text[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    kinds := ARRAY['token_issued'];
  ELSIF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL THEN
    kinds := CASE WHEN NEW.revoked_reason IN ('code_replay', 'refresh_token_reuse')
                  THEN ARRAY['reuse_detected', 'revoked'] ELSE ARRAY['revoked'] END;
  ELSE
    kinds := ARRAY['refreshed'];
  END IF;
  INSERT INTO audit_events (event, request_id, agent_id, user_id, client_id, grant_id, model, reason, detail, actor)
  SELECT kind, NEW.request_id, NEW.agent_id, NEW.user_id, NEW.client_id, NEW.id, NEW.model, NEW.revoked_reason,
         CASE WHEN TG_OP = 'INSERT' THEN jsonb_build_object('scope', NEW.scope) END,
         CASE WHEN kind = 'revoked' THEN substring(NEW.revoked_reason FROM '^(admin|owner)_') END
  FROM unnest(kinds) WITH ORDINALITY AS k (kind, n) ORDER BY n;
  RETURN NULL;
END
$$;

-- Notices to owners: the first sign-in of an agent at a website is mailed once (the row says it was).
CREATE TABLE owner_notices (
  agent_id   text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  client_id  text NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
  sent_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (agent_id, client_id)
);
