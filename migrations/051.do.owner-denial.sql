-- An owner's denial is told apart from any other end of a sign-in (docs/protocol.md, owner approval):
-- the request ends as access_denied as before, and its approval says 'denied', which check-status
-- reports, so that an agent knows its owner declined even when it never saw the approval pending.
ALTER TABLE auth_requests DROP CONSTRAINT auth_requests_approval_check;
ALTER TABLE auth_requests ADD CONSTRAINT auth_requests_approval_check CHECK (approval IN ('pending', 'approved', 'denied'));

-- As in migrations/030, but a denial writes no row of its own: it is the status trigger's 'denied'.
DROP TRIGGER auth_requests_audit_status_approval ON auth_requests;
CREATE TRIGGER auth_requests_audit_status_approval
  AFTER UPDATE OF approval ON auth_requests
  FOR EACH ROW WHEN (NEW.approval IN ('pending', 'approved') AND OLD.approval IS DISTINCT FROM NEW.approval)
  EXECUTE FUNCTION audit_auth_request_approval();
