import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { RequestState } from './store/requests.js';

/** Every event of the audit log (table audit_events, migrations/003), in the order a sign-in meets them. */
export const AUDIT_EVENTS = [
  'authorize_started',
  'agent_authenticated',
  'agent_authentication_failed',
  'completed',
  'denied',
  'expired',
  'token_issued',
  'refreshed',
  'reuse_detected',
  'revoked',
] as const;
export type AuditEvent = (typeof AUDIT_EVENTS)[number];

/** Why an agent's authentication failed; kept in the audit log only, never told to the caller. */
export type AuthenticationFailure =
  | 'unknown_agent'
  | 'wrong_secret'
  | 'inactive_agent'
  | 'request_not_found'
  | 'request_expired'
  | 'request_denied'
  | 'request_taken';

/** Ids and names only: never a secret, code or token. */
export interface AuditFields {
  request_id?: string | null;
  agent_id?: string | null;
  client_id?: string | null;
  grant_id?: string | null;
  model?: string | null;
  reason?: string | null;
}

/**
 * The JSON log line of an audit event, for log pipelines: `{"audit":{"event":…},"msg":"audit"}`.
 * The table row is written by the database (triggers) or the store, not here.
 */
export function logAudit(log: FastifyBaseLogger, event: AuditEvent, fields: AuditFields, level: 'info' | 'warn' = 'info'): void {
  log[level]({ audit: { event, ...fields } }, 'audit');
}

/** A replayed code or reused refresh token revoked `grant`: the two lines, as the table has two rows. */
export function logReuse(log: FastifyBaseLogger, grant: AuditFields): void {
  logAudit(log, 'reuse_detected', grant, 'warn');
  logAudit(log, 'revoked', grant, 'warn');
}

/**
 * The `expired` line and the expired sign-in counted, once per sign-in: by the read that noticed
 * its expiry and recorded it (however often the expiry is reported afterwards).
 */
export function noteExpiry(request: FastifyRequest, state: RequestState): void {
  if (!state.newly_expired) return;
  request.server.services.metrics.signIns.inc({ stage: 'expired' });
  logAudit(request.log, 'expired', { request_id: state.id, client_id: state.client_id, agent_id: state.agent_id, model: state.model });
}
