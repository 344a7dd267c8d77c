import type { FastifyInstance } from 'fastify';
import { auditPage, auditQuery } from '../admin/audit-log.js';
import { AUDIT_ACTORS, AUDIT_EVENTS } from '../store/audit-log.js';
import { firstProblem, renderConsole } from './render.js';
import { websiteDirectory } from './resource.js';

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
        actors: AUDIT_ACTORS,
        filters,
        rows: [],
        message: firstProblem(parsed.error),
      });
    }
    const [{ events, next_cursor: nextCursor }, websites] = await Promise.all([
      auditPage(app.services.store, parsed.data),
      websiteDirectory(app.services.store),
    ]);
    // Websites by name and host; a deleted one is left with its id.
    const rows = events.map((e) => ({ ...e, website: e.client_id ? websites.get(e.client_id) : undefined }));
    const next = nextCursor ? `/console/audit?${new URLSearchParams({ ...given, cursor: nextCursor })}` : undefined;
    return renderConsole(request, reply, 'audit', {
      title: 'Audit log',
      events: AUDIT_EVENTS,
      actors: AUDIT_ACTORS,
      filters,
      rows,
      next,
      paged: Boolean(given.cursor),
    });
  });
}
