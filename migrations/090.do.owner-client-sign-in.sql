-- People's MCP clients (docs/protocol.md, "People's MCP clients"): the owner signs in on the
-- authorization page and lends the sign-in to an agent of theirs made for that client.

-- A website an operator registered offers the owner path only when its registration says so; public
-- clients from a metadata document or a dynamic registration offer it without the flag.
ALTER TABLE clients ADD COLUMN owner_sign_in boolean NOT NULL DEFAULT false;

-- The agent an owner lent their sign-in to one client: at most one per owner and client. It has no
-- credential of its own (its secret is refused and nobody was told it), so only its owner, on the
-- authorization page, signs it in. It goes with its client.
ALTER TABLE agents ADD COLUMN client_id text REFERENCES clients (id) ON DELETE CASCADE;
CREATE UNIQUE INDEX agents_owner_client_idx ON agents (user_id, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX agents_client_id_idx ON agents (client_id) WHERE client_id IS NOT NULL;
