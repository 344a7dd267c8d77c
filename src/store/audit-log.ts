import type { Db } from '../db/types.js';

/** Who acted, on the rows of people's actions: an operator (admin API, console, CLI) or an owner. */
export const AUDIT_ACTORS = ['admin', 'owner'] as const;
export type AuditActor = (typeof AUDIT_ACTORS)[number];

/** Every event of the audit log (table audit_events, migrations/003), in the order a sign-in meets them. */
export const AUDIT_EVENTS = [
  'authorize_started',
  'agent_authenticated',
  'agent_authentication_failed',
  'approval_requested',
  'approved',
  'completed',
  'denied',
  'expired',
  'token_issued',
  'refreshed',
  'reuse_detected',
  'revoked',
  // Actions of an operator (actor admin) or an owner (actor owner) on the records they manage.
  'agent_created',
  'agent_updated',
  'agent_secret_rotated',
  'agent_deleted',
  'agent_key_added',
  'agent_key_deleted',
  'signing_key_added',
  'signing_key_deleted',
  'client_created',
  'client_updated',
  'client_secret_rotated',
  'client_deleted',
  'resource_created',
  'resource_updated',
  'resource_deleted',
  'owner_signed_in',
  'owner_reauthenticated',
  'owner_settings_changed',
  'owner_email_changed',
  'passkey_added',
  'passkey_renamed',
  'passkey_removed',
  // The owner path (People's MCP clients): the owner let a client act as their agent, or refused it.
  'client_sign_in_allowed',
  'client_sign_in_denied',
] as const;
export type AuditEvent = (typeof AUDIT_EVENTS)[number];

/** Why an agent's assertion was refused (agent-keys/assertion.ts). */
export type AssertionFailure =
  | 'unknown_agent'
  | 'inactive_agent'
  | 'malformed_assertion'
  | 'unknown_key'
  | 'wrong_key'
  | 'assertion_expired'
  | 'assertion_too_long'
  | 'assertion_not_yet_valid'
  | 'wrong_audience'
  | 'wrong_request'
  | 'agent_mismatch'
  | 'assertion_replayed';

/** Why an agent's authentication failed; kept in the audit log only, never told to the caller. */
export type AuthenticationFailure =
  | AssertionFailure
  | 'wrong_secret'
  | 'secret_disabled'
  | 'request_not_found'
  | 'request_expired'
  | 'request_denied'
  | 'request_taken'
  | 'login_hint_mismatch'
  | 'wrong_website'
  | 'email_not_verified';

export interface AuditRecord {
  id: number;
  at: Date;
  event: AuditEvent;
  request_id: string | null;
  agent_id: string | null;
  user_id: string | null;
  email: string | null;
  client_id: string | null;
  grant_id: string | null;
  model: string | null;
  reason: string | null;
  detail: Record<string, unknown> | null;
  /** Who acted: an operator (`admin`), an owner (`owner`); null for what agents, websites and the server do. */
  actor: AuditActor | null;
}

/** An action of an operator or an owner, for the audit log. */
export interface AuditAction {
  actor: AuditActor;
  event: AuditEvent;
  /** The owner concerned; looked up from the agent when not given. */
  userId?: string | null;
  agentId?: string | null;
  clientId?: string | null;
  /** Which fields changed, never their secret values. */
  detail?: Record<string, unknown>;
}

export interface AuditFilter {
  agentId?: string;
  email?: string;
  clientId?: string;
  requestId?: string;
  event?: AuditEvent;
  actor?: AuditActor;
  /** Inclusive lower bound of `at`. */
  from?: Date;
  /** Exclusive upper bound of `at`. */
  to?: Date;
  /** Keyset paging: only events older than this id. */
  beforeId?: number;
  limit: number;
}

/** A row of an owner's own history: the event, with the names of its agent and website. */
export interface OwnerHistoryRecord {
  id: number;
  at: Date;
  event: AuditEvent;
  request_id: string | null;
  agent_id: string | null;
  /** Null when the agent is gone (or is no longer this owner's). */
  agent_name: string | null;
  client_id: string | null;
  /** Null when the website is gone. */
  client_name: string | null;
  redirect_uri: string | null;
  grant_id: string | null;
  model: string | null;
  reason: string | null;
  detail: Record<string, unknown> | null;
  actor: AuditActor | null;
}

/**
 * The audit log. Triggers write the success paths (migrations/003); the server writes only what
 * no row change shows, a failed agent authentication.
 */
export function createAuditLogStore(db: Db) {
  return {
    /**
     * One statement of the same shape whatever the reason, so that an unknown agent, a wrong secret
     * and an inactive agent take the same time. The user and the client are looked up in it.
     */
    async recordAuthenticationFailure(input: { requestId: string; agentId: string; model: string; reason: AuthenticationFailure }): Promise<void> {
      await db.query(
        `INSERT INTO audit_events (event, request_id, agent_id, user_id, client_id, model, reason)
         VALUES ('agent_authentication_failed', $1, $2, (SELECT user_id FROM agents WHERE id = $2),
           (SELECT client_id FROM auth_requests WHERE id = $1), $3, $4)`,
        [input.requestId, input.agentId, input.model, input.reason],
      );
    },

    async recordAction(action: AuditAction): Promise<void> {
      await db.query(
        `INSERT INTO audit_events (event, actor, user_id, agent_id, client_id, detail)
         VALUES ($1, $2, coalesce($3, (SELECT user_id FROM agents WHERE id = $4)), $4, $5, $6)`,
        [action.event, action.actor, action.userId ?? null, action.agentId ?? null, action.clientId ?? null, action.detail ?? null],
      );
    },

    /**
     * An owner's history, newest first: the rows recorded for them (their agents' sign-ins and
     * refusals, their own and their operators' actions on their records), never anyone else's.
     */
    async ofOwner(userId: string, filter: { agentId?: string; beforeId?: number; limit: number }): Promise<OwnerHistoryRecord[]> {
      const { rows } = await db.query<OwnerHistoryRecord>(
        `SELECT e.id, e.at, e.event, e.request_id, e.agent_id, a.name AS agent_name, e.client_id, c.name AS client_name,
           c.redirect_uris[1] AS redirect_uri, e.grant_id, e.model, e.reason, e.detail, e.actor
         FROM audit_events e
           LEFT JOIN agents a ON a.id = e.agent_id AND a.user_id = e.user_id
           LEFT JOIN clients c ON c.id = e.client_id
         WHERE e.user_id = $1 AND ($2::text IS NULL OR e.agent_id = $2) AND ($3::bigint IS NULL OR e.id < $3)
         ORDER BY e.id DESC LIMIT $4`,
        [userId, filter.agentId ?? null, filter.beforeId ?? null, filter.limit],
      );
      return rows;
    },

    /** Newest first; every filter is optional and they combine with AND. */
    async list(filter: AuditFilter): Promise<AuditRecord[]> {
      const params: unknown[] = [];
      const where: string[] = [];
      const add = (value: unknown, condition: (param: string) => string) => {
        if (value === undefined) return;
        params.push(value);
        where.push(condition(`$${params.length}`));
      };
      add(filter.agentId, (p) => `e.agent_id = ${p}`);
      add(filter.email, (p) => `e.user_id = (SELECT id FROM users WHERE lower(email) = lower(${p}))`);
      add(filter.clientId, (p) => `e.client_id = ${p}`);
      add(filter.requestId, (p) => `e.request_id = ${p}`);
      add(filter.event, (p) => `e.event = ${p}`);
      add(filter.actor, (p) => `e.actor = ${p}`);
      add(filter.from, (p) => `e.at >= ${p}`);
      add(filter.to, (p) => `e.at < ${p}`);
      add(filter.beforeId, (p) => `e.id < ${p}`);
      params.push(filter.limit);
      const { rows } = await db.query<AuditRecord>(
        `SELECT e.id, e.at, e.event, e.request_id, e.agent_id, e.user_id, u.email, e.client_id, e.grant_id, e.model,
           e.reason, e.detail, e.actor
         FROM audit_events e LEFT JOIN users u ON u.id = e.user_id
         ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY e.id DESC LIMIT $${params.length}`,
        params,
      );
      return rows;
    },
  };
}
