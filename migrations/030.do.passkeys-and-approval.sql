-- Passkeys (WebAuthn credentials) of owners, and the owner's approval of their agents' sign-ins.

-- One row per registered passkey. credential_id is the authenticator's id (base64url), unique
-- across owners; public_key the COSE key; counter the last signature counter seen (0: the
-- authenticator keeps none).
CREATE TABLE owner_passkeys (
  id             text PRIMARY KEY,
  user_id        text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  credential_id  text NOT NULL UNIQUE,
  public_key     bytea NOT NULL,
  counter        bigint NOT NULL DEFAULT 0,
  transports     text[] NOT NULL DEFAULT '{}',
  name           text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  last_used_at   timestamptz
);
CREATE INDEX owner_passkeys_user_id_idx ON owner_passkeys (user_id);

-- WebAuthn challenges, kept server-side so that any instance can check them, each spent once
-- (the row is deleted by the check). registration and approval challenges belong to an owner;
-- approval ones to one sign-in as well; sign_in ones to nobody yet.
CREATE TABLE webauthn_challenges (
  challenge   text PRIMARY KEY,
  purpose     text NOT NULL CHECK (purpose IN ('registration', 'sign_in', 'approval')),
  user_id     text REFERENCES users (id) ON DELETE CASCADE,
  request_id  text REFERENCES auth_requests (id) ON DELETE CASCADE,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX webauthn_challenges_expires_at_idx ON webauthn_challenges (expires_at);

-- A sign-in that waits for its owner: approval 'pending' from the agent's authentication until the
-- owner decides ('approved', or the request ends as access_denied). NULL: no approval asked.
-- match_code: a short code shown both on the waiting page and to the owner.
ALTER TABLE auth_requests ADD COLUMN approval text CHECK (approval IN ('pending', 'approved'));
ALTER TABLE auth_requests ADD COLUMN match_code text;
ALTER TABLE auth_requests ADD COLUMN approved_at timestamptz;

-- Long polls wake on an approval as they do on a status change (migrations/002).
CREATE TRIGGER auth_requests_approval_changed
  AFTER UPDATE OF approval ON auth_requests
  FOR EACH ROW WHEN (OLD.approval IS DISTINCT FROM NEW.approval)
  EXECUTE FUNCTION notify_auth_request_change();

-- The audit log: approval_requested when a sign-in starts waiting, approved when the owner approves
-- (a denial is the status trigger's 'denied').
CREATE FUNCTION audit_auth_request_approval() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit_events (event, request_id, agent_id, user_id, client_id, model)
  VALUES (CASE NEW.approval WHEN 'pending' THEN 'approval_requested' ELSE 'approved' END, NEW.id, NEW.agent_id,
          (SELECT user_id FROM agents WHERE id = NEW.agent_id), NEW.client_id, NEW.model);
  RETURN NULL;
END
$$;
-- Named to sort after auth_requests_audit_status: agent_authenticated comes first in the log.
CREATE TRIGGER auth_requests_audit_status_approval
  AFTER UPDATE OF approval ON auth_requests
  FOR EACH ROW WHEN (NEW.approval IS NOT NULL AND OLD.approval IS DISTINCT FROM NEW.approval)
  EXECUTE FUNCTION audit_auth_request_approval();
