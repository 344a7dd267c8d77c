import type { Db, Queryable } from '../db/types.js';
import { type EndedGrant, endGrants, GRANT_JOINS, LIVE_GRANT } from './grants.js';

/** One sign-in of one agent at one website, as its owner and the operators see it. */
export interface GrantRecord {
  grant_id: string;
  agent_id: string;
  /** The user the agent acts for: what the website was given. */
  email: string;
  client_id: string;
  client_name: string;
  scope: string;
  model: string;
  created_at: Date;
  last_refreshed_at: Date | null;
  expires_at: Date;
  revoked_at: Date | null;
  revoked_reason: string | null;
  /** Its tokens work: not revoked, not expired, agent and client active. */
  active: boolean;
}

/** An agent that holds at least one live grant at a website. */
export interface ClientAgent {
  agent_id: string;
  name: string | null;
  email: string;
  models: string[];
  grants: number;
  last_active_at: Date;
}

/** The admin API's and console's levels, and the owner's: one website of an agent, or all their agents. */
export type RevocationLevel = 'grant' | 'agent' | 'user' | 'client' | 'website' | 'owner';

// Who is revoked at each level (found by the keys: an id, the email for a user, the agent and client
// ids for a website), which of their grants end, and which sign-ins in flight (requests and unspent
// codes, both have agent_id and client_id) end with them; at an agent's or an owner's level, the kill
// switch also withdraws the request-signing keys of those agents (docs/protocol.md, "Signed agent requests").
const LEVELS: Record<RevocationLevel, { owner: string; which: string; inFlight?: string; killsSigning?: true }> = {
  grant: { owner: `SELECT id FROM grants WHERE id = $1`, which: 'id IN (SELECT id FROM owner)' },
  agent: {
    owner: `SELECT id FROM agents WHERE id = $1`,
    which: 'agent_id IN (SELECT id FROM owner)',
    inFlight: `agent_id IN (SELECT id FROM owner)`,
    killsSigning: true,
  },
  user: {
    owner: `SELECT id FROM users WHERE lower(email) = lower($1)`,
    which: 'user_id IN (SELECT id FROM owner)',
    inFlight: `agent_id IN (SELECT a.id FROM agents a JOIN owner ON owner.id = a.user_id)`,
    killsSigning: true,
  },
  // A website's requests end whether or not an agent has come yet.
  client: {
    owner: `SELECT id FROM clients WHERE id = $1`,
    which: 'client_id IN (SELECT id FROM owner)',
    inFlight: `client_id IN (SELECT id FROM owner)`,
  },
  website: {
    owner: `SELECT id FROM agents WHERE id = $1`,
    which: 'agent_id IN (SELECT id FROM owner) AND client_id = $2',
    inFlight: `agent_id IN (SELECT id FROM owner) AND client_id = $2`,
  },
  owner: {
    owner: `SELECT id FROM users WHERE id = $1`,
    which: 'user_id IN (SELECT id FROM owner)',
    inFlight: `agent_id IN (SELECT a.id FROM agents a JOIN owner ON owner.id = a.user_id)`,
    killsSigning: true,
  },
};

/**
 * Ends the sign-ins in flight at a level above the grant (none at the grant level): open requests
 * are denied (access_denied) and unspent codes spent, request first, in the order a sign-in moves.
 * Run on the transaction that ends the grants (revoke below, an agent's deactivation), so that
 * nothing begun before yields a token after.
 */
export async function endSignInsInFlight(q: Queryable, level: RevocationLevel, keys: string[]): Promise<void> {
  const { owner, inFlight } = LEVELS[level];
  if (!inFlight) return;
  await q.query(
    `WITH owner AS (${owner})
     UPDATE auth_requests SET status = 'error', error = 'access_denied', completed_at = now()
     WHERE status IN ('pending', 'authenticated') AND expires_at > now() AND ${inFlight}`,
    keys,
  );
  await q.query(
    `WITH owner AS (${owner})
     UPDATE auth_codes SET used_at = now() WHERE used_at IS NULL AND expires_at > now() AND ${inFlight}`,
    keys,
  );
}

const GRANT_ROWS = `SELECT g.id AS grant_id, g.agent_id, u.email, g.client_id, c.name AS client_name, g.scope, g.model, g.created_at,
    g.last_refreshed_at, g.expires_at, g.revoked_at, g.revoked_reason, (${LIVE_GRANT}) AS active
  FROM grants g ${GRANT_JOINS} JOIN users u ON u.id = g.user_id`;
const NEWEST_FIRST = 'ORDER BY g.created_at DESC, g.id';

/** Sign-in history and revocation at every level, for the admin API. */
export function createGrantRecordStore(db: Db) {
  const exists = async (table: 'agents' | 'clients', id: string) => (await db.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id])).rows.length > 0;

  return {
    /** The websites an agent signed into; undefined when there is no such agent. */
    async ofAgent(agentId: string): Promise<GrantRecord[] | undefined> {
      if (!(await exists('agents', agentId))) return undefined;
      const { rows } = await db.query<GrantRecord>(`${GRANT_ROWS} WHERE g.agent_id = $1 ${NEWEST_FIRST}`, [agentId]);
      return rows;
    },

    /** A user's sign-ins through all their agents; undefined when no user has that email. */
    async ofUser(email: string): Promise<{ user_id: string; email: string; grants: GrantRecord[] } | undefined> {
      const { rows: users } = await db.query<{ user_id: string; email: string }>(
        `SELECT id AS user_id, email FROM users WHERE lower(email) = lower($1)`,
        [email],
      );
      if (!users[0]) return undefined;
      const { rows } = await db.query<GrantRecord>(`${GRANT_ROWS} WHERE g.user_id = $1 ${NEWEST_FIRST}`, [users[0].user_id]);
      return { ...users[0], grants: rows };
    },

    /** The agents signed in at a website now, most recently active first; undefined when there is no such client. */
    async activeAgentsOf(clientId: string): Promise<ClientAgent[] | undefined> {
      if (!(await exists('clients', clientId))) return undefined;
      const { rows } = await db.query<ClientAgent>(
        `SELECT g.agent_id, a.name, u.email, array_agg(DISTINCT g.model ORDER BY g.model) AS models,
           count(*)::int AS grants, max(coalesce(g.last_refreshed_at, g.created_at)) AS last_active_at
         FROM grants g ${GRANT_JOINS} JOIN users u ON u.id = a.user_id
         WHERE g.client_id = $1 AND ${LIVE_GRANT}
         GROUP BY g.agent_id, a.name, u.email
         ORDER BY last_active_at DESC, g.agent_id`,
        [clientId],
      );
      return rows;
    },

    /** When each website and each agent last signed in (their newest grant), for the console's lists. */
    async lastSignIns(): Promise<{ clients: Map<string, Date>; agents: Map<string, Date> }> {
      const { rows } = await db.query<{ kind: 'client' | 'agent'; id: string; at: Date }>(
        `SELECT 'client' AS kind, client_id AS id, max(created_at) AS at FROM grants GROUP BY client_id
         UNION ALL
         SELECT 'agent' AS kind, agent_id AS id, max(created_at) AS at FROM grants GROUP BY agent_id`,
      );
      const of = (kind: string) => new Map(rows.filter((r) => r.kind === kind).map((r) => [r.id, r.at]));
      return { clients: of('client'), agents: of('agent') };
    },

    /**
     * Revokes every unrevoked grant at that level: their refresh tokens stop at once, and so do
     * their access tokens, whose every check reads the grant. The audit trigger records each. Above
     * the grant level, the sign-ins in flight end with it, so nothing begun before the switch yields
     * a token after: open requests are denied (access_denied) and unspent codes spent. One
     * transaction, in the order a sign-in moves (request, code, grant): each statement reads what
     * the one before let through, so a sign-in that moves on meanwhile is caught a step further.
     * `reason` is grants.revoked_reason: `admin_<level>` or `owner_<level>` (who asked, migrations/021).
     * Returns the grants it revoked; undefined when the grant, agent, user (by email or id) or client
     * does not exist.
     */
    async revoke(level: RevocationLevel, keys: string[], reason: string): Promise<EndedGrant[] | undefined> {
      const { owner, which } = LEVELS[level];
      return db.transaction(async (tx) => {
        const { rows } = await tx.query<{ found: boolean }>(`WITH owner AS (${owner}) SELECT EXISTS (SELECT 1 FROM owner) AS found`, [keys[0]]);
        if (!rows[0].found) return undefined;
        await endSignInsInFlight(tx, level, keys);
        // A kill switch stops the agents' signed requests too: their keys leave the directory with the grants.
        const { inFlight, killsSigning } = LEVELS[level];
        if (killsSigning) await tx.query(`WITH owner AS (${owner}) DELETE FROM agent_keys WHERE purpose = 'request-signing' AND ${inFlight}`, keys);
        return endGrants(tx, { with: `owner AS (${owner})`, which, params: keys, reason });
      });
    },
  };
}
