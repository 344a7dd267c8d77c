import type { Db } from '../db/types.js';
import type { SigningAlg } from '../protocol/signing.js';

/** A delivery the sender has taken: what the logout token says and where it goes. */
export interface DueDelivery {
  jti: string;
  client_id: string;
  agent_id: string;
  sid: string;
  uri: string;
  /** The website's registered ID token algorithm, null for none (RS256). */
  alg: SigningAlg | null;
  /** Including this one. */
  attempts: number;
}

/** A delivery as the console, the admin API and the CLI show it. */
export interface LogoutDelivery {
  jti: string;
  client_id: string;
  agent_id: string;
  sid: string;
  uri: string;
  reason: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  created_at: Date;
  next_attempt_at: Date;
  last_attempt_at: Date | null;
  last_error: string | null;
  delivered_at: Date | null;
}

/** The channel migrations/050 notifies when deliveries are written. */
const CHANNEL = 'logout_deliveries';
const COLUMNS = `jti, client_id, agent_id, sid, uri, reason, status, attempts, created_at, next_attempt_at, last_attempt_at, last_error, delivered_at`;

/**
 * The back-channel logout outbox (migrations/050). Deliveries are written by endGrants
 * (src/store/grants.ts) with the revocation; these are the sender's and the operators' statements.
 */
export function createLogoutDeliveryStore(db: Db) {
  return {
    /** Calls `wake` whenever deliveries are written, on any instance; returns the function that stops listening. */
    onWritten(wake: () => void): Promise<() => Promise<void>> {
      return db.listen(CHANNEL, wake, { onStatus: (listening) => listening && wake() });
    },

    /**
     * Takes up to `limit` due deliveries for this instance: each counts an attempt and is leased for
     * `leaseSeconds` (its next attempt moved that far), so that no other instance takes it meanwhile,
     * and one that dies mid-delivery leaves it to another once the lease runs out. SKIP LOCKED: two
     * instances claiming together take different rows.
     */
    async claimDue(limit: number, leaseSeconds: number): Promise<DueDelivery[]> {
      const { rows } = await db.query<DueDelivery>(
        `WITH due AS (
           SELECT jti FROM logout_deliveries WHERE status = 'pending' AND next_attempt_at <= now()
           ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED
         )
         UPDATE logout_deliveries d SET attempts = d.attempts + 1, last_attempt_at = now(),
           next_attempt_at = now() + make_interval(secs => $2)
         FROM due, clients c WHERE d.jti = due.jti AND c.id = d.client_id
         RETURNING d.jti, d.client_id, d.agent_id, d.sid, d.uri, c.id_token_signed_response_alg AS alg, d.attempts`,
        [limit, leaseSeconds],
      );
      return rows;
    },

    async delivered(jti: string): Promise<void> {
      await db.query(
        `UPDATE logout_deliveries SET status = 'delivered', delivered_at = now(), last_error = NULL WHERE jti = $1 AND status = 'pending'`,
        [jti],
      );
    },

    /**
     * A refused attempt: tried again in `delaySeconds`, or marked failed once `giveUpAfterSeconds`
     * have passed since the revocation. Returns the status it is left in.
     */
    async refused(jti: string, error: string, delaySeconds: number, giveUpAfterSeconds: number): Promise<'pending' | 'failed'> {
      const { rows } = await db.query<{ status: 'pending' | 'failed' }>(
        `UPDATE logout_deliveries SET last_error = $2,
           status = CASE WHEN created_at + make_interval(secs => $4) <= now() THEN 'failed' ELSE 'pending' END,
           next_attempt_at = now() + make_interval(secs => $3)
         WHERE jti = $1 AND status = 'pending' RETURNING status`,
        [jti, error.slice(0, 500), delaySeconds, giveUpAfterSeconds],
      );
      return rows[0]?.status ?? 'pending';
    },

    /** A failed delivery tried once more, now; undefined when there is no failed delivery with that jti. */
    async retry(jti: string): Promise<LogoutDelivery | undefined> {
      const { rows } = await db.query<LogoutDelivery>(
        `UPDATE logout_deliveries SET status = 'pending', next_attempt_at = now() WHERE jti = $1 AND status = 'failed' RETURNING ${COLUMNS}`,
        [jti],
      );
      return rows[0];
    },

    /** The newest deliveries, of one website or all, of one status or all. */
    async list(filter: { clientId?: string; status?: LogoutDelivery['status']; limit: number }): Promise<LogoutDelivery[]> {
      const { rows } = await db.query<LogoutDelivery>(
        `SELECT ${COLUMNS} FROM logout_deliveries
         WHERE ($1::text IS NULL OR client_id = $1) AND ($2::text IS NULL OR status = $2)
         ORDER BY created_at DESC, jti LIMIT $3`,
        [filter.clientId ?? null, filter.status ?? null, filter.limit],
      );
      return rows;
    },
  };
}
