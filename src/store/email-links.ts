import type { Db } from '../db/types.js';

/** Whether a link was recorded, or how long until the address may be sent another. */
export type LinkRecorded = { recorded: true; ownerExists: boolean } | { recorded: false; retryAfterSeconds: number };

/**
 * Owners' sign-in links (migrations/020), kept as digests of their tokens. The rows also count
 * what was sent to an address lately: the limit per email holds across instances.
 */
export function createEmailLinkStore(db: Db) {
  return {
    /**
     * Records a link for `email` unless `max` were already recorded for it within `windowSeconds` and
     * one of them is still usable (unused, unexpired): whoever is refused has a working link in that
     * mailbox, so nobody else's requests can keep its owner out (docs/security.md, "Owners"). One
     * statement, the same work whether or not anyone owns the address; says whether an owner has it.
     * `changeFor`: the link moves that owner to `email` when used (an owner changing their address).
     */
    async record(input: {
      tokenHash: string;
      email: string;
      ttlSeconds: number;
      max: number;
      windowSeconds: number;
      changeFor?: string;
    }): Promise<LinkRecorded> {
      const { rows } = await db.query<{ recorded: number; retry_after: number | null; owner_exists: boolean }>(
        `WITH recent AS (
           SELECT count(*)::int AS n, min(created_at) AS oldest,
             max(expires_at) FILTER (WHERE used_at IS NULL AND expires_at > now()) AS live_until
           FROM owner_email_links
           WHERE lower(email) = lower($2) AND created_at > now() - make_interval(secs => $5)
         ), recorded AS (
           INSERT INTO owner_email_links (token_hash, email, expires_at, change_for)
           SELECT $1, $2, now() + make_interval(secs => $3), $6 FROM recent WHERE n < $4 OR live_until IS NULL
           RETURNING 1
         )
         SELECT (SELECT count(*) FROM recorded)::int AS recorded,
           ceil(extract(epoch FROM least(oldest + make_interval(secs => $5), live_until) - now()))::int AS retry_after,
           EXISTS (SELECT 1 FROM users WHERE lower(email) = lower($2)) AS owner_exists
         FROM recent`,
        [input.tokenHash, input.email, input.ttlSeconds, input.max, input.windowSeconds, input.changeFor ?? null],
      );
      const { recorded, retry_after, owner_exists } = rows[0];
      return recorded ? { recorded: true, ownerExists: owner_exists } : { recorded: false, retryAfterSeconds: Math.max(1, retry_after ?? 1) };
    },

    /** Whether the link is still usable, without spending it (a mail scanner may open it). */
    async isUsable(tokenHash: string): Promise<boolean> {
      const { rows } = await db.query(`SELECT 1 FROM owner_email_links WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()`, [
        tokenHash,
      ]);
      return rows.length > 0;
    },
  };
}
