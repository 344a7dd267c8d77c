import type { Db } from '../db/types.js';

/** How an owner proved who they are: by a link sent to their email, or with a passkey. */
export type AuthenticationMethod = 'email_link' | 'passkey';

/** The owner behind a live session, and how the session began. */
export interface OwnerSession {
  user_id: string;
  email: string;
  authenticated_by: AuthenticationMethod;
  authenticated_at: Date;
  expires_at: Date;
}

/**
 * Why using a link started no session: it is spent, expired or unknown, no owner has its address, or
 * (a link to change an owner's address) another owner has taken the address meanwhile.
 */
export type LinkRefusal = 'invalid_link' | 'no_account' | 'email_taken';

/** A link used: the owner's session, and for a change of address, the address the owner had before. */
export type LinkUsed = { user_id: string; changed?: { from: string; to: string } };

/** Lifetimes of a session, in seconds: since the last request (idle) and since it began (absolute). */
export interface SessionLifetimes {
  idleSeconds: number;
  absoluteSeconds: number;
}

/**
 * Owner sessions (migrations/020), keyed by a digest of the cookie's value: a session is its row,
 * so ending it holds on every instance at once.
 */
export function createOwnerSessionStore(db: Db) {
  return {
    /**
     * Spends the link and starts a session for the owner of its address, in one transaction: the
     * address is verified (the link reached it), and, with `signup`, an unknown address becomes an
     * owner. A link spent for an address no one owns (without `signup`) stays spent. A link to change
     * an owner's address moves that owner to it, verified, unless another owner has it.
     */
    async startByEmailLink(input: {
      tokenHash: string;
      sessionHash: string;
      signup: boolean;
      newUserId: string;
      lifetimes: SessionLifetimes;
    }): Promise<LinkUsed | LinkRefusal> {
      return db.transaction(async (tx) => {
        const { rows: links } = await tx.query<{ email: string; change_for: string | null }>(
          `UPDATE owner_email_links SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
           RETURNING email, change_for`,
          [input.tokenHash],
        );
        if (!links[0]) return 'invalid_link';
        const { email, change_for: changeFor } = links[0];
        let userId: string | undefined;
        let changedFrom: string | undefined;
        if (changeFor) {
          // The trigger of migrations/020 unverifies a changed address; the link has just proved it.
          const { rows: moved } = await tx.query<{ old_email: string }>(
            `UPDATE users u SET email = $2 FROM users old
             WHERE u.id = $1 AND old.id = u.id AND NOT EXISTS (SELECT 1 FROM users o WHERE lower(o.email) = lower($2) AND o.id <> $1)
             RETURNING old.email AS old_email`,
            [changeFor, email],
          );
          if (!moved[0]) return 'email_taken';
          [userId, changedFrom] = [changeFor, moved[0].old_email];
        } else {
          const { rows: users } = input.signup
            ? await tx.query<{ id: string }>(
                `INSERT INTO users (id, email) VALUES ($1, $2) ON CONFLICT (lower(email)) DO UPDATE SET email = users.email RETURNING id`,
                [input.newUserId, email],
              )
            : await tx.query<{ id: string }>(`SELECT id FROM users WHERE lower(email) = lower($1)`, [email]);
          userId = users[0]?.id;
        }
        if (!userId) return 'no_account';
        await tx.query(`UPDATE users SET email_verified_at = now() WHERE id = $1`, [userId]);
        await tx.query(
          `INSERT INTO owner_sessions (session_hash, user_id, expires_at, authenticated_by)
           VALUES ($1, $2, now() + make_interval(secs => $3), 'email_link')`,
          [input.sessionHash, userId, input.lifetimes.absoluteSeconds],
        );
        return changedFrom === undefined ? { user_id: userId } : { user_id: userId, changed: { from: changedFrom, to: email } };
      });
    },

    /** A session for an owner who proved who they are another way than a link (a passkey). */
    async start(input: { sessionHash: string; userId: string; method: AuthenticationMethod; lifetimes: SessionLifetimes }): Promise<void> {
      await db.query(
        `INSERT INTO owner_sessions (session_hash, user_id, expires_at, authenticated_by)
         VALUES ($1, $2, now() + make_interval(secs => $3), $4)`,
        [input.sessionHash, input.userId, input.lifetimes.absoluteSeconds, input.method],
      );
    },

    /** The session's owner if it is live (neither idle too long nor past its end); marks it seen. */
    async touch(sessionHash: string, idleSeconds: number): Promise<OwnerSession | undefined> {
      const { rows } = await db.query<OwnerSession>(
        `UPDATE owner_sessions s SET last_seen_at = now() FROM users u
         WHERE s.session_hash = $1 AND u.id = s.user_id AND s.expires_at > now()
           AND s.last_seen_at > now() - make_interval(secs => $2)
         RETURNING s.user_id, u.email, s.authenticated_by, s.authenticated_at, s.expires_at`,
        [sessionHash, idleSeconds],
      );
      return rows[0];
    },

    /** The owner proved who they are again within the session (a passkey): it is fresh from now. */
    async reverify(sessionHash: string, method: AuthenticationMethod): Promise<void> {
      await db.query(`UPDATE owner_sessions SET authenticated_by = $2, authenticated_at = now() WHERE session_hash = $1`, [sessionHash, method]);
    },

    async end(sessionHash: string): Promise<void> {
      await db.query(`DELETE FROM owner_sessions WHERE session_hash = $1`, [sessionHash]);
    },

    /** Every session of the owner, on every device. */
    async endAll(userId: string): Promise<void> {
      await db.query(`DELETE FROM owner_sessions WHERE user_id = $1`, [userId]);
    },
  };
}
