import type { FastifyBaseLogger } from 'fastify';
import type { AuditEvent } from './store/audit-log.js';

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
