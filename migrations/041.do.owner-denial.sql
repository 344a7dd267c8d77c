-- An owner's denial is told apart from any other end of a sign-in (docs/protocol.md, owner approval):
-- the request ends as access_denied as before, and its approval says 'denied', which check-status
-- reports, so that an agent knows its owner declined even when it never saw the approval pending.
ALTER TABLE auth_requests DROP CONSTRAINT auth_requests_approval_check;
ALTER TABLE auth_requests ADD CONSTRAINT auth_requests_approval_check CHECK (approval IN ('pending', 'approved', 'denied'));

-- As in migrations/030, but a denial writes no row of its own: it is the status trigger's 'denied'.
CREATE OR REPLACE FUNCTION audit_auth_request_approval() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.approval NOT IN ('pending', 'approved') THEN
    RETURN NULL;
  END IF;
  INSERT INTO audit_events (event, request_id, agent_id, user_id, client_id, model)
  VALUES (CASE NEW.approval WHEN 'pending' THEN 'approval_requested' ELSE 'approved' END, NEW.id, NEW.agent_id,
          (SELECT user_id FROM agents WHERE id = NEW.agent_id), NEW.client_id, NEW.model);
  RETURN NULL;
END
$$;
