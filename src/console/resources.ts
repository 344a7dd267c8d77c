import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { resourceCreate, resourceIdentifier, resourceRecords } from '../admin/resources.js';
import { OAuthError } from '../errors.js';
import { firstProblem, redirectWith, renderConsole } from './render.js';
import { form, type Registration } from './resource.js';

const scopesOf = (value: string | undefined) => (value ?? '').split(/[\s,]+/).filter(Boolean);

/** Resources (MCP servers and other APIs): list, register, remove, through the admin API's code. */
export default async function resourcePages(app: FastifyInstance) {
  const records = resourceRecords(app.services);
  const page = { config: { html: true } };

  const list = async (request: FastifyRequest, reply: FastifyReply, registration?: Registration) =>
    renderConsole(request, reply, 'resources', {
      title: 'Resources',
      resources: await records.list(),
      websites: await app.services.store.clients.list(),
      registration,
    });

  app.get('/resources', page, (request, reply) => list(request, reply));

  app.post('/resources', page, async (request, reply) => {
    const body = form(request);
    const parsed = resourceCreate.safeParse({
      resource: body.resource,
      name: body.name,
      ...(scopesOf(body.scopes).length > 0 && { scopes: scopesOf(body.scopes) }),
      ...(body.client_id && { client_id: body.client_id }),
    });
    // Refused: the same page again, with the form as it was typed.
    if (!parsed.success) return list(request, reply.code(400), { problem: firstProblem(parsed.error), values: body });
    try {
      const created = await records.create(parsed.data);
      return redirectWith(request, reply, '/console/resources', { notice: `Resource “${created.name}” registered.` });
    } catch (err) {
      if (!(err instanceof OAuthError) || err.statusCode >= 500) throw err;
      return list(request, reply.code(err.statusCode), { problem: err.description, values: body });
    }
  });

  app.post('/resources/remove', page, async (request, reply) => {
    const resource = resourceIdentifier.safeParse(form(request).resource);
    const removed = resource.success && (await records.remove(resource.data));
    return redirectWith(request, reply, '/console/resources', {
      notice: removed ? `Resource ${resource.data} removed; its grants have ended.` : 'No such resource.',
    });
  });
}
