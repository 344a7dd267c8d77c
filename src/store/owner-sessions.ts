import type { Db, Queryable } from '../db/types.js';

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
/** A new session: its digest, its owner, how they proved who they are, and the session this browser held before (it ends). */
export interface NewOwnerSession {
  sessionHash: string;
  method: AuthenticationMethod;
  lifetimes: SessionLifetimes;
  replacing?: string;
}

/**
 * The one statement that starts an owner session, whatever the method: the old session of this
 * browser ends, the new one starts, and the owner's history records the sign-in, all or nothing.
 */
async function startSession(db: Queryable, userId: string, session: NewOwnerSession): Promise<void> {
  await db.query(
    `WITH ended AS (DELETE FROM owner_sessions WHERE session_hash = $5), started AS (
       INSERT INTO owner_sessions (session_hash, user_id, expires_at, authenticated_by)
       VALUES ($1, $2, now() + make_interval(secs => $3), $4) RETURNING user_id, authenticated_by
     )
     INSERT INTO audit_events (event, actor, user_id, detail)
     SELECT 'owner_signed_in', 'owner', user_id, jsonb_build_object('by', authenticated_by) FROM started`,
    [session.sessionHash, userId, session.lifetimes.absoluteSeconds, session.method, session.replacing ?? null],
  );
}

export function createOwnerSessionStore(db: Db) {
  return {
    /**
     * Spends the link and starts a session for the owner of its address, in one transaction: the
     * address is verified (the link reached it), and, with `signup`, an unknown address becomes an
     * owner. A link spent for an address no one owns (without `signup`) stays spent. A link to change
     * an owner's address moves that owner to it, verified, unless another owner has it.
     */
    async startByEmailLink(
      input: { tokenHash: string; signup: boolean; newUserId: string },
      session: Omit<NewOwnerSession, 'method'>,
    ): Promise<LinkUsed | LinkRefusal> {
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
        await startSession(tx, userId, { ...session, method: 'email_link' });
        if (changedFrom !== undefined) {
          await tx.query(`INSERT INTO audit_events (event, actor, user_id) VALUES ('owner_email_changed', 'owner', $1)`, [userId]);
        }
        return changedFrom === undefined ? { user_id: userId } : { user_id: userId, changed: { from: changedFrom, to: email } };
      });
    },

    /** A session for an owner who proved who they are another way than a link (a passkey). */
    start: (userId: string, session: NewOwnerSession) => startSession(db, userId, session),

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

    /** The owner proved who they are again within the session (a passkey): it is fresh from now, and their history says so. */
    async reverify(sessionHash: string, method: AuthenticationMethod): Promise<void> {
      await db.query(
        `WITH fresh AS (UPDATE owner_sessions SET authenticated_by = $2, authenticated_at = now() WHERE session_hash = $1 RETURNING user_id)
         INSERT INTO audit_events (event, actor, user_id, detail) SELECT 'owner_reauthenticated', 'owner', user_id, jsonb_build_object('by', $2::text) FROM fresh`,
        [sessionHash, method],
      );
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
