import { generateId, generateSecret, sha256 } from '../crypto/secrets.js';
import type { Db } from '../db/types.js';

/** The agent an owner lent their sign-in to one client (migrations/090), as the owner path needs it. */
export interface ClientAgent {
  agent_id: string;
  name: string | null;
  active: boolean;
  /**
   * Whether the owner's policy (the agent's own, else the owner's) asks them before this sign-in:
   * `always`, or `new_website` while the agent holds no live grant with this client for this resource.
   */
  asks: boolean;
}

const CLIENT_AGENT = (resource: string) => `a.id AS agent_id, a.name, a.active,
  CASE coalesce(a.approval_policy, u.approval_policy)
    WHEN 'always' THEN true
    WHEN 'new_website' THEN NOT EXISTS (
      SELECT 1 FROM grants g WHERE g.agent_id = a.id AND g.client_id = a.client_id AND g.resource IS NOT DISTINCT FROM ${resource}
        AND g.revoked_at IS NULL AND g.expires_at > now())
    ELSE false
  END AS asks`;

/**
 * One agent per owner and client for the owner path (docs/protocol.md, "People's MCP clients"). Its
 * secret is the digest of one nobody was ever told, and refused anyway (`secret_enabled` false): only
 * its owner signs it in, on the authorization page.
 */
export function createClientAgentStore(db: Db) {
  async function get(userId: string, clientId: string, resource: string | null): Promise<ClientAgent | undefined> {
    const { rows } = await db.query<ClientAgent>(
      `SELECT ${CLIENT_AGENT('$3')} FROM agents a JOIN users u ON u.id = a.user_id WHERE a.user_id = $1 AND a.client_id = $2`,
      [userId, clientId, resource],
    );
    return rows[0];
  }

  return {
    get,

    /** The owner's agent for this client, made now (named `name`, the owner's policy) unless it exists; `created` says which. */
    async getOrCreate(userId: string, clientId: string, name: string, resource: string | null): Promise<ClientAgent & { created: boolean }> {
      const { rowCount } = await db.query(
        `INSERT INTO agents (id, user_id, name, secret_hash, secret_enabled, client_id) VALUES ($1, $2, $3, $4, false, $5)
         ON CONFLICT (user_id, client_id) WHERE client_id IS NOT NULL DO NOTHING`,
        [generateId('agent'), userId, name, sha256(generateSecret('aa_none')), clientId],
      );
      return { ...(await get(userId, clientId, resource))!, created: rowCount === 1 };
    },
  };
}

export type ClientAgentStore = ReturnType<typeof createClientAgentStore>;
