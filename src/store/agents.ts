import type { CachedClient, CachedGrant, GrantCache } from '../cache/grant-cache.js';
import { generateId, generateSecret, sha256 } from '../crypto/secrets.js';
import type { Db } from '../db/types.js';
import { endSignInsInFlight } from './grant-records.js';
import { type EndedGrant, endGrants } from './grants.js';

export interface Agent {
  agent_id: string;
  email: string;
  name: string | null;
  active: boolean;
  /** False: the agent is key-only, its secret refused (it signs in with an assertion). */
  secret_enabled: boolean;
  /** The client an agent of the owner path was made for (migrations/090); null for the others. */
  client_id: string | null;
  /** `client`: made when its owner signed in on a person's client's authorization page. */
  kind: 'agent' | 'client';
  created_at: Date;
  updated_at: Date;
}

export interface AgentWithSecretHash extends Agent {
  secret_hash: string;
  user_id: string;
  /** Whether the owner has proved the email (migrations/020). */
  email_verified: boolean;
}

const SELECT = `SELECT a.id AS agent_id, u.email, a.name, a.active, a.secret_enabled, a.client_id,
    CASE WHEN a.client_id IS NULL THEN 'agent' ELSE 'client' END AS kind, a.created_at, a.updated_at
  FROM agents a JOIN users u ON u.id = a.user_id`;

/** What the agent store keeps in the grant cache: agent records. */
export type AgentStoreCache = Pick<
  GrantCache<CachedGrant, CachedClient, CachedClient, AgentWithSecretHash>,
  'read' | 'agentRecord' | 'keepAgentRecord'
>;

export function createAgentStore(db: Db, cache: AgentStoreCache) {
  async function get(id: string): Promise<Agent | undefined> {
    const { rows } = await db.query<Agent>(`${SELECT} WHERE a.id = $1`, [id]);
    return rows[0];
  }

  return {
    get,

    /** Creates the agent and, on first use of the email, its user, in one transaction. */
    async create(input: { email: string; name?: string | null }) {
      const agentSecret = generateSecret('aa_as');
      const agentId = generateId('agent');
      await db.transaction(async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `INSERT INTO users (id, email) VALUES ($1, $2)
           ON CONFLICT (lower(email)) DO UPDATE SET email = users.email RETURNING id`,
          [generateId('user'), input.email],
        );
        await tx.query(`INSERT INTO agents (id, user_id, name, secret_hash) VALUES ($1, $2, $3, $4)`, [
          agentId,
          rows[0].id,
          input.name ?? null,
          sha256(agentSecret),
        ]);
      });
      return { ...(await get(agentId))!, agent_secret: agentSecret };
    },

    /**
     * For agent authentication: includes the secret hash, never leaves the server. From the grant cache, which
     * hears of every change to an agent row and to its owner's email (migrations/100), or one query. Unknown
     * ids are never kept.
     */
    getWithSecret(id: string): Promise<AgentWithSecretHash | undefined> {
      return cache.read(
        () => cache.agentRecord(id),
        async () => {
          const { rows } = await db.query<AgentWithSecretHash>(
            `SELECT a.id AS agent_id, u.email, a.name, a.active, a.secret_enabled, a.created_at, a.updated_at, a.secret_hash, a.user_id,
               u.email_verified_at IS NOT NULL AS email_verified
             FROM agents a JOIN users u ON u.id = a.user_id WHERE a.id = $1`,
            [id],
          );
          // Shared by every reader of the cache: frozen, so that none can change it for the others.
          return rows[0] && Object.freeze(rows[0]);
        },
        (found, since) => found && cache.keepAgentRecord(found, since),
      );
    },

    async list(): Promise<Agent[]> {
      const { rows } = await db.query<Agent>(`${SELECT} ORDER BY a.created_at, a.id`);
      return rows;
    },

    /** Every user (the email agents act for) with how many agents act for them, by email. */
    async users(): Promise<{ email: string; agents: number; created_at: Date }[]> {
      const { rows } = await db.query<{ email: string; agents: number; created_at: Date }>(
        `SELECT u.email, count(a.id)::int AS agents, u.created_at FROM users u LEFT JOIN agents a ON a.user_id = u.id
         GROUP BY u.id ORDER BY lower(u.email)`,
      );
      return rows;
    },

    async listOfUser(userId: string): Promise<Agent[]> {
      const { rows } = await db.query<Agent>(`${SELECT} WHERE a.user_id = $1 ORDER BY a.created_at, a.id`, [userId]);
      return rows;
    },

    /**
     * Deactivating an agent ends its grants and its sign-ins in flight (requests, unspent codes) in
     * the same transaction (endGrants: the websites hear of it by back-channel logout), so that a
     * reactivation brings none of them back. `ended` lists the grants, for src/tokens/revocation.ts to announce.
     */
    async update(
      id: string,
      patch: { name?: string | null; active?: boolean; secret_enabled?: boolean },
    ): Promise<(Agent & { ended: EndedGrant[] }) | undefined> {
      const ended = await db.transaction(async (tx) => {
        const { rowCount } = await tx.query(
          `UPDATE agents SET name = CASE WHEN $2 THEN $3 ELSE name END, active = coalesce($4, active),
             secret_enabled = coalesce($5, secret_enabled), updated_at = now()
           WHERE id = $1`,
          [id, patch.name !== undefined, patch.name ?? null, patch.active ?? null, patch.secret_enabled ?? null],
        );
        if (rowCount === 0) return undefined;
        if (patch.active !== false) return [];
        // As the kill switch: nothing begun before the deactivation works after a reactivation.
        await endSignInsInFlight(tx, 'agent', [id]);
        return endGrants(tx, { which: 'agent_id = $1', params: [id], reason: 'agent_deactivated' });
      });
      return ended && { ...(await get(id))!, ended };
    },

    async rotateSecret(id: string) {
      const agentSecret = generateSecret('aa_as');
      const { rowCount } = await db.query(`UPDATE agents SET secret_hash = $2, updated_at = now() WHERE id = $1`, [id, sha256(agentSecret)]);
      return rowCount > 0 ? { ...(await get(id))!, agent_secret: agentSecret } : undefined;
    },

    /**
     * Deletes the agent, its grants ended first in the same transaction (endGrants), so that the
     * websites hear of it; the grants they list, undefined when there was no such agent.
     */
    async remove(id: string): Promise<EndedGrant[] | undefined> {
      return db.transaction(async (tx) => {
        const ended = await endGrants(tx, { which: 'agent_id = $1', params: [id], reason: 'agent_deleted' });
        const { rowCount } = await tx.query(`DELETE FROM agents WHERE id = $1`, [id]);
        return rowCount > 0 ? ended : undefined;
      });
    },
  };
}
