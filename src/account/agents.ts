import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createAgent, deleteAgent, listAgents, ownAgent, revokeAll, revokeWebsite, rotateAgentSecret, updateAgent } from '../owners/agents.js';
import { agentWeakening } from '../owners/protection.js';
import { BODY_REFUSED, errorResponses, noBody, UNAVAILABLE } from '../routes/responses.js';
import { atLeastOne, name, rotateBody } from '../shapes/bodies.js';
import { recordId } from '../shapes/ids.js';
import { APPROVAL_POLICIES } from '../store/owners.js';
import { FRESH_REQUIRED } from './fresh.js';
import { signedInOwner } from './guards.js';
import { OWNER_API_ERRORS } from './responses.js';

const id = recordId();
const agentParams = z.object({ id });
const policy = z.enum(APPROVAL_POLICIES).nullable().describe('null: the owner’s approval_policy');

const websiteView = z.object({
  client_id: z.string(),
  client_name: z.string(),
  redirect_origin: z.string(),
  scope: z.string(),
  first_sign_in_at: z.date(),
  last_sign_in_at: z.date(),
  last_model: z.string(),
});
const lastSignInView = z
  .object({ at: z.date(), client_id: z.string(), client_name: z.string(), redirect_origin: z.string(), model: z.string() })
  .nullable()
  .describe('the agent’s newest sign-in anywhere, live or revoked since; null before its first');
const agentView = z.object({
  agent_id: z.string(),
  name: z.string().nullable(),
  active: z.boolean(),
  created_at: z.date(),
  approval_policy: policy,
  client_id: z.string().nullable().describe('the client an agent of kind "client" was made for; null otherwise'),
  kind: z.enum(['agent', 'client']).describe('"client": made when its owner signed in on the authorization page of a person’s client'),
  last_sign_in: lastSignInView,
  websites: z.array(websiteView).describe('the websites the agent holds a live grant with'),
});
const withSecret = agentView.extend({ agent_secret: z.string().describe('shown once, here') });
const agentPatch = atLeastOne(
  z.strictObject({ name: name.nullable().optional(), active: z.boolean().optional(), approval_policy: policy.optional() }),
);

const errors = (more: Record<number, string> = {}) => ({
  ...OWNER_API_ERRORS,
  ...errorResponses({ ...more, 503: UNAVAILABLE }),
});
const NOT_FOUND = { 404: 'not_found: no such agent of this owner (another owner’s agent is not found either)' };

/** The owner's agents: list, create, change, rotate, delete; revoke one website, or everything (the kill switch). */
export default async function agentRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const services = app.services;
  const withWebsites = async <A extends { agent_id: string }>(userId: string, agent: A) => {
    const { websites, last_sign_in } = await ownAgent(services, userId, agent.agent_id);
    return { ...agent, last_sign_in, websites };
  };

  app.get(
    '/account/api/agents',
    {
      schema: {
        tags: ['owner'],
        description: 'The owner’s agents, each with the websites it holds a live grant with.',
        response: { 200: z.object({ agents: z.array(agentView) }), ...errors() },
      },
    },
    async (request) => ({ agents: await listAgents(services, signedInOwner(request).user_id) }),
  );

  app.post(
    '/account/api/agents',
    {
      schema: {
        tags: ['owner'],
        description: 'Creates an agent of the owner; its secret is shown once, in this answer. 403 forbidden with OWNER_AGENT_CREATION=false.',
        body: z.strictObject({ name: name.nullish() }),
        response: {
          201: withSecret,
          ...errors({
            400: 'invalid_request: a field is unknown or not valid',
            403: 'forbidden: owners may not create agents here, or another origin',
            ...BODY_REFUSED,
          }),
        },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await createAgent(services, signedInOwner(request).user_id, request.body.name ?? null, { log: request.log })),
  );

  app.patch(
    '/account/api/agents/:id',
    {
      schema: {
        tags: ['owner'],
        description:
          'Renames, deactivates or reactivates an agent, or sets its approval policy (null: the owner’s). Lowering its effective ' +
          'policy needs a fresh session, and is mailed to the owner.',
        params: agentParams,
        body: agentPatch,
        response: {
          200: agentView,
          ...errors({ 400: 'invalid_request: a field is unknown or not valid', ...NOT_FOUND, ...BODY_REFUSED }),
          ...FRESH_REQUIRED,
        },
      },
      config: {
        requireFresh: (request) => agentWeakening(app.services, signedInOwner(request).user_id, (request.params as { id: string }).id, request.body),
      },
    },
    async (request) => {
      const { user_id: userId } = signedInOwner(request);
      return withWebsites(userId, await updateAgent(services, userId, request.params.id, request.body, { log: request.log }));
    },
  );

  app.post(
    '/account/api/agents/:id/secret',
    {
      schema: {
        tags: ['owner'],
        description:
          'A new secret for the agent, shown once; the old one stops working at once. Unless revoke_grants is false, ' +
          'every grant of the agent and every sign-in in flight end too, everywhere at once (its tokens stop working). ' +
          'The body may be left out: no body, or {}, revokes.',
        params: agentParams,
        body: rotateBody,
        response: { 200: withSecret, ...errors({ 400: 'invalid_request: a field is unknown or not valid', ...NOT_FOUND, ...BODY_REFUSED }) },
      },
    },
    async (request) => {
      const { user_id: userId } = signedInOwner(request);
      const revokeGrants = request.body?.revoke_grants ?? true;
      return withWebsites(userId, await rotateAgentSecret(services, userId, request.params.id, revokeGrants, { log: request.log }));
    },
  );

  app.delete(
    '/account/api/agents/:id',
    {
      schema: {
        tags: ['owner'],
        description: 'Deletes the agent, with its grants and sign-ins.',
        params: agentParams,
        response: { 204: noBody('Deleted'), ...errors(NOT_FOUND) },
      },
    },
    async (request, reply) => {
      await deleteAgent(services, signedInOwner(request).user_id, request.params.id, { log: request.log });
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/account/api/agents/:id/websites/:client_id',
    {
      schema: {
        tags: ['owner'],
        description: 'Ends the agent’s grants with that website, and its sign-ins there in flight, everywhere at once.',
        params: z.object({ id, client_id: id }),
        response: { 204: noBody('Revoked (also when there was nothing to revoke)'), ...errors(NOT_FOUND) },
      },
    },
    async (request, reply) => {
      await revokeWebsite(services, signedInOwner(request).user_id, request.params.id, request.params.client_id, { log: request.log });
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/account/api/revoke-all',
    {
      schema: {
        tags: ['owner'],
        description: 'The owner’s kill switch: every grant and every sign-in in flight of all their agents ends, everywhere at once.',
        response: { 204: noBody('Revoked'), ...errors() },
      },
    },
    async (request, reply) => {
      await revokeAll(services, signedInOwner(request).user_id, { log: request.log });
      return reply.code(204).send(null);
    },
  );
}
