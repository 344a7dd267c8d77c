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
     * Takes up to `limit` due deliveries for this instance, fairly across websites: round-robin (each
     * website's oldest first, then each one's second...), at most `perWebsite` of a website in flight
     * here (`inFlight`: how many each website has in flight now), and of a website backed off as a
     * whole (logout_websites, migrations/054) nothing until its `resume_at`, then one delivery, the
     * probe, which pushes `resume_at` a lease ahead so that the rest wait for its outcome. Each
     * delivery taken counts an attempt and is leased for `leaseSeconds` (its next attempt moved that
     * far), so that no other instance takes it meanwhile, and one that dies mid-delivery leaves it to
     * another once the lease runs out. SKIP LOCKED: two instances claiming together take different rows.
     */
    async claimDue(input: { limit: number; leaseSeconds: number; perWebsite: number; inFlight: Map<string, number> }): Promise<DueDelivery[]> {
      const { rows } = await db.query<DueDelivery>(
        `WITH sites AS (
           SELECT DISTINCT client_id FROM logout_deliveries WHERE status = 'pending' AND next_attempt_at <= now()
         ), open_sites AS (
           SELECT s.client_id, w.client_id IS NOT NULL AS probing, $3::int - coalesce(busy.n, 0) AS room
           FROM sites s LEFT JOIN logout_websites w ON w.client_id = s.client_id
             LEFT JOIN unnest($4::text[], $5::int[]) AS busy (client_id, n) ON busy.client_id = s.client_id
           WHERE w.resume_at IS NULL OR w.resume_at <= now()
         ), candidates AS (
           SELECT c.jti, c.client_id, c.next_attempt_at, o.probing, o.room
           FROM open_sites o CROSS JOIN LATERAL (
             SELECT d.jti, d.client_id, d.next_attempt_at FROM logout_deliveries d
             WHERE d.client_id = o.client_id AND d.status = 'pending' AND d.next_attempt_at <= now()
             ORDER BY d.next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED
           ) c
         ), picked AS (
           SELECT jti, client_id, probing FROM (
             SELECT *, row_number() OVER (PARTITION BY client_id ORDER BY next_attempt_at) AS nth FROM candidates
           ) ranked
           WHERE nth <= CASE WHEN probing THEN least(room, 1) ELSE room END
           ORDER BY nth, next_attempt_at LIMIT $1
         ), probed AS (
           UPDATE logout_websites w SET resume_at = now() + make_interval(secs => $2)
           FROM picked p WHERE p.probing AND w.client_id = p.client_id
         )
         UPDATE logout_deliveries d SET attempts = d.attempts + 1, last_attempt_at = now(),
           next_attempt_at = now() + make_interval(secs => $2)
         FROM picked, clients c WHERE d.jti = picked.jti AND c.id = d.client_id
         RETURNING d.jti, d.client_id, d.agent_id, d.sid, d.uri, c.id_token_signed_response_alg AS alg, d.attempts`,
        [input.limit, input.leaseSeconds, input.perWebsite, [...input.inFlight.keys()], [...input.inFlight.values()]],
      );
      return rows;
    },

    /** A delivery answered 2xx: done. Its website answers, so it is no longer backed off. */
    async delivered(jti: string): Promise<void> {
      await db.query(
        `WITH done AS (
           UPDATE logout_deliveries SET status = 'delivered', delivered_at = now(), last_error = NULL
           WHERE jti = $1 AND status = 'pending' RETURNING client_id
         )
         DELETE FROM logout_websites w USING done WHERE w.client_id = done.client_id`,
        [jti],
      );
    },

    /**
     * A refused attempt: tried again in `delaySeconds`, or marked failed once `giveUpAfterSeconds`
     * have passed since the revocation. Returns the status it is left in. A website that answered
     * (whatever it said) is no longer backed off; one that did not answer in time (`timedOut`) is
     * backed off as a whole: for `websiteDelay.first` seconds after its first timeout, doubling with
     * each further one up to `websiteDelay.max` (claimDue sends one probe after that).
     */
    async refused(input: {
      jti: string;
      error: string;
      delaySeconds: number;
      giveUpAfterSeconds: number;
      timedOut: boolean;
      websiteDelay: { first: number; max: number };
    }): Promise<'pending' | 'failed'> {
      const { rows } = await db.query<{ status: 'pending' | 'failed' }>(
        `WITH refused AS (
           UPDATE logout_deliveries SET last_error = $2,
             status = CASE WHEN created_at + make_interval(secs => $4) <= now() THEN 'failed' ELSE 'pending' END,
             next_attempt_at = now() + make_interval(secs => $3)
           WHERE jti = $1 AND status = 'pending' RETURNING status, client_id
         ), answered AS (
           DELETE FROM logout_websites w USING refused WHERE NOT $5 AND w.client_id = refused.client_id
         ), backed_off AS (
           INSERT INTO logout_websites (client_id, timeouts, resume_at)
           SELECT client_id, 1, now() + make_interval(secs => $6) FROM refused WHERE $5
           ON CONFLICT (client_id) DO UPDATE SET timeouts = logout_websites.timeouts + 1,
             resume_at = now() + make_interval(secs => least($6 * power(2, logout_websites.timeouts), $7))
         )
         SELECT status FROM refused`,
        [
          input.jti,
          input.error.slice(0, 500),
          input.delaySeconds,
          input.giveUpAfterSeconds,
          input.timedOut,
          input.websiteDelay.first,
          input.websiteDelay.max,
        ],
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
