import { z } from 'zod';
import { AUDIT_ACTORS, AUDIT_EVENTS } from '../store/audit-log.js';

/** A page of audit rows: how many, and where the previous page ended. */
export const auditPageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** The next_cursor of the previous page. */
  cursor: z
    .string()
    .regex(/^[1-9]\d{0,15}$/, 'must be the next_cursor of a previous page')
    .optional(),
});

/** An audit row as the admin API shows it; the owner's history shows it too, less the owner's own ids. */
export const auditEventView = z.object({
  id: z.number().int(),
  at: z.date(),
  event: z.enum(AUDIT_EVENTS),
  request_id: z.string().nullable(),
  agent_id: z.string().nullable(),
  user_id: z.string().nullable(),
  email: z.string().nullable(),
  client_id: z.string().nullable(),
  grant_id: z.string().nullable(),
  model: z.string().nullable(),
  reason: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()).nullable(),
  actor: z.enum(AUDIT_ACTORS).nullable().describe('who acted: an operator or the owner; null for agents, websites and the server'),
});
