import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { addAgentKey, addedKeyView, deleteAgentKey, KEY_KINDS, keyView, kidSchema, listAgentKeys, newKeyBody } from '../agent-keys/registration.js';
import { assertOwnAgent } from '../owners/agents.js';
import { BODY_REFUSED, errorResponses, noBody, UNAVAILABLE } from '../routes/responses.js';
import { idParams } from '../shapes/ids.js';
import { FRESH_REQUIRED } from './fresh.js';
import { signedInOwner } from './guards.js';
import { OWNER_API_ERRORS } from './responses.js';

const agentParams = idParams;
const NOT_FOUND = 'not_found: no such agent of this owner (another owner’s agent is not found either)';
const errors = (more: Record<number, string>) => ({ ...OWNER_API_ERRORS, ...errorResponses({ ...more, 503: UNAVAILABLE }) });

/**
 * The owner's keys for their agents, assertion and request-signing keys alike (docs/protocol.md,
 * "Owners"): the admin API's rules and answers (src/agent-keys/registration.ts), for the owner's own
 * agents only, in the audit log as the owner's.
 */
export default async function agentKeyRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const services = app.services;
  /** The owner of the request, as the actor, once the agent is found to be theirs. */
  const owning = async (request: FastifyRequest, agentId: string) => {
    const { user_id: userId } = signedInOwner(request);
    await assertOwnAgent(services, userId, agentId);
    return { actor: 'owner' as const, userId };
  };

  // Every kind of key has the same three routes, registered here once.
  for (const kind of KEY_KINDS) {
    app.post(
      `/account/api/agents/:id/${kind.path}`,
      {
        schema: {
          tags: ['owner'],
          description: `Registers a ${kind.what}.`,
          params: agentParams,
          body: newKeyBody,
          response: {
            201: addedKeyView,
            ...errors({
              400: `invalid_request: not a ${kind.curves.join(' or ')} public JWK (a private member is refused), or the agent holds enough keys`,
              404: NOT_FOUND,
              409: 'key_exists: a key with this kid is registered already',
              ...BODY_REFUSED,
            }),
            ...FRESH_REQUIRED,
          },
        },
        // A key speaks as the agent without its secret: a stolen session must not add one.
        config: { requireFresh: `a ${kind.what} was added to one of your agents` },
      },
      async (request, reply) => {
        const added = await addAgentKey(services, await owning(request, request.params.id), request.params.id, request.body.jwk, kind);
        request.protectionChange = `a ${kind.what} (${added.kid}) was added to your agent ${request.params.id}`;
        return reply.code(201).send(added);
      },
    );

    app.get(
      `/account/api/agents/:id/${kind.path}`,
      {
        schema: {
          tags: ['owner'],
          description: `The agent’s keys of this kind: each ${kind.what}.`,
          params: agentParams,
          response: { 200: z.object({ keys: z.array(keyView) }), ...errors({ 404: NOT_FOUND }) },
        },
      },
      async (request) => {
        await owning(request, request.params.id);
        return { keys: await listAgentKeys(services, request.params.id, kind) };
      },
    );

    app.delete(
      `/account/api/agents/:id/${kind.path}/:kid`,
      {
        schema: {
          tags: ['owner'],
          description: 'Deletes a key: what it signs is refused from now on, on every instance.',
          params: agentParams.extend({ kid: kidSchema }),
          response: { 204: noBody('Deleted'), ...errors({ 404: `${NOT_FOUND}; or no key with that kid` }) },
        },
      },
      async (request, reply) => {
        await deleteAgentKey(services, await owning(request, request.params.id), request.params.id, request.params.kid, kind);
        return reply.code(204).send(null);
      },
    );
  }
}
