import type { FastifyBaseLogger } from 'fastify';
import { type AuditFields, logAudit } from '../audit.js';
import type { Metrics } from '../metrics.js';
import type { SignInState } from '../store/sign-ins.js';

// Each step a sign-in takes: its stage in agent_auth_sign_ins_total, and its audit event.
const AUDIT_EVENT_OF = {
  started: 'authorize_started',
  authenticated: 'agent_authenticated',
  completed: 'completed',
  denied: 'denied',
  expired: 'expired',
} as const;
export type SignInStep = keyof typeof AUDIT_EVENT_OF;

/** Where a step is recorded; the purge job may run without either. */
export interface StepRecorders {
  log?: FastifyBaseLogger;
  metrics?: Metrics;
}

/**
 * A sign-in moved on: the step is counted and its audit log line written. The audit table's row is
 * written by the database, in the statement that made the change (migrations/003).
 */
export function recordStep({ log, metrics }: StepRecorders, step: SignInStep, fields: AuditFields): void {
  metrics?.signIns.inc({ stage: step });
  if (log) logAudit(log, AUDIT_EVENT_OF[step], fields);
}

/**
 * The expiry of a sign-in, recorded once: by the read that noticed it and wrote it down (however
 * often the expiry is reported afterwards).
 */
export function noteExpiry(recorders: StepRecorders, state: SignInState): void {
  if (!state.newly_expired) return;
  recordStep(recorders, 'expired', { request_id: state.id, client_id: state.client_id, agent_id: state.agent_id, model: state.model });
}
