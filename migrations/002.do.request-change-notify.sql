-- Every status change of an authorization request is announced on one channel, payload the
-- request id, so that long-polling check-status calls on any instance wake up at once.
CREATE FUNCTION notify_auth_request_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('auth_request_changed', NEW.id);
  RETURN NEW;
END
$$;

CREATE TRIGGER auth_requests_status_changed
  AFTER UPDATE OF status ON auth_requests
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION notify_auth_request_change();
