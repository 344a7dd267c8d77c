-- Users are identified by email only; agents belong to a user.
CREATE TABLE users (
  id          text PRIMARY KEY,
  email       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE clients (
  id             text PRIMARY KEY,
  name           text NOT NULL,
  secret_hash    text NOT NULL,
  redirect_uris  text[] NOT NULL,
  active         boolean NOT NULL DEFAULT true,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agents (
  id           text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES users (id),
  name         text,
  secret_hash  text NOT NULL,
  active       boolean NOT NULL DEFAULT true,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agents_user_id_idx ON agents (user_id);

-- One row per visit to /authorize; status moves pending -> authenticated -> completed, or to error.
CREATE TABLE auth_requests (
  id                 text PRIMARY KEY,
  client_id          text NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
  redirect_uri       text NOT NULL,
  state              text NOT NULL,
  code_challenge     text NOT NULL,
  scope              text NOT NULL,
  browser_hash       text NOT NULL,
  status             text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'authenticated', 'completed', 'error')),
  error              text,
  agent_id           text REFERENCES agents (id) ON DELETE CASCADE,
  model              text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  expires_at         timestamptz NOT NULL,
  authenticated_at   timestamptz,
  completed_at       timestamptz
);
CREATE INDEX auth_requests_expires_at_idx ON auth_requests (expires_at);
CREATE INDEX auth_requests_client_id_idx ON auth_requests (client_id);
CREATE INDEX auth_requests_agent_id_idx ON auth_requests (agent_id);

-- A grant is one sign-in of one agent at one website; refresh tokens and access tokens hang off it.
CREATE TABLE grants (
  id                 text PRIMARY KEY,
  client_id          text NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
  agent_id           text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  user_id            text NOT NULL REFERENCES users (id),
  request_id         text,
  scope              text NOT NULL,
  model              text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  last_refreshed_at  timestamptz,
  expires_at         timestamptz NOT NULL,
  revoked_at         timestamptz
);
CREATE INDEX grants_client_id_idx ON grants (client_id);
CREATE INDEX grants_agent_id_idx ON grants (agent_id);
CREATE INDEX grants_user_id_idx ON grants (user_id);
CREATE INDEX grants_expires_at_idx ON grants (expires_at);

-- Codes and refresh tokens are kept only as SHA-256 hashes.
CREATE TABLE auth_codes (
  code_hash       text PRIMARY KEY,
  request_id      text NOT NULL,
  client_id       text NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
  agent_id        text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  redirect_uri    text NOT NULL,
  code_challenge  text NOT NULL,
  scope           text NOT NULL,
  model           text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  used_at         timestamptz,
  grant_id        text REFERENCES grants (id) ON DELETE SET NULL
);
CREATE INDEX auth_codes_expires_at_idx ON auth_codes (expires_at);

CREATE TABLE refresh_tokens (
  token_hash   text PRIMARY KEY,
  grant_id     text NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
  scope        text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  used_at      timestamptz
);
CREATE INDEX refresh_tokens_grant_id_idx ON refresh_tokens (grant_id);
CREATE INDEX refresh_tokens_expires_at_idx ON refresh_tokens (expires_at);

-- Access tokens revoked one by one before they expire (RFC 7009).
CREATE TABLE revoked_access_tokens (
  jti         text PRIMARY KEY,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX revoked_access_tokens_expires_at_idx ON revoked_access_tokens (expires_at);

-- Server-generated secrets (the HS256 key when JWT_SECRET is unset).
CREATE TABLE server_keys (
  kid         text PRIMARY KEY,
  purpose     text NOT NULL,
  secret      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
