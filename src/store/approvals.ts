import type { Db } from '../db/types.js';
import { type Approval, expiredColumn } from './sign-ins.js';

/** A sign-in waiting for its owner, as the owner's portal lists it. */
export interface PendingApproval {
  request_id: string;
  match_code: string;
  agent_id: string;
  agent_name: string | null;
  model: string;
  client_id: string;
  client_name: string;
  redirect_uri: string;
  scope: string;
  created_at: Date;
  expires_at: Date;
}

/** One of an owner's sign-ins, as far as deciding on it goes. */
export interface OwnedSignIn {
  status: string;
  approval: Approval | null;
  expired: boolean;
  /** How many passkeys the owner holds: approving with none needs a fresh session instead. */
  owner_passkeys: number;
}

/** Who a decided sign-in was for, as its event carries it. */
export interface DecidedSignIn {
  request_id: string;
  client_id: string;
  agent_id: string;
  model: string;
}

/** Who is asked to approve a sign-in, and what they are shown (the mail to the owner). */
export interface ApprovalRequest extends PendingApproval {
  user_id: string;
  email: string;
}

/** The owner's approval mail claimed (what it tells), or not (whether and when to try again). */
export type MailClaim = { claimed: true; waiting: number; requestId: string } | { claimed: false; untold: boolean; reopensInSeconds: number };

// Still waiting for its owner: the agent authenticated it, nobody has decided, time is left.
const WAITING = `r.status = 'authenticated' AND r.approval = 'pending' AND r.expires_at > now()`;
const OWNED = `r.agent_id IN (SELECT id FROM agents WHERE user_id = $2)`;
// Started waiting after the owner's last approval mail (u: the owner's row as it was).
const UNTOLD = `(u.approval_mailed_at IS NULL OR r.authenticated_at > u.approval_mailed_at)`;

const COLUMNS = `r.id AS request_id, r.match_code, r.agent_id, a.name AS agent_name, r.model, r.client_id, c.name AS client_name,
  r.redirect_uri, r.scope, r.created_at, r.expires_at`;
const DECIDED = `r.id AS request_id, r.client_id, r.agent_id, r.model`;
const FROM = `FROM auth_requests r JOIN agents a ON a.id = r.agent_id JOIN clients c ON c.id = r.client_id`;

/**
 * The owner's decision on their agents' sign-ins (migrations/030). Every decision is one UPDATE
 * guarded by the request's state, its expiry and its owner: of two racing decisions one wins.
 */
export function createApprovalStore(db: Db) {
  return {
    async pending(userId: string): Promise<PendingApproval[]> {
      const { rows } = await db.query<PendingApproval>(`SELECT ${COLUMNS} ${FROM} WHERE a.user_id = $1 AND ${WAITING} ORDER BY r.created_at`, [
        userId,
      ]);
      return rows;
    },

    /** The sign-in the owner's mail is about. */
    async request(requestId: string): Promise<ApprovalRequest | undefined> {
      const { rows } = await db.query<ApprovalRequest>(
        `SELECT ${COLUMNS}, u.id AS user_id, u.email ${FROM} JOIN users u ON u.id = a.user_id WHERE r.id = $1`,
        [requestId],
      );
      return rows[0];
    },

    /**
     * Claims the owner's approval mail (migrations/053): at most one per `windowSeconds`, whichever
     * instance asks first, and only while a sign-in waits that no mail told of yet (one that started
     * after the last mail). Claimed: how many sign-ins wait, and the newest, which the mail describes.
     * Not claimed: whether such a sign-in waits, and in how many seconds the window reopens.
     */
    async claimMail(userId: string, windowSeconds: number): Promise<MailClaim> {
      const { rows } = await db.query<{ waiting: number | null; request_id: string | null; untold: boolean; reopens_in: number }>(
        `WITH claimed AS (
           UPDATE users u SET approval_mailed_at = now()
           WHERE u.id = $1 AND (u.approval_mailed_at IS NULL OR u.approval_mailed_at <= now() - make_interval(secs => $2))
             AND EXISTS (SELECT 1 ${FROM} WHERE a.user_id = u.id AND ${WAITING} AND ${UNTOLD})
           RETURNING (SELECT count(*)::int ${FROM} WHERE a.user_id = u.id AND ${WAITING}) AS waiting,
                     (SELECT r.id ${FROM} WHERE a.user_id = u.id AND ${WAITING} ORDER BY r.authenticated_at DESC, r.id LIMIT 1) AS request_id
         )
         SELECT c.waiting, c.request_id,
                EXISTS (SELECT 1 ${FROM} WHERE a.user_id = u.id AND ${WAITING} AND ${UNTOLD}) AS untold,
                coalesce(extract(epoch FROM u.approval_mailed_at + make_interval(secs => $2) - now()), 0)::float8 AS reopens_in
         FROM users u LEFT JOIN claimed c ON true WHERE u.id = $1`,
        [userId, windowSeconds],
      );
      const row = rows[0];
      if (row?.request_id) return { claimed: true, waiting: row.waiting!, requestId: row.request_id };
      return { claimed: false, untold: row?.untold ?? false, reopensInSeconds: Math.max(0, row?.reopens_in ?? 0) };
    },

    /** The sign-in if one of this owner's agents authenticated it; undefined for anyone else's. */
    async owned(requestId: string, userId: string): Promise<OwnedSignIn | undefined> {
      const { rows } = await db.query<OwnedSignIn>(
        `SELECT r.status, r.approval, ${expiredColumn('r')},
           (SELECT count(*)::int FROM owner_passkeys p WHERE p.user_id = $2) AS owner_passkeys
         FROM auth_requests r WHERE r.id = $1 AND ${OWNED}`,
        [requestId, userId],
      );
      return rows[0];
    },

    /** pending -> approved; undefined when the sign-in was no longer waiting for this owner. */
    async approve(requestId: string, userId: string): Promise<DecidedSignIn | undefined> {
      const { rows } = await db.query<DecidedSignIn>(
        `UPDATE auth_requests r SET approval = 'approved', approved_at = now() WHERE r.id = $1 AND ${OWNED} AND ${WAITING}
         RETURNING ${DECIDED}`,
        [requestId, userId],
      );
      return rows[0];
    },

    /** authenticated -> error (access_denied); undefined when the sign-in was no longer waiting for this owner. */
    async deny(requestId: string, userId: string): Promise<DecidedSignIn | undefined> {
      const { rows } = await db.query<DecidedSignIn>(
        `UPDATE auth_requests r SET status = 'error', error = 'access_denied', approval = 'denied', completed_at = now()
         WHERE r.id = $1 AND ${OWNED} AND ${WAITING} RETURNING ${DECIDED}`,
        [requestId, userId],
      );
      return rows[0];
    },
  };
}
