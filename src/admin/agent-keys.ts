import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { addAgentKey, addedKeyView, deleteAgentKey, KEY_KINDS, keyView, kidSchema, listAgentKeys, newKeyBody } from '../agent-keys/registration.js';
import { idParams } from '../shapes/ids.js';

const ADMIN = { actor: 'admin' } as const;

/**
 * An agent's public keys of each kind (docs/protocol.md, "Agent assertions", "Signed agent requests"):
 * add, list, delete, in the audit log as the admin's.
 */
export default async function adminAgentKeyRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = app;

  for (const kind of KEY_KINDS) {
    app.post(
      `/agents/:id/${kind.path}`,
      { schema: { params: idParams, body: newKeyBody, response: { 201: addedKeyView } } },
      async (request, reply) => reply.code(201).send(await addAgentKey(services, ADMIN, request.params.id, request.body.jwk, kind)),
    );
    app.get(
      `/agents/:id/${kind.path}`,
      { schema: { params: idParams, response: { 200: z.object({ keys: z.array(keyView) }) } } },
      async (request) => ({
        keys: await listAgentKeys(services, request.params.id, kind),
      }),
    );
    app.delete(`/agents/:id/${kind.path}/:kid`, { schema: { params: idParams.extend({ kid: kidSchema }) } }, async (request, reply) => {
      await deleteAgentKey(services, ADMIN, request.params.id, request.params.kid, kind);
      return reply.code(204).send();
    });
  }
}
