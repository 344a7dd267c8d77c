import { generateId, generateSecret, sha256 } from '../crypto/secrets.js';
import type { Db } from '../db/types.js';
import type { SignInStatus } from '../protocol/sign-in.js';

/** A request as the status endpoints see it; `expired` folds the clock into the state. */
export interface SignInState {
  id: string;
  client_id: string;
  status: SignInStatus;
  error: string | null;
  /**
   * The request ran out of time before it could end: an expiry already recorded (status error,
   * error request_expired) or one this read has just noticed and recorded.
   */
  expired: boolean;
  /** This read noticed the expiry and recorded it; it happens once per request (log it then). */
  newly_expired?: boolean;
  agent_id: string | null;
  model: string | null;
  browser_hash: string;
  redirect_uri: string;
  state: string;
  expires_at: Date;
  /** The owner's approval: waited for ('pending'), given ('approved'), refused ('denied', the sign-in ended), or not asked (null). */
  approval: Approval | null;
  /** Shown on the waiting page and to the owner while approval is asked. */
  match_code: string | null;
}

export type Approval = 'pending' | 'approved' | 'denied';

/** What the approval page shows: who signs in, with which model, what is shared with whom. */
export interface SignInDetails extends SignInState {
  scope: string;
  client_name: string;
  agent_name: string | null;
  email: string | null;
  /** The resource (RFC 8707) it is for, canonical; null: the website itself. */
  resource: string | null;
  /** The one agent the website (or the agent's own document) named, if any. */
  login_hint: string | null;
}

export interface NewSignIn {
  client_id: string;
  redirect_uri: string;
  state: string;
  code_challenge: string;
  scope: string;
  browser_hash: string;
  login_hint: string | null;
  /** OpenID Connect mode: echoed in the ID token. */
  nonce: string | null;
  /** The resource (RFC 8707) its tokens are for, canonical; null: the website itself. */
  resource?: string | null;
  /** The DPoP key the code is bound to (RFC 9449 §10): its exchange must prove it. */
  dpop_jkt?: string | null;
}

// Ran out of time while it could still have moved on; a completed one stays completed.
const overdue = (r: string) => `${r}.status IN ('pending', 'authenticated') AND ${r}.expires_at <= now()`;
const RECORD_EXPIRY = `status = 'error', error = 'request_expired'`;

/** The one expiry rule, as a column of the request `r`: overdue now, or its expiry already recorded. */
export const expiredColumn = (r: string) => `(${overdue(r)} OR ${r}.error = 'request_expired') AS expired`;

const STATE_COLUMNS = `r.id, r.client_id, r.status, r.error, r.agent_id, r.model, r.browser_hash, r.redirect_uri, r.state, r.expires_at,
  r.approval, r.match_code, ${expiredColumn('r')}`;

/** Where a completed or denied request sends the browser, and who it was for (the audit log line). */
export interface EndedSignIn {
  redirect_uri: string;
  state: string;
  client_id: string;
  agent_id: string;
  model: string;
}

/** The website an agent has just authenticated a request for, and whether its owner must approve. */
export interface AuthenticatedSignIn {
  client_id: string;
  client_name: string;
  redirect_uri: string;
  approval: Approval | null;
}

/** A request whose expiry was just recorded, for the audit log line. */
export interface ExpiredSignIn {
  request_id: string;
  client_id: string;
  agent_id: string | null;
  model: string | null;
  /** It was still waiting for its owner's approval. */
  awaiting_owner: boolean;
}

/**
 * Authorization requests. Every transition is one UPDATE guarded by the current status and the
 * clock, so of two racing callers exactly one wins and the other sees zero rows.
 */
export function createSignInStore(db: Db) {
  /**
   * Expiry is a transition like the others: the first read that finds a request overdue records
   * it (one guarded UPDATE, only on that rare path), which fires the audit trigger's `expired`.
   */
  async function recordExpiry<T extends SignInState>(row: T | undefined): Promise<T | undefined> {
    if (!row?.expired || row.status === 'error') return row;
    const { rowCount } = await db.query(`UPDATE auth_requests r SET ${RECORD_EXPIRY} WHERE r.id = $1 AND ${overdue('r')}`, [row.id]);
    return { ...row, status: 'error', error: 'request_expired', newly_expired: rowCount === 1 };
  }

  return {
    async create(input: NewSignIn, ttlSeconds: number): Promise<{ id: string; expires_at: Date }> {
      const { rows } = await db.query<{ id: string; expires_at: Date }>(
        `INSERT INTO auth_requests (id, client_id, redirect_uri, state, code_challenge, scope, browser_hash, login_hint, nonce, resource, expires_at, dpop_jkt)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $11, now() + make_interval(secs => $10), $12) RETURNING id, expires_at`,
        [
          generateId('req'),
          input.client_id,
          input.redirect_uri,
          input.state,
          input.code_challenge,
          input.scope,
          input.browser_hash,
          input.login_hint,
          input.nonce,
          ttlSeconds,
          input.resource ?? null,
          input.dpop_jkt ?? null,
        ],
      );
      return rows[0];
    },

    /** The sign-in's state; observing it records its expiry when it is overdue (recordExpiry). */
    async observe(id: string): Promise<SignInState | undefined> {
      const { rows } = await db.query<SignInState>(`SELECT ${STATE_COLUMNS} FROM auth_requests r WHERE r.id = $1`, [id]);
      return recordExpiry(rows[0]);
    },

    /** As observe, with what the approval page shows. */
    async observeDetails(id: string): Promise<SignInDetails | undefined> {
      const { rows } = await db.query<SignInDetails>(
        `SELECT ${STATE_COLUMNS}, r.scope, c.name AS client_name, a.name AS agent_name, u.email, r.resource, r.login_hint
         FROM auth_requests r
         JOIN clients c ON c.id = r.client_id
         LEFT JOIN agents a ON a.id = r.agent_id
         LEFT JOIN users u ON u.id = a.user_id
         WHERE r.id = $1`,
        [id],
      );
      return recordExpiry(rows[0]);
    },

    /** Records, in bulk, the expiry of up to `limit` requests nobody looked at (the purge job). */
    async expireOverdue(limit: number): Promise<ExpiredSignIn[]> {
      const { rows } = await db.query<ExpiredSignIn>(
        `UPDATE auth_requests r SET ${RECORD_EXPIRY}
         WHERE r.id = ANY(ARRAY(SELECT o.id FROM auth_requests o WHERE ${overdue('o')} LIMIT $1)) AND ${overdue('r')}
         RETURNING r.id AS request_id, r.client_id, r.agent_id, r.model, r.approval IS NOT DISTINCT FROM 'pending' AS awaiting_owner`,
        [limit],
      );
      return rows;
    },

    /**
     * pending -> authenticated, for the agent the website named if it named one (login_hint);
     * undefined when the request was not pending, unexpired and open to this agent. In the same
     * statement, the owner's approval is asked when the agent's policy (or else its owner's) says
     * so: `always`, or `new_website` when the agent holds no live grant with this website.
     */
    async authenticate(id: string, agentId: string, model: string, matchCode: string): Promise<AuthenticatedSignIn | undefined> {
      const { rows } = await db.query<AuthenticatedSignIn>(
        `UPDATE auth_requests r SET status = 'authenticated', agent_id = $2, model = $3, authenticated_at = now(),
           (approval, match_code) = (
             SELECT p.approval, CASE WHEN p.approval IS NOT NULL THEN $4 END
             FROM (SELECT CASE coalesce(a.approval_policy, u.approval_policy)
                            WHEN 'always' THEN 'pending'
                            WHEN 'new_website' THEN CASE WHEN EXISTS (
                              SELECT 1 FROM grants g WHERE g.agent_id = a.id AND g.client_id = r.client_id
                                AND g.revoked_at IS NULL AND g.expires_at > now()) THEN NULL ELSE 'pending' END
                          END AS approval
                   FROM agents a JOIN users u ON u.id = a.user_id WHERE a.id = $2) p)
         FROM clients c
         WHERE r.id = $1 AND r.status = 'pending' AND r.expires_at > now() AND (r.login_hint IS NULL OR r.login_hint = $2)
           AND c.id = r.client_id
         RETURNING r.client_id, c.name AS client_name, r.redirect_uri, r.approval`,
        [id, agentId, model, matchCode],
      );
      return rows[0];
    },

    /**
     * authenticated -> completed, issuing the authorization code in the same statement. Or, when the
     * same browser comes back to a sign-in already completed whose code is still unspent (the answer
     * carrying it was lost: a 503 whose write committed anyway, a dropped connection), a fresh code
     * that replaces it: the undelivered one is spent by the statement that issues its successor, so
     * that there is never a moment when both work, and a code already redeemed (or spent by a kill
     * switch) stays that way. `again` says which. Returns the code (shown once, stored hashed) or
     * undefined when the request could not complete.
     */
    async complete(id: string, browserHash: string, codeTtlSeconds: number) {
      const code = generateSecret('aa_code');
      const { rows } = await db.query<EndedSignIn & { again: boolean }>(
        `WITH done AS (
           UPDATE auth_requests SET status = 'completed', completed_at = now()
           WHERE id = $1 AND browser_hash = $2 AND status = 'authenticated' AND approval IS DISTINCT FROM 'pending' AND expires_at > now()
           RETURNING id, client_id, agent_id, redirect_uri, state, code_challenge, scope, model, resource
         ), undelivered AS (
           -- Both branches read the request as it was before this statement: at most one applies.
           -- The request is checked once, before auth_codes is read at all (an uncorrelated EXISTS),
           -- so that the usual completion never looks there.
           UPDATE auth_codes c SET used_at = now()
           WHERE EXISTS (SELECT 1 FROM auth_requests r
                         WHERE r.id = $1 AND r.browser_hash = $2 AND r.status = 'completed' AND r.expires_at > now())
             AND c.request_id = $1 AND c.used_at IS NULL AND c.expires_at > now()
           RETURNING c.request_id AS id, c.client_id, c.agent_id, c.redirect_uri, (SELECT state FROM auth_requests WHERE id = $1) AS state,
             c.code_challenge, c.scope, c.model, c.resource
         ), issued AS (
           SELECT *, false AS again FROM done UNION ALL SELECT *, true AS again FROM undelivered
         ), code AS (
           INSERT INTO auth_codes (code_hash, request_id, client_id, agent_id, redirect_uri, code_challenge, scope, model, resource, expires_at)
           SELECT $3, id, client_id, agent_id, redirect_uri, code_challenge, scope, model, resource, now() + make_interval(secs => $4)
           FROM issued
         )
         SELECT redirect_uri, state, client_id, agent_id, model, again FROM issued`,
        [id, browserHash, sha256(code), codeTtlSeconds],
      );
      return rows[0] ? { ...rows[0], code } : undefined;
    },

    /**
     * pending -> authenticated by the agent's owner in the browser that started it (the owner path,
     * docs/protocol.md "People's MCP clients"): the owner has just answered in person, so no approval is
     * asked. Undefined unless the request was pending, unexpired, this browser's and named no agent.
     */
    async authenticateByOwner(id: string, browserHash: string, agentId: string, model: string): Promise<AuthenticatedSignIn | undefined> {
      const { rows } = await db.query<AuthenticatedSignIn>(
        `UPDATE auth_requests r SET status = 'authenticated', agent_id = $3, model = $4, authenticated_at = now()
         FROM clients c
         WHERE r.id = $1 AND r.browser_hash = $2 AND r.status = 'pending' AND r.expires_at > now() AND r.login_hint IS NULL
           AND c.id = r.client_id
         RETURNING r.client_id, c.name AS client_name, r.redirect_uri, r.approval`,
        [id, browserHash, agentId, model],
      );
      return rows[0];
    },

    /** pending -> error (access_denied): the owner, in the browser that started it, pressed Deny before any agent signed in. */
    async denyPending(id: string, browserHash: string) {
      const { rows } = await db.query<Omit<EndedSignIn, 'agent_id' | 'model'>>(
        `UPDATE auth_requests SET status = 'error', error = 'access_denied', completed_at = now()
         WHERE id = $1 AND browser_hash = $2 AND status = 'pending' AND expires_at > now()
         RETURNING redirect_uri, state, client_id`,
        [id, browserHash],
      );
      return rows[0];
    },

    /** authenticated -> error (access_denied), when the user presses Deny. */
    async deny(id: string, browserHash: string) {
      const { rows } = await db.query<EndedSignIn>(
        `UPDATE auth_requests SET status = 'error', error = 'access_denied', completed_at = now()
         WHERE id = $1 AND browser_hash = $2 AND status = 'authenticated' AND expires_at > now()
         RETURNING redirect_uri, state, client_id, agent_id, model`,
        [id, browserHash],
      );
      return rows[0];
    },
  };
}
