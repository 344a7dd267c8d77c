import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { NotFound } from '../errors.js';
import type { EventContext } from '../events/emitter.js';
import type { Services } from '../services.js';
import { rotateBody } from '../shapes/bodies.js';
import { idParams } from '../shapes/ids.js';

// Rows as the store returns them; the response schemas pick the fields that go out.
type Row = Record<string, any>;

interface ResourceStore<Create, Patch> {
  create(input: Create): Promise<Row>;
  list(): Promise<Row[]>;
  get(id: string): Promise<Row | undefined>;
  update(id: string, patch: Patch): Promise<Row | undefined>;
  /** `revokeGrants`: also end every grant and sign-in in flight of the record (src/tokens/revocation.ts). */
  rotateSecret(id: string, revokeGrants: boolean): Promise<Row | undefined>;
  remove(id: string): Promise<boolean>;
}

interface ResourceOptions<Create extends z.ZodType, Patch extends z.ZodType> {
  /** Collection name, the path segment and the key of the list response: "clients". */
  plural: string;
  singular: 'client' | 'agent';
  /** Field that carries the clear secret, returned only by create and rotate. */
  secretField: string;
  view: z.ZodObject;
  create: Create;
  patch: Patch;
  /** The records, as one request changes them (`context`: the events it causes carry its log). */
  records(services: Services, context: EventContext): ResourceStore<z.output<Create>, z.output<Patch>>;
  /** Checks a body against what the process knows (the configuration), beyond its schema. */
  check?(services: Services, body: z.output<Create> | z.output<Patch>): Promise<void>;
  /** A record as the API shows it, where that depends on the configuration (a default filled in). */
  present?(services: Services, row: Row): Row;
}

type AdminAction = 'created' | 'updated' | 'secret_rotated' | 'deleted';

/**
 * An operator's change to a website or an agent, in the audit log as the admin's (`actor: admin`),
 * named by the record's id: the admin API and the console record theirs alike.
 */
export function recordAdminAction(
  { store }: Pick<Services, 'store'>,
  singular: 'client' | 'agent',
  action: AdminAction,
  id: string,
  detail?: Record<string, unknown>,
) {
  return store.auditLog.recordAction({ actor: 'admin', event: `${singular}_${action}`, [`${singular}Id`]: id, detail });
}

/**
 * The admin routes of one registered resource (clients, agents): create, list, get, patch,
 * rotate secret, delete. Both resources behave the same way, so they share this one plugin.
 */
export function adminResource<Create extends z.ZodType, Patch extends z.ZodType>(options: ResourceOptions<Create, Patch>) {
  const { plural, singular, view } = options;
  const withSecret = view.extend({ [options.secretField]: z.string() });
  const notFound = (id: string) => new NotFound(`no ${singular} with id ${id}`);
  const found = (id: string, row: Row | undefined): Row => {
    if (!row) throw notFound(id);
    return row;
  };

  return async function adminResourceRoutes(fastify: FastifyInstance) {
    const app = fastify.withTypeProvider<ZodTypeProvider>();
    const records = (request: FastifyRequest) => options.records(app.services, { log: request.log });
    const shown = (row: Row): Row => options.present?.(app.services, row) ?? row;
    const checked = async <T extends z.output<Create> | z.output<Patch>>(body: T) => {
      await options.check?.(app.services, body);
      return body;
    };
    // Every change an operator makes is in the audit log.
    const audit = (action: AdminAction, id: string, detail?: Record<string, unknown>) =>
      recordAdminAction(app.services, singular, action, id, detail);
    const path = `/${plural}`;
    const byId = `${path}/:id`;

    app.post(path, { schema: { body: options.create, response: { 201: withSecret } } }, async (request, reply) => {
      const created = await records(request).create(await checked(request.body as z.output<Create>));
      await audit('created', created[`${singular}_id`]);
      return reply.code(201).send(shown(created));
    });
    app.get(path, { schema: { response: { 200: z.object({ [plural]: z.array(view) }) } } }, async (request) => ({
      [plural]: (await records(request).list()).map(shown),
    }));
    app.get(byId, { schema: { params: idParams, response: { 200: view } } }, async (request) =>
      shown(found(request.params.id, await records(request).get(request.params.id))),
    );
    app.patch(byId, { schema: { params: idParams, body: options.patch, response: { 200: view } } }, async (request) => {
      const updated = found(request.params.id, await records(request).update(request.params.id, await checked(request.body as z.output<Patch>)));
      await audit('updated', request.params.id, { fields: Object.keys(request.body as object) });
      return shown(updated);
    });
    app.post(`${byId}/secret`, { schema: { params: idParams, body: rotateBody, response: { 200: withSecret } } }, async (request) => {
      const revokeGrants = request.body?.revoke_grants ?? true;
      const rotated = found(request.params.id, await records(request).rotateSecret(request.params.id, revokeGrants));
      await audit('secret_rotated', request.params.id, { revoke_grants: revokeGrants });
      return shown(rotated);
    });
    app.delete(byId, { schema: { params: idParams } }, async (request, reply) => {
      if (!(await records(request).remove(request.params.id))) throw notFound(request.params.id);
      await audit('deleted', request.params.id);
      return reply.code(204).send();
    });
  };
}
