import type { AuditEvent } from '../store/audit-log.js';
import { type EventName, REUSE_REASONS } from './catalogue.js';
import type { EventContext, Events } from './emitter.js';

// The audit event each sign-in and grant event is logged as: the name of its row in the audit table (migrations/003).
const AUDIT_EVENT_OF = {
  'sign-in.started': 'authorize_started',
  'sign-in.authenticated': 'agent_authenticated',
  'sign-in.approval_requested': 'approval_requested',
  'sign-in.approved': 'approved',
  'sign-in.completed': 'completed',
  'sign-in.denied': 'denied',
  'sign-in.expired': 'expired',
  'agent.authentication_failed': 'agent_authentication_failed',
  'grant.issued': 'token_issued',
  'grant.refreshed': 'refreshed',
  'grant.ended': 'revoked',
  'access-token.revoked': 'revoked',
} as const satisfies Partial<Record<EventName, AuditEvent>>;
type AuditedEvent = keyof typeof AUDIT_EVENT_OF;

/** The JSON log line of an audit event, for log pipelines: `{"audit":{"event":…},"msg":"audit"}`. */
function logLine({ log }: EventContext, event: AuditEvent, fields: object, level: 'info' | 'warn' = 'info') {
  log[level]({ audit: { event, ...fields } }, 'audit');
}

/** Every sign-in and grant event becomes the audit log line of its table row; the row itself is the database's. */
export function writeAuditLogLines(events: Events): void {
  for (const name of Object.keys(AUDIT_EVENT_OF) as AuditedEvent[]) {
    if (name !== 'grant.ended') events.on(name, (fields, context) => logLine(context, AUDIT_EVENT_OF[name], fields));
  }
  // A grant ended by reuse has two rows (reuse_detected, then revoked), hence two lines, both warnings.
  events.on('grant.ended', (grant, context) => {
    if (!REUSE_REASONS.includes(grant.reason)) return logLine(context, 'revoked', grant);
    logLine(context, 'reuse_detected', grant, 'warn');
    logLine(context, 'revoked', grant, 'warn');
  });
}
