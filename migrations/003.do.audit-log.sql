-- Why a grant was revoked: code_replay, refresh_token_reuse, client_revocation (RFC 7009), or an
-- operator's admin_grant, admin_agent, admin_user, admin_client.
ALTER TABLE grants ADD COLUMN revoked_reason text;

-- The audit log. Triggers write the success paths inside the statements that make the change, so
-- no code path can forget an event and none costs a round trip; failed agent authentications are
-- inserted by the server. No foreign keys: the history outlives the agents, clients and grants it names.
CREATE TABLE audit_events (
  id          bigserial PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  event       text NOT NULL,
  request_id  text,
  agent_id    text,
  user_id     text,
  client_id   text,
  grant_id    text,
  model       text,
  reason      text,
  detail      jsonb
);
-- Listings page by id, newest first, within one filter.
CREATE INDEX audit_events_agent_id_idx ON audit_events (agent_id, id);
CREATE INDEX audit_events_user_id_idx ON audit_events (user_id, id);
CREATE INDEX audit_events_client_id_idx ON audit_events (client_id, id);
CREATE INDEX audit_events_request_id_idx ON audit_events (request_id, id);
CREATE INDEX audit_events_at_idx ON audit_events (at);

-- authorize_started, then agent_authenticated, completed, denied or expired as the status moves.
CREATE FUNCTION audit_auth_request() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  extra jsonb;
BEGIN
  IF TG_OP = 'INSERT' THEN
    kind := 'authorize_started';
    extra := jsonb_build_object('scope', NEW.scope);
  ELSIF NEW.status = 'authenticated' THEN
    kind := 'agent_authenticated';
  ELSIF NEW.status = 'completed' THEN
    kind := 'completed';
  ELSIF NEW.error = 'request_expired' THEN
    kind := 'expired';
    -- pending: the agent never came; authenticated: the browser never finished.
    extra := jsonb_build_object('status_before', OLD.status);
  ELSE
    kind := 'denied';
  END IF;
  INSERT INTO audit_events (event, request_id, agent_id, user_id, client_id, model, reason, detail)
  VALUES (kind, NEW.id, NEW.agent_id, (SELECT user_id FROM agents WHERE id = NEW.agent_id), NEW.client_id, NEW.model,
          NEW.error, extra);
  RETURN NULL;
END
$$;

CREATE TRIGGER auth_requests_audit_insert
  AFTER INSERT ON auth_requests
  FOR EACH ROW EXECUTE FUNCTION audit_auth_request();
CREATE TRIGGER auth_requests_audit_status
  AFTER UPDATE OF status ON auth_requests
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION audit_auth_request();

-- token_issued at the code exchange, refreshed at each rotation, revoked (after reuse_detected when
-- a spent code or refresh token came back) when revoked_at is set.
CREATE FUNCTION audit_grant() RETURNS trigger LANGUAGE plpgsql AS $$
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
  INSERT INTO audit_events (event, request_id, agent_id, user_id, client_id, grant_id, model, reason, detail)
  SELECT kind, NEW.request_id, NEW.agent_id, NEW.user_id, NEW.client_id, NEW.id, NEW.model, NEW.revoked_reason,
         CASE WHEN TG_OP = 'INSERT' THEN jsonb_build_object('scope', NEW.scope) END
  FROM unnest(kinds) WITH ORDINALITY AS k (kind, n) ORDER BY n;
  RETURN NULL;
END
$$;

CREATE TRIGGER grants_audit_insert
  AFTER INSERT ON grants
  FOR EACH ROW EXECUTE FUNCTION audit_grant();
CREATE TRIGGER grants_audit_update
  AFTER UPDATE OF last_refreshed_at, revoked_at ON grants
  FOR EACH ROW WHEN (OLD.revoked_at IS NULL
                     AND (NEW.revoked_at IS NOT NULL OR OLD.last_refreshed_at IS DISTINCT FROM NEW.last_refreshed_at))
  EXECUTE FUNCTION audit_grant();

-- One access token revoked by its client (RFC 7009): the jti is `<grant id>.<random>`.
CREATE FUNCTION audit_access_token_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit_events (event, request_id, agent_id, user_id, client_id, grant_id, model, reason, detail)
  SELECT 'revoked', g.request_id, g.agent_id, g.user_id, g.client_id, g.id, g.model, 'client_revocation',
         jsonb_build_object('token_type', 'access_token')
  FROM grants g WHERE g.id = split_part(NEW.jti, '.', 1);
  RETURN NULL;
END
$$;

CREATE TRIGGER revoked_access_tokens_audit
  AFTER INSERT ON revoked_access_tokens
  FOR EACH ROW EXECUTE FUNCTION audit_access_token_revoked();
