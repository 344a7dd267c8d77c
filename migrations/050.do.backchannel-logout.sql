-- Per website: the algorithm its ID tokens (and logout tokens) are signed with (NULL: ID_TOKEN_SIGNING_ALG),
-- and where it hears that a grant ended (OpenID Connect Back-Channel Logout 1.0).
ALTER TABLE clients ADD COLUMN id_token_signed_response_alg text CHECK (id_token_signed_response_alg IN ('RS256', 'ES256', 'EdDSA'));
ALTER TABLE clients ADD COLUMN backchannel_logout_uri text;

-- The outbox of logout tokens: one row per ended grant whose website has a backchannel_logout_uri,
-- written by the statement that ended the grant (src/store/grants.ts, endGrants), so that it commits
-- with the revocation or not at all. No reference to the grant or the agent: a deletion that ends
-- them must leave the delivery behind. A deleted website has nobody left to tell.
CREATE TABLE logout_deliveries (
  jti              text PRIMARY KEY,
  client_id        text NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
  agent_id         text NOT NULL,
  sid              text NOT NULL,
  uri              text NOT NULL,
  reason           text NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  last_attempt_at  timestamptz,
  last_error       text,
  delivered_at     timestamptz
);
CREATE INDEX logout_deliveries_due ON logout_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX logout_deliveries_of_client ON logout_deliveries (client_id, created_at DESC);
CREATE INDEX logout_deliveries_failed ON logout_deliveries (created_at DESC) WHERE status = 'failed';

-- Wakes the senders of every instance when a delivery is written.
CREATE FUNCTION logout_deliveries_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('logout_deliveries', '');
  RETURN NULL;
END $$;
CREATE TRIGGER logout_deliveries_notify AFTER INSERT ON logout_deliveries
  FOR EACH STATEMENT EXECUTE FUNCTION logout_deliveries_notify();
