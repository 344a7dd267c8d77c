import type { Db } from '../db/types.js';

export type AgentKeyAlg = 'EdDSA' | 'ES256';

/**
 * What a key is for (migrations/070): signing agent assertions, or signing the agent's HTTP requests
 * (docs/protocol.md, "Signed agent requests"). A key serves one purpose only.
 */
export type KeyPurpose = 'assertion' | 'request-signing';

/** A public key of an agent (migrations/040): a JWK with public members only. */
export interface AgentKey {
  kid: string;
  alg: AgentKeyAlg;
  jwk: Record<string, string>;
  created_at: Date;
  last_used_at: Date | null;
}

/** What an assertion is checked against: the agent, and the key its header names (if the agent holds it). */
export interface AssertionSubject {
  agent_id: string;
  active: boolean;
  /** Its owner proved their mailbox (REQUIRE_VERIFIED_EMAIL). */
  email_verified: boolean;
  key: { alg: AgentKeyAlg; jwk: Record<string, string> } | null;
}

/** A request-signing key as the directory lists it, and the agent it belongs to, as websites look it up. */
export interface SigningKeyAgent {
  agent_id: string;
  name: string | null;
  owner_email_verified: boolean;
  active: boolean;
}

/** How many keys of one purpose an agent may hold at once: room for rotation, not a keyring. */
export const MAX_KEYS_PER_AGENT = 10;

const COLUMNS = 'kid, alg, jwk, created_at, last_used_at';

/** The agents' public keys of both purposes, and the assertion ids (jti) already spent. */
export function createAgentKeyStore(db: Db) {
  return {
    /**
     * Adds a key to an existing agent with fewer than MAX_KEYS_PER_AGENT keys of that purpose.
     * Undefined when there is no such agent; 'duplicate' when this kid is taken (by the agent, or for
     * request signing by any agent); 'full' when the agent holds enough keys.
     */
    async add(
      agentId: string,
      key: { kid: string; alg: AgentKeyAlg; jwk: Record<string, string> },
      purpose: KeyPurpose = 'assertion',
    ): Promise<AgentKey | 'duplicate' | 'full' | undefined> {
      const { rows } = await db.query<AgentKey & { outcome: string }>(
        `WITH agent AS (SELECT id, (SELECT count(*) FROM agent_keys WHERE agent_id = $1 AND purpose = $5) AS keys FROM agents WHERE id = $1),
         added AS (
           INSERT INTO agent_keys (agent_id, kid, alg, jwk, purpose)
           SELECT id, $2, $3, $4, $5 FROM agent WHERE keys < ${MAX_KEYS_PER_AGENT}
           ON CONFLICT DO NOTHING
           RETURNING ${COLUMNS})
         SELECT 'added' AS outcome, ${COLUMNS} FROM added
         UNION ALL
         SELECT CASE WHEN keys >= ${MAX_KEYS_PER_AGENT} THEN 'full' ELSE 'duplicate' END, NULL, NULL, NULL, NULL, NULL
         FROM agent WHERE NOT EXISTS (SELECT 1 FROM added)`,
        [agentId, key.kid, key.alg, JSON.stringify(key.jwk), purpose],
      );
      const row = rows[0];
      if (!row) return undefined;
      if (row.outcome !== 'added') return row.outcome as 'duplicate' | 'full';
      const { outcome: _, ...added } = row;
      return added;
    },

    /** The agent's keys of one purpose, oldest first; undefined when there is no such agent. */
    async list(agentId: string, purpose: KeyPurpose = 'assertion'): Promise<AgentKey[] | undefined> {
      const { rows } = await db.query<AgentKey & { agent: string }>(
        `SELECT a.id AS agent, k.kid, k.alg, k.jwk, k.created_at, k.last_used_at
         FROM agents a LEFT JOIN agent_keys k ON k.agent_id = a.id AND k.purpose = $2 WHERE a.id = $1 ORDER BY k.created_at, k.kid`,
        [agentId, purpose],
      );
      if (rows.length === 0) return undefined;
      return rows.filter((r) => r.kid !== null).map(({ agent: _, ...key }) => key);
    },

    async remove(agentId: string, kid: string, purpose: KeyPurpose = 'assertion'): Promise<boolean> {
      const { rowCount } = await db.query(`DELETE FROM agent_keys WHERE agent_id = $1 AND kid = $2 AND purpose = $3`, [agentId, kid, purpose]);
      return rowCount > 0;
    },

    /**
     * The request-signing keys of every active agent whose owner exists: the directory. Read from
     * the table on every call, so that a deactivated agent or a deleted key leaves it at once.
     */
    async directory(): Promise<Record<string, string>[]> {
      const { rows } = await db.query<{ jwk: Record<string, string> }>(
        `SELECT k.jwk || jsonb_build_object('kid', k.kid) AS jwk FROM agent_keys k JOIN agents a ON a.id = k.agent_id JOIN users u ON u.id = a.user_id
         WHERE k.purpose = 'request-signing' AND a.active ORDER BY k.created_at, k.kid`,
      );
      return rows.map((r) => r.jwk);
    },

    /** The agent a request-signing key belongs to (active or not); undefined for a kid no agent holds. */
    async signingKeyAgent(kid: string): Promise<SigningKeyAgent | undefined> {
      const { rows } = await db.query<SigningKeyAgent>(
        `SELECT a.id AS agent_id, a.name, u.email_verified_at IS NOT NULL AS owner_email_verified, a.active
         FROM agent_keys k JOIN agents a ON a.id = k.agent_id JOIN users u ON u.id = a.user_id
         WHERE k.purpose = 'request-signing' AND k.kid = $1`,
        [kid],
      );
      return rows[0];
    },

    /** The agent and its key `kid`, in one read; undefined when there is no such agent. */
    async subject(agentId: string, kid: string): Promise<AssertionSubject | undefined> {
      const { rows } = await db.query<Omit<AssertionSubject, 'key'> & { alg: AgentKeyAlg | null; jwk: Record<string, string> | null }>(
        `SELECT a.id AS agent_id, a.active, u.email_verified_at IS NOT NULL AS email_verified, k.alg, k.jwk FROM agents a
         JOIN users u ON u.id = a.user_id
         LEFT JOIN agent_keys k ON k.agent_id = a.id AND k.kid = $2 AND k.purpose = 'assertion'
         WHERE a.id = $1`,
        [agentId, kid],
      );
      const row = rows[0];
      if (!row) return undefined;
      const { alg, jwk, ...agent } = row;
      return { ...agent, key: alg && jwk ? { alg, jwk } : null };
    },

    /**
     * Spends an assertion id until `keepUntil` and notes the key's use, in one statement; false when
     * the id was spent already (a replay, whichever instance saw it first).
     */
    async spend(agentId: string, kid: string, jti: string, keepUntil: Date): Promise<boolean> {
      const { rows } = await db.query<{ spent: boolean }>(
        `WITH spent AS (
           INSERT INTO agent_assertion_jtis (agent_id, jti, expires_at) VALUES ($1, $3, $4)
           ON CONFLICT (agent_id, jti) DO NOTHING RETURNING 1),
         used AS (UPDATE agent_keys SET last_used_at = now() WHERE agent_id = $1 AND kid = $2 AND EXISTS (SELECT 1 FROM spent))
         SELECT EXISTS (SELECT 1 FROM spent) AS spent`,
        [agentId, kid, jti, keepUntil],
      );
      return rows[0].spent;
    },
  };
}
