import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { auditEventView, auditPageQuery } from '../shapes/audit.js';
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
  ...auditPageQuery.shape,
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
        response: { 200: z.object({ events: z.array(auditEventView), next_cursor: z.string().nullable() }) },
      },
    },
    async (request) => auditPage(app.services.store, request.query),
  );
}
