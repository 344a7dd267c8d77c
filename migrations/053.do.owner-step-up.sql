-- Step-up for changes that weaken an owner's protection (docs/protocol.md, "Fresh verification").
-- A reauthentication challenge belongs to one owner session: an assertion over it makes that session,
-- and no other, fresh (owner_sessions.authenticated_at). It goes with the session.
ALTER TABLE webauthn_challenges DROP CONSTRAINT webauthn_challenges_purpose_check;
ALTER TABLE webauthn_challenges ADD CONSTRAINT webauthn_challenges_purpose_check
  CHECK (purpose IN ('registration', 'sign_in', 'approval', 'reauthentication'));
ALTER TABLE webauthn_challenges ADD COLUMN session_hash text REFERENCES owner_sessions (session_hash) ON DELETE CASCADE;

-- Approval mails coalesce: at most one per owner per minute, claimed here so that it holds across instances.
ALTER TABLE users ADD COLUMN approval_mailed_at timestamptz;
