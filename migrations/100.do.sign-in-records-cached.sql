-- The grant cache now also keeps the client and agent records that every sign-in reads (/authorize and
-- /token the client's, the agent's authentication its own; docs/operations.md, "Grant cache"): any
-- change to a client or agent row forgets what was kept of it, and so does a change to the owner's
-- email or to whether it is verified. These rows change rarely: an operator's or owner's edit, a rotated
-- secret, a metadata document fetched again, a website's first use.
DROP TRIGGER clients_grant_cache_update ON clients;
CREATE TRIGGER clients_grant_cache_update
  AFTER UPDATE ON clients
  FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*)
  EXECUTE FUNCTION notify_grant_cache('client');

DROP TRIGGER agents_grant_cache_update ON agents;
CREATE TRIGGER agents_grant_cache_update
  AFTER UPDATE ON agents
  FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*)
  EXECUTE FUNCTION notify_grant_cache('agent');

DROP TRIGGER users_grant_cache_update ON users;
CREATE TRIGGER users_grant_cache_update
  AFTER UPDATE ON users
  FOR EACH ROW WHEN (OLD.email IS DISTINCT FROM NEW.email OR (OLD.email_verified_at IS NULL) <> (NEW.email_verified_at IS NULL))
  EXECUTE FUNCTION notify_grant_cache('user');
