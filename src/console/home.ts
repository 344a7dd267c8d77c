import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { renderConsole } from './render.js';
import type { Registration } from './resource.js';

export const listFilter = z.object({
  q: z.string().trim().max(200).catch(''),
  status: z.enum(['all', 'active', 'inactive']).catch('all'),
});
type ListFilter = z.output<typeof listFilter>;

/** Rows whose name, id (or email) contain the search text, in the chosen status. */
function filterRows<T extends { active: boolean }>(rows: T[], filter: ListFilter, text: (row: T) => (string | null)[]): T[] {
  const q = filter.q.toLowerCase();
  return rows.filter(
    (row) =>
      (filter.status === 'all' || row.active === (filter.status === 'active')) && (!q || text(row).some((value) => value?.toLowerCase().includes(q))),
  );
}

/**
 * The websites and agents, with the last sign-in of each, for the home page and the two list pages;
 * a list page reads only its own kind (the other comes back empty).
 */
export async function listings(app: FastifyInstance, filter: ListFilter, kinds: ('clients' | 'agents')[] = ['clients', 'agents']) {
  const { clients, agents, grantRecords } = app.services.store;
  const [allClients, allAgents, last] = await Promise.all([
    kinds.includes('clients') ? clients.list() : [],
    kinds.includes('agents') ? agents.list() : [],
    grantRecords.lastSignIns(),
  ]);
  return {
    filter,
    clients: filterRows(allClients, filter, (c) => [c.name, c.client_id, ...c.redirect_uris]).map((c) => ({
      ...c,
      lastSignIn: last.clients.get(c.client_id),
    })),
    agents: filterRows(allAgents, filter, (a) => [a.name, a.agent_id, a.email]).map((a) => ({ ...a, lastSignIn: last.agents.get(a.agent_id) })),
    totals: { clients: allClients.length, agents: allAgents.length },
  };
}

/** The Websites or the Agents page: the list, and the registration form (as refused, when it was). */
export function listPage(app: FastifyInstance, view: 'websites' | 'agents', title: string, kind: 'clients' | 'agents') {
  return async (request: FastifyRequest, reply: FastifyReply, registration?: Registration) =>
    renderConsole(request, reply, view, { title, ...(await listings(app, listFilter.parse(request.query ?? {}), [kind])), registration });
}

/** Home: every website and agent at a glance, searchable. */
export default async function homePage(app: FastifyInstance) {
  app.get('/', { config: { html: true } }, async (request, reply) =>
    renderConsole(request, reply, 'home', { title: 'Overview', ...(await listings(app, listFilter.parse(request.query ?? {}))) }),
  );
}
