import type { Db } from '../db/types.js';
import type { Approval } from './sign-ins.js';

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
}

/** Who is asked to approve a sign-in, and what they are shown (the mail to the owner). */
export interface ApprovalRequest extends PendingApproval {
  user_id: string;
  email: string;
}

// Still waiting for its owner: the agent authenticated it, nobody has decided, time is left.
const WAITING = `r.status = 'authenticated' AND r.approval = 'pending' AND r.expires_at > now()`;
const OWNED = `r.agent_id IN (SELECT id FROM agents WHERE user_id = $2)`;

const COLUMNS = `r.id AS request_id, r.match_code, r.agent_id, a.name AS agent_name, r.model, r.client_id, c.name AS client_name,
  r.redirect_uri, r.scope, r.created_at, r.expires_at`;
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
     * instance asks first. The number of sign-ins waiting for the owner when claimed; undefined when a
     * mail went out within the window (the sign-in waits in the portal's list, which that mail links).
     */
    async claimMail(userId: string, windowSeconds: number): Promise<{ waiting: number } | undefined> {
      const { rows } = await db.query<{ waiting: number }>(
        `UPDATE users u SET approval_mailed_at = now()
         WHERE u.id = $1 AND (u.approval_mailed_at IS NULL OR u.approval_mailed_at <= now() - make_interval(secs => $2))
         RETURNING (SELECT count(*)::int ${FROM} WHERE a.user_id = u.id AND ${WAITING}) AS waiting`,
        [userId, windowSeconds],
      );
      return rows[0];
    },

    /** The sign-in if one of this owner's agents authenticated it; undefined for anyone else's. */
    async owned(requestId: string, userId: string): Promise<OwnedSignIn | undefined> {
      const { rows } = await db.query<OwnedSignIn>(
        `SELECT r.status, r.approval, ((r.status IN ('pending', 'authenticated') AND r.expires_at <= now()) OR r.error = 'request_expired') AS expired
         FROM auth_requests r WHERE r.id = $1 AND ${OWNED}`,
        [requestId, userId],
      );
      return rows[0];
    },

    /** pending -> approved; false when the sign-in was no longer waiting for this owner. */
    async approve(requestId: string, userId: string): Promise<boolean> {
      const { rowCount } = await db.query(
        `UPDATE auth_requests r SET approval = 'approved', approved_at = now() WHERE r.id = $1 AND ${OWNED} AND ${WAITING}`,
        [requestId, userId],
      );
      return rowCount === 1;
    },

    /** authenticated -> error (access_denied); false when the sign-in was no longer waiting for this owner. */
    async deny(requestId: string, userId: string): Promise<boolean> {
      const { rowCount } = await db.query(
        `UPDATE auth_requests r SET status = 'error', error = 'access_denied', approval = 'denied', completed_at = now() WHERE r.id = $1 AND ${OWNED} AND ${WAITING}`,
        [requestId, userId],
      );
      return rowCount === 1;
    },
  };
}
