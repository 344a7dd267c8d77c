import type { FastifyInstance } from 'fastify';
import { auditPage, auditQuery } from '../admin/audit-log.js';
import { AUDIT_EVENTS } from '../store/audit-log.js';
import { firstProblem, renderConsole } from './render.js';

// The filter fields of the form: those of GET /admin/audit and `agent-auth audit`, but the page's cursor.
const FILTERS = Object.keys(auditQuery.shape).filter((name) => name !== 'cursor');

/** The audit log with the filters of `agent-auth audit`, newest first, a page at a time. */
export default async function auditPages(app: FastifyInstance) {
  app.get('/audit', { config: { html: true } }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    // Empty form fields mean "no filter".
    const given = Object.fromEntries(
      [...FILTERS, 'cursor'].map((name) => [name, typeof query[name] === 'string' ? (query[name] as string).trim() : '']).filter(([, v]) => v),
    ) as Record<string, string>;
    const parsed = auditQuery.safeParse(given);
    const filters = Object.fromEntries(FILTERS.map((name) => [name, given[name] ?? '']));
    if (!parsed.success) {
      return renderConsole(request, reply.code(400), 'audit', {
        title: 'Audit log',
        events: AUDIT_EVENTS,
        filters,
        rows: [],
        message: firstProblem(parsed.error),
      });
    }
    const { events: rows, next_cursor: nextCursor } = await auditPage(app.services.store, parsed.data);
    const next = nextCursor ? `/console/audit?${new URLSearchParams({ ...given, cursor: nextCursor })}` : undefined;
    return renderConsole(request, reply, 'audit', { title: 'Audit log', events: AUDIT_EVENTS, filters, rows, next, paged: Boolean(given.cursor) });
  });
}
