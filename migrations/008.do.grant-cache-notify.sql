-- Each instance keeps in memory what /userinfo and /introspect read per grant (the grant cache,
-- docs/operations.md). Every change to what it keeps is announced here, by triggers, so that no code
-- path (admin API, kill switch, reuse detection, email change, purge, a hand-written UPDATE) can
-- forget to: the payload names what changed, `grant:<id>`, `agent:<id>`, `client:<id>` or
-- `user:<id>`, and every instance forgets what it kept about it. NOTIFY is sent at commit, and only then.
CREATE FUNCTION notify_grant_cache() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('agent_auth_grant_cache', TG_ARGV[0] || ':' || OLD.id);
  RETURN NULL;
END
$$;

-- A grant revoked, cut short or re-pointed. Refreshes, which only move last_refreshed_at and extend
-- expires_at, announce nothing: the cache re-reads a grant that looks expired.
CREATE TRIGGER grants_grant_cache_update
  AFTER UPDATE ON grants
  FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR NEW.expires_at < OLD.expires_at
                     OR OLD.client_id <> NEW.client_id OR OLD.agent_id <> NEW.agent_id OR OLD.user_id <> NEW.user_id
                     OR OLD.scope <> NEW.scope OR OLD.model <> NEW.model)
  EXECUTE FUNCTION notify_grant_cache('grant');

-- A live grant deleted (the purge deletes only long-ended ones, which need no announcement).
CREATE FUNCTION notify_grant_cache_deleted_grants() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('agent_auth_grant_cache', 'grant:' || id) FROM deleted WHERE revoked_at IS NULL AND expires_at > now();
  RETURN NULL;
END
$$;

CREATE TRIGGER grants_grant_cache_delete
  AFTER DELETE ON grants REFERENCING OLD TABLE AS deleted
  FOR EACH STATEMENT EXECUTE FUNCTION notify_grant_cache_deleted_grants();

-- An agent deactivated, moved to another user or deleted.
CREATE TRIGGER agents_grant_cache_update
  AFTER UPDATE ON agents
  FOR EACH ROW WHEN (OLD.active IS DISTINCT FROM NEW.active OR OLD.user_id IS DISTINCT FROM NEW.user_id)
  EXECUTE FUNCTION notify_grant_cache('agent');
CREATE TRIGGER agents_grant_cache_delete
  AFTER DELETE ON agents
  FOR EACH ROW EXECUTE FUNCTION notify_grant_cache('agent');

-- A client deactivated, its secret rotated (introspection authenticates it from the cache) or deleted.
CREATE TRIGGER clients_grant_cache_update
  AFTER UPDATE ON clients
  FOR EACH ROW WHEN (OLD.active IS DISTINCT FROM NEW.active OR OLD.secret_hash IS DISTINCT FROM NEW.secret_hash)
  EXECUTE FUNCTION notify_grant_cache('client');
CREATE TRIGGER clients_grant_cache_delete
  AFTER DELETE ON clients
  FOR EACH ROW EXECUTE FUNCTION notify_grant_cache('client');

-- A user's email changed (userinfo serves it), or the user deleted.
CREATE TRIGGER users_grant_cache_update
  AFTER UPDATE ON users
  FOR EACH ROW WHEN (OLD.email IS DISTINCT FROM NEW.email)
  EXECUTE FUNCTION notify_grant_cache('user');
CREATE TRIGGER users_grant_cache_delete
  AFTER DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION notify_grant_cache('user');

-- One access token revoked (RFC 7009): its jti is `<grant id>.<random>`, and the cache keeps a
-- grant's revoked jtis with the grant, read through this index.
CREATE FUNCTION notify_grant_cache_revoked_access_token() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('agent_auth_grant_cache', 'grant:' || split_part(NEW.jti, '.', 1));
  RETURN NULL;
END
$$;

CREATE TRIGGER revoked_access_tokens_grant_cache
  AFTER INSERT ON revoked_access_tokens
  FOR EACH ROW EXECUTE FUNCTION notify_grant_cache_revoked_access_token();

CREATE INDEX revoked_access_tokens_grant_id_idx ON revoked_access_tokens (split_part(jti, '.', 1));
