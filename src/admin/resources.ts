import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Conflict, InvalidRequest, NotFound } from '../errors.js';
import { canonicalResource } from '../oauth/resource-indicator.js';
import { scopeTokenProblem, SUPPORTED_SCOPES } from '../oauth/scopes.js';
import { SIGNING_ALGS } from '../protocol/signing.js';
import type { Services } from '../services.js';
import { atLeastOne, name } from '../shapes/bodies.js';
import { recordId } from '../shapes/ids.js';
import type { Resource } from '../store/resources.js';

/** What a resource accepts when its registration names no scopes: the scopes of a website's sign-in. */
export const DEFAULT_RESOURCE_SCOPES = [...SUPPORTED_SCOPES];

/** A resource identifier as given, checked and made canonical (no trailing slash). */
export const resourceIdentifier = z
  .string()
  .max(2000)
  .transform((value, ctx) => {
    const canonical = canonicalResource(value);
    if ('resource' in canonical) return canonical.resource;
    ctx.addIssue({ code: 'custom', message: canonical.problem });
    return z.NEVER;
  });

const scopes = z
  .array(z.string().max(200))
  .min(1)
  .max(50)
  .transform((values, ctx) => {
    const problem = values.map(scopeTokenProblem).find(Boolean);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
    return [...new Set(values)];
  });
const clientId = recordId();
const signingAlg = z.enum(SIGNING_ALGS);

/** A resource's registration, as the admin API and the console take it. */
export const resourceCreate = z.strictObject({
  resource: resourceIdentifier,
  name,
  scopes: scopes.optional().describe('the scopes that may be asked for it; default: openid email profile'),
  client_id: clientId.optional().describe('the website it belongs to: its credentials may introspect the tokens issued for it'),
  signing_alg: signingAlg.optional().describe('the algorithm of its access tokens; default RS256'),
});
export const resourcePatch = atLeastOne(
  z.strictObject({
    name: name.optional(),
    scopes: scopes.optional(),
    client_id: clientId.nullable().optional(),
    signing_alg: signingAlg.optional(),
  }),
);

export const resourceView = z.object({
  resource: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  client_id: z.string().nullable(),
  signing_alg: signingAlg,
  created_at: z.date(),
});

const params = z.object({ resource: resourceIdentifier });

/** The resources as an operator changes them: the website named must exist, and each change is audited. */
export function resourceRecords({ store }: Pick<Services, 'store'>) {
  const checkClient = async (id: string | null | undefined) => {
    if (id && !(await store.clients.get(id))) throw new InvalidRequest(`client_id: no website with id ${id}`);
  };
  const audit = (event: 'resource_created' | 'resource_updated' | 'resource_deleted', resource: Resource | string, detail = {}) =>
    store.auditLog.recordAction({
      actor: 'admin',
      event,
      clientId: typeof resource === 'string' ? null : resource.client_id,
      detail: { resource: typeof resource === 'string' ? resource : resource.resource, ...detail },
    });
  return {
    list: () => store.resources.list(),
    get: (resource: string) => store.resources.get(resource),
    async create(input: z.output<typeof resourceCreate>): Promise<Resource> {
      await checkClient(input.client_id);
      const created = await store.resources.create({ ...input, scopes: input.scopes ?? DEFAULT_RESOURCE_SCOPES });
      if (!created) throw new Conflict('resource_exists', `the resource ${input.resource} is registered already`);
      await audit('resource_created', created);
      return created;
    },
    async update(resource: string, patch: z.output<typeof resourcePatch>): Promise<Resource | undefined> {
      await checkClient(patch.client_id);
      const updated = await store.resources.update(resource, patch);
      if (updated) await audit('resource_updated', updated, { fields: Object.keys(patch) });
      return updated;
    },
    async remove(resource: string): Promise<boolean> {
      const removed = await store.resources.remove(resource);
      if (removed) await audit('resource_deleted', resource);
      return removed;
    },
  };
}

const notFound = (resource: string) => new NotFound(`no resource ${resource}`);

/**
 * /admin/resources: the MCP servers and APIs that take our JWT access tokens. A resource is named
 * in the path by its identifier, URL-encoded; a trailing slash names the same one.
 */
export default async function adminResourceRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const records = resourceRecords(app.services);
  const found = (resource: string, row: Resource | undefined) => {
    if (!row) throw notFound(resource);
    return row;
  };

  app.post('/resources', { schema: { body: resourceCreate, response: { 201: resourceView } } }, async (request, reply) =>
    reply.code(201).send(await records.create(request.body)),
  );
  app.get('/resources', { schema: { response: { 200: z.object({ resources: z.array(resourceView) }) } } }, async () => ({
    resources: await records.list(),
  }));
  app.get('/resources/:resource', { schema: { params, response: { 200: resourceView } } }, async (request) =>
    found(request.params.resource, await records.get(request.params.resource)),
  );
  app.patch('/resources/:resource', { schema: { params, body: resourcePatch, response: { 200: resourceView } } }, async (request) =>
    found(request.params.resource, await records.update(request.params.resource, request.body)),
  );
  app.delete('/resources/:resource', { schema: { params } }, async (request, reply) => {
    if (!(await records.remove(request.params.resource))) throw notFound(request.params.resource);
    return reply.code(204).send();
  });
}
