-- Owners: the people the agents act for (users) sign in to /account by email link.
-- email_verified_at: when a link sent to the current address was last used; any change of the
-- address clears it (trigger below), so a verification always belongs to the address it proved.
ALTER TABLE users ADD COLUMN email_verified_at timestamptz;
-- Whether a sign-in by one of their agents needs the owner's approval (never, at a website the agent
-- holds no live grant with, or always); an agent may override it (NULL = the owner's).
ALTER TABLE users ADD COLUMN approval_policy text NOT NULL DEFAULT 'never'
  CHECK (approval_policy IN ('never', 'new_website', 'always'));
ALTER TABLE users ADD COLUMN notify_new_website boolean NOT NULL DEFAULT true;
ALTER TABLE agents ADD COLUMN approval_policy text CHECK (approval_policy IN ('never', 'new_website', 'always'));

CREATE FUNCTION users_email_unverified() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF lower(NEW.email) IS DISTINCT FROM lower(OLD.email) THEN
    NEW.email_verified_at := NULL;
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER users_email_change
  BEFORE UPDATE OF email ON users
  FOR EACH ROW EXECUTE FUNCTION users_email_unverified();

-- Sign-in links, by a digest of their token; single use (used_at), for the address they were sent to.
-- Rows stay until the purge, so the number sent to one address lately can be counted.
CREATE TABLE owner_email_links (
  token_hash  text PRIMARY KEY,
  email       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX owner_email_links_email_idx ON owner_email_links (lower(email), created_at);
CREATE INDEX owner_email_links_expires_at_idx ON owner_email_links (expires_at);

-- Owner sessions live here, so signing out (deleting the row) holds on every instance at once.
-- Keyed by a digest of the cookie's value; idle past last_seen_at + the idle limit, dead after expires_at.
CREATE TABLE owner_sessions (
  session_hash      text PRIMARY KEY,
  user_id           text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at        timestamptz NOT NULL DEFAULT now(),
  last_seen_at      timestamptz NOT NULL DEFAULT now(),
  expires_at        timestamptz NOT NULL,
  -- How and when the owner last proved who they are in this session ('email_link' so far).
  authenticated_by  text NOT NULL,
  authenticated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX owner_sessions_user_id_idx ON owner_sessions (user_id);
CREATE INDEX owner_sessions_expires_at_idx ON owner_sessions (expires_at);
