import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { redirectOrigin } from '../oauth/redirect.js';
import { listAgents } from '../owners/agents.js';
import { errorResponses, UNAVAILABLE } from '../routes/responses.js';
import { auditEventView, auditPageQuery } from '../shapes/audit.js';
import { recordId } from '../shapes/ids.js';
import type { Store } from '../store/index.js';
import { signedInOwner } from './guards.js';
import { historyInWords } from './history-words.js';
import { renderAccount } from './render.js';
import { OWNER_API_ERRORS } from './responses.js';

const historyQuery = auditPageQuery.extend({ agent_id: recordId().optional().describe('only this agent’s rows') });
type HistoryQuery = z.output<typeof historyQuery>;

const historyEventView = auditEventView.omit({ user_id: true, email: true }).extend({
  agent_name: z.string().nullable(),
  client_name: z.string().nullable().describe('null when the website is gone'),
  redirect_origin: z.string().nullable(),
});

/** One page of the owner's own history, newest first, and the cursor of the next page when there is one. */
async function historyPage(store: Pick<Store, 'auditLog'>, userId: string, query: HistoryQuery) {
  const { agent_id: agentId, limit, cursor } = query;
  // One more than asked tells whether another page follows.
  const rows = await store.auditLog.ofOwner(userId, { agentId, beforeId: cursor === undefined ? undefined : Number(cursor), limit: limit + 1 });
  const events = rows
    .slice(0, limit)
    .map(({ redirect_uri, ...e }) => ({ ...e, redirect_origin: redirect_uri ? redirectOrigin(redirect_uri) : null }));
  return { events, next_cursor: rows.length > limit ? String(events[events.length - 1].id) : null };
}

/** GET /account/history: the owner's history as a page, filtered by agent, a page at a time. */
export default async function historyPages(app: FastifyInstance) {
  const services = app.services;
  app.get('/account/history', { schema: { hide: true }, config: { html: true } }, async (request, reply) => {
    if (!request.owner) return reply.redirect('/account', 303);
    const raw = request.query as Record<string, unknown>;
    // An empty field is no filter; a malformed one (a cursor typed by hand) starts over.
    const parsed = historyQuery.safeParse(Object.fromEntries(Object.entries(raw).filter(([, v]) => typeof v === 'string' && v !== '')));
    const query = parsed.success ? parsed.data : historyQuery.parse({});
    const [agents, page] = await Promise.all([
      listAgents(services, request.owner.user_id),
      historyPage(services.store, request.owner.user_id, query),
    ]);
    const filter: Record<string, string> = query.agent_id ? { agent_id: query.agent_id } : {};
    return renderAccount(request, reply, 'history', {
      title: 'History',
      nav: 'history',
      agents,
      own: new Set(agents.map((a) => a.agent_id)),
      agentId: query.agent_id ?? '',
      events: page.events,
      describe: historyInWords,
      first: `/account/history?${new URLSearchParams(filter)}`,
      paged: query.cursor !== undefined,
      next: page.next_cursor ? `/account/history?${new URLSearchParams({ ...filter, cursor: page.next_cursor })}` : undefined,
    });
  });
}

/** GET /account/api/history: the same rows as JSON, for scripts. */
export async function historyApi(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/account/api/history',
    {
      schema: {
        tags: ['owner'],
        description:
          'The owner’s history, newest first: the audit rows of their agents’ sign-ins and of the actions on their records, never another owner’s.',
        querystring: historyQuery,
        response: {
          200: z.object({ events: z.array(historyEventView), next_cursor: z.string().nullable() }),
          ...OWNER_API_ERRORS,
          ...errorResponses({ 400: 'invalid_request: a parameter is not valid', 503: UNAVAILABLE }),
        },
      },
    },
    async (request) => historyPage(app.services.store, signedInOwner(request).user_id, request.query),
  );
}
