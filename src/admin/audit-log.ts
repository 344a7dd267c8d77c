import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { recordId } from '../shapes/ids.js';
import { AUDIT_ACTORS, AUDIT_EVENTS } from '../store/audit-log.js';
import type { Store } from '../store/index.js';

const id = recordId();
// An instant with its offset, or a day (midnight UTC), so `--since 2025-01-31` works from a shell.
// Within PostgreSQL's years once the offset is applied: it has no year 0 and none past 9999.
const instant = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()])
  .transform((value) => new Date(value))
  .refine((date) => date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999, 'must lie between the years 1 and 9999');

/** The filters of GET /admin/audit, `agent-auth audit` and the console's audit page. */
export const auditQuery = z.object({
  agent_id: id.optional(),
  email: z.email().max(320).optional(),
  client_id: id.optional(),
  request_id: id.optional(),
  event: z.enum(AUDIT_EVENTS).optional(),
  /** Only what operators (`admin`) or owners (`owner`) did. */
  actor: z.enum(AUDIT_ACTORS).optional(),
  /** Inclusive. */
  from: instant.optional(),
  /** Exclusive. */
  to: instant.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** The next_cursor of the previous page. */
  cursor: z
    .string()
    .regex(/^[1-9]\d{0,15}$/, 'must be the next_cursor of a previous page')
    .optional(),
});

/** An audit row as the admin API shows it (the owner's history shows it too, less the owner's own ids). */
export const eventView = z.object({
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

/** One page of the audit log, newest first, and the cursor of the next page when there is one. */
export async function auditPage(store: Store, query: z.output<typeof auditQuery>) {
  const { agent_id, email, client_id, request_id, event, actor, from, to, limit, cursor } = query;
  // One more than asked tells whether another page follows.
  const rows = await store.auditLog.list({
    agentId: agent_id,
    email,
    clientId: client_id,
    requestId: request_id,
    event,
    actor,
    from,
    to,
    beforeId: cursor === undefined ? undefined : Number(cursor),
    limit: limit + 1,
  });
  const events = rows.slice(0, limit);
  return { events, next_cursor: rows.length > limit ? String(events[events.length - 1].id) : null };
}

/** GET /admin/audit: the audit log, newest first, filtered and paged by keyset (id descending). */
export default async function adminAuditRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  app.get(
    '/audit',
    {
      schema: {
        querystring: auditQuery,
        response: { 200: z.object({ events: z.array(eventView), next_cursor: z.string().nullable() }) },
      },
    },
    async (request) => auditPage(app.services.store, request.query),
  );
}
