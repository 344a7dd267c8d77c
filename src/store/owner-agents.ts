import { generateId, generateSecret, sha256 } from '../crypto/secrets.js';
import type { Db } from '../db/types.js';
import type { ApprovalPolicy } from './owners.js';

/** One of an owner's agents, as they see it. */
export interface OwnerAgent {
  agent_id: string;
  name: string | null;
  active: boolean;
  /** false: key-only, its secret is refused (an operator's choice). */
  secret_enabled: boolean;
  created_at: Date;
  /** NULL: the owner's own policy. */
  approval_policy: ApprovalPolicy | null;
  /** The client an agent of the owner path was made for (migrations/090); null for the others. */
  client_id: string | null;
  /** `client`: made on the owner path for a person's client (docs/protocol.md, "People's MCP clients"). */
  kind: 'agent' | 'client';
}

/** A website an agent holds a live grant with: its newest sign-in there, and its first. */
export interface OwnerWebsite {
  agent_id: string;
  client_id: string;
  client_name: string;
  /** The website's first redirect URI, whose origin is shown. */
  redirect_uri: string;
  scope: string;
  first_sign_in_at: Date;
  last_sign_in_at: Date;
  last_model: string;
}

/** An agent's newest sign-in anywhere (its newest grant, live or not): when, where, with which model. */
export interface OwnerAgentLastSignIn {
  agent_id: string;
  at: Date;
  client_id: string;
  client_name: string;
  redirect_uri: string;
  model: string;
}

const AGENT = `id AS agent_id, name, active, secret_enabled, created_at, approval_policy, client_id,
  CASE WHEN client_id IS NULL THEN 'agent' ELSE 'client' END AS kind`;

/**
 * An owner's agents (migrations/001, 020). Every statement names the owner: an agent of another owner
 * is not found, exactly like one that does not exist.
 */
export function createOwnerAgentStore(db: Db) {
  return {
    async list(userId: string): Promise<OwnerAgent[]> {
      const { rows } = await db.query<OwnerAgent>(`SELECT ${AGENT} FROM agents WHERE user_id = $1 ORDER BY created_at, id`, [userId]);
      return rows;
    },

    async get(userId: string, agentId: string): Promise<OwnerAgent | undefined> {
      const { rows } = await db.query<OwnerAgent>(`SELECT ${AGENT} FROM agents WHERE id = $1 AND user_id = $2`, [agentId, userId]);
      return rows[0];
    },

    /**
     * The websites each of the owner's agents (or the one `agentId` names) holds a live grant with (of an
     * inactive agent too: they revive with it).
     */
    async websites(userId: string, agentId?: string): Promise<OwnerWebsite[]> {
      const { rows } = await db.query<OwnerWebsite>(
        `SELECT DISTINCT ON (g.agent_id, g.client_id) g.agent_id, g.client_id, c.name AS client_name,
           c.redirect_uris[1] AS redirect_uri, g.scope, g.created_at AS last_sign_in_at, g.model AS last_model,
           (SELECT min(f.created_at) FROM grants f WHERE f.agent_id = g.agent_id AND f.client_id = g.client_id) AS first_sign_in_at
         FROM grants g JOIN agents a ON a.id = g.agent_id JOIN clients c ON c.id = g.client_id
         WHERE a.user_id = $1 AND ($2::text IS NULL OR g.agent_id = $2) AND g.revoked_at IS NULL AND g.expires_at > now() AND c.active
         ORDER BY g.agent_id, g.client_id, g.created_at DESC`,
        [userId, agentId ?? null],
      );
      return rows;
    },

    /** Each of the owner's agents' (or the one `agentId` names) newest sign-in, whether its grant is still live or not. */
    async lastSignIns(userId: string, agentId?: string): Promise<OwnerAgentLastSignIn[]> {
      const { rows } = await db.query<OwnerAgentLastSignIn>(
        `SELECT DISTINCT ON (g.agent_id) g.agent_id, g.created_at AS at, g.client_id, c.name AS client_name,
           c.redirect_uris[1] AS redirect_uri, g.model
         FROM grants g JOIN agents a ON a.id = g.agent_id JOIN clients c ON c.id = g.client_id
         WHERE a.user_id = $1 AND ($2::text IS NULL OR g.agent_id = $2)
         ORDER BY g.agent_id, g.created_at DESC, g.id DESC`,
        [userId, agentId ?? null],
      );
      return rows;
    },

    async create(userId: string, name: string | null): Promise<OwnerAgent & { agent_secret: string }> {
      const agentSecret = generateSecret('aa_as');
      const { rows } = await db.query<OwnerAgent>(`INSERT INTO agents (id, user_id, name, secret_hash) VALUES ($1, $2, $3, $4) RETURNING ${AGENT}`, [
        generateId('agent'),
        userId,
        name,
        sha256(agentSecret),
      ]);
      return { ...rows[0], agent_secret: agentSecret };
    },

    async update(
      userId: string,
      agentId: string,
      patch: { name?: string | null; active?: boolean; approval_policy?: ApprovalPolicy | null },
    ): Promise<OwnerAgent | undefined> {
      const { rows } = await db.query<OwnerAgent>(
        `UPDATE agents SET name = CASE WHEN $3 THEN $4 ELSE name END, active = coalesce($5, active),
           approval_policy = CASE WHEN $6 THEN $7 ELSE approval_policy END, updated_at = now()
         WHERE id = $1 AND user_id = $2 RETURNING ${AGENT}`,
        [
          agentId,
          userId,
          patch.name !== undefined,
          patch.name ?? null,
          patch.active ?? null,
          patch.approval_policy !== undefined,
          patch.approval_policy ?? null,
        ],
      );
      return rows[0];
    },

    async rotateSecret(userId: string, agentId: string): Promise<(OwnerAgent & { agent_secret: string }) | undefined> {
      const agentSecret = generateSecret('aa_as');
      const { rows } = await db.query<OwnerAgent>(
        `UPDATE agents SET secret_hash = $3, updated_at = now() WHERE id = $1 AND user_id = $2 RETURNING ${AGENT}`,
        [agentId, userId, sha256(agentSecret)],
      );
      return rows[0] && { ...rows[0], agent_secret: agentSecret };
    },
  };
}
