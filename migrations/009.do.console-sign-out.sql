-- Console sessions are stateless cookies (src/console/session.ts); one that its operator signed out of
-- is remembered here until it would have expired, so that a copy of the cookie is refused on every
-- instance. Only a digest of the cookie's value is kept.
CREATE TABLE console_signed_out (
  session_hash  text PRIMARY KEY,
  expires_at    timestamptz NOT NULL
);
CREATE INDEX console_signed_out_expires_at_idx ON console_signed_out (expires_at);
